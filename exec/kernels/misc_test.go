package kernels

import (
	"math"
	"slices"
	"testing"
)

func TestEmbedding(t *testing.T) {
	const vocab, hidden = 5, 3
	w := make([]float32, vocab*hidden)
	for i := range w {
		w[i] = float32(i) // row r is (3r, 3r+1, 3r+2)
	}
	ids := []int32{4, 0, 2, 4}
	dst := make([]float32, len(ids)*hidden)
	Embedding(dst, ids, w, vocab, hidden)
	want := []float32{12, 13, 14, 0, 1, 2, 6, 7, 8, 12, 13, 14}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("Embedding = %v, want %v", dst, want)
		}
	}

	// Vocabulary-parallel: two shards [0,3) and [3,5) sum to the full lookup.
	lo := make([]float32, len(dst))
	hi := make([]float32, len(dst))
	for i := range lo {
		lo[i], hi[i] = 99, 99 // must be overwritten, zeros included
	}
	EmbeddingRange(lo, ids, w[:3*hidden], 0, 3, hidden)
	EmbeddingRange(hi, ids, w[3*hidden:], 3, 5, hidden)
	for i := range want {
		if lo[i]+hi[i] != want[i] || (lo[i] != 0 && hi[i] != 0) {
			t.Fatalf("shards %v + %v, want %v with one zero per row", lo, hi, want)
		}
	}

	// Backward: a scatter-add, so id 4 (twice) gets the sum of two rows; it is linear in w, so the
	// finite-difference check is exact up to rounding.
	rng := NewRand(12)
	r := randSlice(rng, len(dst), 1)
	dw := make([]float32, len(w))
	EmbeddingBackward(dw, r, ids, vocab, hidden)
	gradCheck(t, "Embedding dw", w, dw, func() float64 {
		Embedding(dst, ids, w, vocab, hidden)
		return dot64(dst, r)
	})
	dwLo := make([]float32, 3*hidden)
	dwHi := make([]float32, 2*hidden)
	EmbeddingRangeBackward(dwLo, r, ids, 0, 3, hidden)
	EmbeddingRangeBackward(dwHi, r, ids, 3, 5, hidden)
	for i, g := range append(dwLo, dwHi...) {
		if g != dw[i] {
			t.Fatalf("sharded backward differs at %d: %g vs %g", i, g, dw[i])
		}
	}

	mustPanic(t, "id out of range", "ids[1] = 5 outside [0, 5)", func() { Embedding(dst[:6], []int32{0, 5}, w, vocab, hidden) })
	mustPanic(t, "negative id", "negative", func() { EmbeddingRange(dst[:3], []int32{-1}, w, 0, vocab, hidden) })
}

func TestCrossEntropyHandValues(t *testing.T) {
	cases := []struct {
		name    string
		logits  []float32
		targets []int32
		vocab   int
		want    float64
	}{
		// Uniform logits: every class has probability 1/V, so the loss is ln V = ln 8.
		{"uniform", []float32{3, 3, 3, 3, 3, 3, 3, 3}, []int32{5}, 8, math.Log(8)},
		// logits (0, ln 3): p(1) = 3/4, loss = ln(4/3).
		{"two classes", []float32{0, float32(math.Log(3))}, []int32{1}, 2, math.Log(4.0 / 3)},
		// Mean over rows of ln 2 (equal logits) and ln(4/3).
		{"mean", []float32{7, 7, 0, float32(math.Log(3))}, []int32{0, 1}, 2, (math.Log(2) + math.Log(4.0/3)) / 2},
		// Large logits must not overflow: loss = lse − x_t = 1000 + ln(1 + e^-1000) − 0 = 1000.
		{"large wrong", []float32{1000, 0}, []int32{1}, 2, 1000},
		{"large right", []float32{1000, 0}, []int32{0}, 2, 0},
	}
	for _, c := range cases {
		n := len(c.targets)
		d := make([]float32, len(c.logits))
		got := CrossEntropy(d, c.logits, c.targets, n, c.vocab)
		if !closeTo(float64(got), c.want, 1e-6, 1e-7) {
			t.Errorf("%s: loss = %.8g, want %.8g", c.name, got, c.want)
		}
		// Each row of dlogits sums to 0 (softmax sums to 1, minus the one-hot).
		for i := range n {
			var s float64
			for _, g := range d[i*c.vocab : (i+1)*c.vocab] {
				if math.IsNaN(float64(g)) {
					t.Fatalf("%s: NaN gradient", c.name)
				}
				s += float64(g)
			}
			if math.Abs(s) > 1e-6 {
				t.Errorf("%s: row %d of dlogits sums to %g", c.name, i, s)
			}
		}
		if nilD := CrossEntropy(nil, c.logits, c.targets, n, c.vocab); nilD != got {
			t.Errorf("%s: loss without gradient %g != %g", c.name, nilD, got)
		}
	}
}

func TestLossGradients(t *testing.T) {
	const n, vocab = 3, 5
	rng := NewRand(13)
	logits := randSlice(rng, n*vocab, 2)
	targets := []int32{4, 0, 2}
	d := make([]float32, n*vocab)
	CrossEntropy(d, logits, targets, n, vocab)
	gradCheck(t, "CrossEntropy", logits, d, func() float64 {
		return float64(CrossEntropy(nil, logits, targets, n, vocab))
	})

	y := randSlice(rng, 15, 1)
	target := randSlice(rng, 15, 1)
	dy := make([]float32, 15)
	MSE(dy, y, target)
	gradCheck(t, "MSE", y, dy, func() float64 { return float64(MSE(nil, y, target)) })
	// Hand value: ((1-0)² + (0-2)²)/2 = 2.5.
	if got := MSE(nil, []float32{1, 0}, []float32{0, 2}); got != 2.5 {
		t.Errorf("MSE = %g, want 2.5", got)
	}
	mustPanic(t, "target", "targets[0] = 5 outside [0, 5)", func() { CrossEntropy(nil, logits[:5], []int32{5}, 1, vocab) })
}

func TestAdamTwoSteps(t *testing.T) {
	// By hand (lr 0.1, β1 0.9, β2 0.999, eps 1e-8), p0 = 1:
	// step 1, g = 0.5: m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25,
	//   p = 1 − 0.1·0.5/(0.5 + 1e-8) = 0.900000002.
	// step 2, g = −0.25: m = 0.045 − 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225,
	//   m̂ = 0.02/0.19, v̂ = 0.00031225/0.001999,
	//   p = 0.900000002 − 0.1·m̂/(sqrt(v̂) + 1e-8) = 0.8733662987.
	opt := NewAdam(0.1)
	p := []float32{1}
	m := []float32{0}
	v := []float32{0}
	opt.Step(p, []float32{0.5}, m, v, 1)
	if !closeTo(float64(p[0]), 0.900000002, 0, 1e-7) || !closeTo(float64(m[0]), 0.05, 1e-6, 0) || !closeTo(float64(v[0]), 0.00025, 1e-6, 0) {
		t.Errorf("after step 1: p = %.9g, m = %g, v = %g", p[0], m[0], v[0])
	}
	opt.Step(p, []float32{-0.25}, m, v, 2)
	if !closeTo(float64(p[0]), 0.8733662987078463, 0, 1e-6) || !closeTo(float64(m[0]), 0.02, 1e-6, 0) || !closeTo(float64(v[0]), 0.00031225, 1e-6, 0) {
		t.Errorf("after step 2: p = %.9g, m = %g, v = %g; want p = 0.8733663", p[0], m[0], v[0])
	}
	mustPanic(t, "step 0", "t = 0", func() { opt.Step(p, p, m, v, 0) })
}

func TestSGD(t *testing.T) {
	// Plain: p = 1 − 0.1·0.5 = 0.95.
	p := []float32{1}
	SGD{LR: 0.1}.Step(p, []float32{0.5}, nil)
	if !closeTo(float64(p[0]), 0.95, 1e-7, 0) {
		t.Errorf("SGD: p = %g, want 0.95", p[0])
	}
	// Momentum 0.9, g = 0.5 twice: buf 0.5 then 0.9·0.5 + 0.5 = 0.95; p = 1 − 0.05 − 0.095 = 0.855.
	p = []float32{1}
	buf := []float32{0}
	o := SGD{LR: 0.1, Momentum: 0.9}
	o.Step(p, []float32{0.5}, buf)
	o.Step(p, []float32{0.5}, buf)
	if !closeTo(float64(p[0]), 0.855, 1e-6, 0) || !closeTo(float64(buf[0]), 0.95, 1e-6, 0) {
		t.Errorf("SGD momentum: p = %g, buf = %g, want 0.855, 0.95", p[0], buf[0])
	}
	mustPanic(t, "no buffer", "momentum buffer", func() { o.Step(p, p, nil) })
}

func TestInitDeterministic(t *testing.T) {
	a := make([]float32, 10000)
	b := make([]float32, 10000)
	FillNormal(a, NewRand(7), 0.02)
	FillNormal(b, NewRand(7), 0.02)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different values at %d", i)
		}
	}
	FillNormal(b, NewRand(8), 0.02)
	if a[0] == b[0] && a[1] == b[1] {
		t.Fatalf("different seeds gave the same values")
	}
	var s, ss float64
	for _, v := range a {
		s += float64(v)
		ss += float64(v) * float64(v)
	}
	mean, std := s/float64(len(a)), math.Sqrt(ss/float64(len(a)))
	// Standard errors: 0.02/sqrt(1e4) = 2e-4 for the mean, about 0.02/sqrt(2e4) = 1.4e-4 for std.
	if math.Abs(mean) > 1e-3 || math.Abs(std-0.02) > 1e-3 {
		t.Errorf("FillNormal: mean %g, std %g, want 0, 0.02", mean, std)
	}

	bound := LinearBound(100) // 1/sqrt(100) = 0.1
	if bound != 0.1 {
		t.Errorf("LinearBound(100) = %g, want 0.1", bound)
	}
	FillUniform(a, NewRand(9), -bound, bound)
	var mx float64
	s = 0
	for _, v := range a {
		if v < -bound || v > bound {
			t.Fatalf("FillUniform: %g outside [-0.1, 0.1]", v)
		}
		mx = math.Max(mx, math.Abs(float64(v)))
		s += float64(v)
	}
	if mx < 0.099 || math.Abs(s/float64(len(a))) > 2e-3 {
		t.Errorf("FillUniform: max |v| %g, mean %g", mx, s/float64(len(a)))
	}
}

func TestNoAllocations(t *testing.T) {
	rng := NewRand(14)
	const m, in, out = 8, 16, 12
	x, w, b := randSlice(rng, m*in, 1), randSlice(rng, out*in, 1), randSlice(rng, out, 1)
	y, dx, dw, db := make([]float32, m*out), make([]float32, m*in), make([]float32, out*in), make([]float32, out)
	mean, rstd, lw := make([]float32, m), make([]float32, m), randSlice(rng, in, 1)
	d := AttnDims{Batch: 2, Seq: 4, Heads: 4, KVHeads: 2, HeadDim: 2}
	q, k, v := randSlice(rng, d.QLen(), 1), randSlice(rng, d.KVLen(), 1), randSlice(rng, d.KVLen(), 1)
	o, probs, scratch := make([]float32, d.QLen()), make([]float32, d.ProbsLen()), make([]float32, d.ScratchLen())
	dq, dk, dv := make([]float32, d.QLen()), make([]float32, d.KVLen()), make([]float32, d.KVLen())
	targets := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	mo, vo := make([]float32, len(w)), make([]float32, len(w))
	adam := NewAdam(1e-3)
	allocs := testing.AllocsPerRun(10, func() {
		LinearForward(y, x, w, b, m, in, out)
		LinearBackward(dx, dw, db, y, x, w, m, in, out, true)
		LayerNorm(dx, mean, rstd, x, lw, nil, m, in, DefaultEps)
		LayerNormBackward(dx, lw, nil, dx, x, lw, mean, rstd, m, in)
		GELU(dx, x)
		AttentionForward(o, probs, q, k, v, d)
		AttentionBackward(dq, dk, dv, scratch, o, q, k, v, probs, d)
		CrossEntropy(y, y, targets, m, out)
		adam.Step(w, dw, mo, vo, 1)
	})
	if allocs != 0 {
		t.Errorf("kernels allocated %v times per run, want 0", allocs)
	}
}

// TestNormVectorsMatchScalar checks the norms' AVX2 row loops against the scalar code alone:
// LayerNorm (with and without a bias) and RMSNorm, forward and backward (dx aliasing dy too),
// on lengths that cover the 8-element vectors and the scalar tail. Only the row sums differ (their
// order, and the fused multiply-adds of the squared deviations), so the outputs agree to a few
// float64 rounding errors, far below float32's.
func TestNormVectorsMatchScalar(t *testing.T) {
	if !useAVX {
		t.Skip("without the AVX2 kernels there is only the scalar path (portable code, or -race)")
	}
	type out struct{ y, mean, rstd, dx, dw, db []float32 }
	for _, cols := range []int{1, 7, 8, 9, 16, 31, 64, 100} {
		const rows = 3
		rng := NewRand(uint64(cols))
		x, dy, w, b := randSlice(rng, rows*cols, 3), randSlice(rng, rows*cols, 1), randSlice(rng, cols, 1), randSlice(rng, cols, 1)
		for i := range x { // an offset, so that the mean matters
			x[i] += 2
		}
		run := func(avx, rms, bias, alias bool) out {
			useAVX = avx
			defer func() { useAVX = true }()
			o := out{y: make([]float32, rows*cols), mean: make([]float32, rows), rstd: make([]float32, rows),
				dw: make([]float32, cols), db: make([]float32, cols)}
			bb, db := b, o.db
			if !bias {
				bb, db = nil, nil
			}
			o.dx = make([]float32, rows*cols)
			g := dy
			if alias {
				copy(o.dx, dy)
				g = o.dx
			}
			if rms {
				RMSNorm(o.y, o.rstd, x, w, rows, cols, DefaultEps)
				RMSNormBackward(o.dx, o.dw, g, x, w, o.rstd, rows, cols)
			} else {
				LayerNorm(o.y, o.mean, o.rstd, x, w, bb, rows, cols, DefaultEps)
				LayerNormBackward(o.dx, o.dw, db, g, x, w, o.mean, o.rstd, rows, cols)
			}
			return o
		}
		for _, c := range []struct{ rms, bias, alias bool }{{false, true, false}, {false, false, true}, {true, false, false}, {true, false, true}} {
			want, got := run(false, c.rms, c.bias, c.alias), run(true, c.rms, c.bias, c.alias)
			for name, pair := range map[string][2][]float32{"y": {got.y, want.y}, "mean": {got.mean, want.mean}, "rstd": {got.rstd, want.rstd},
				"dx": {got.dx, want.dx}, "dw": {got.dw, want.dw}, "db": {got.db, want.db}} {
				for i := range pair[1] {
					if d := math.Abs(float64(pair[0][i] - pair[1][i])); d > 1e-6*(1+math.Abs(float64(pair[1][i]))) {
						t.Fatalf("cols=%d %+v: %s[%d] = %g with AVX2, %g scalar", cols, c, name, i, pair[0][i], pair[1][i])
					}
				}
			}
		}
	}
}

// TestCrossEntropyVectors checks CrossEntropy on vocabularies that cover the vector kernels (16-
// and 32-float passes, the scalar tail) and the 1024-float chunks: the loss is the same with and
// without the gradient (==), the gradient into logits itself (aliased) has the bits of the one
// into a separate buffer, and both are within 1e-6 of the float64 formula; so is the vocab-parallel
// gradient of two shards.
func TestCrossEntropyVectors(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, vocab := range []int{31, 33, 1000, 1024, 1025, 2500} {
			const n = 3
			rng := NewRand(uint64(vocab))
			logits := randSlice(rng, n*vocab, 4)
			targets := []int32{0, int32(vocab / 2), int32(vocab - 1)}
			d := make([]float32, n*vocab)
			loss := CrossEntropy(d, logits, targets, n, vocab)
			if l := CrossEntropy(nil, logits, targets, n, vocab); l != loss {
				t.Fatalf("vocab=%d: loss %v without the gradient, %v with it", vocab, l, loss)
			}
			alias := slices.Clone(logits)
			if l := CrossEntropy(alias, alias, targets, n, vocab); l != loss {
				t.Fatalf("vocab=%d: loss %v with the gradient into logits, %v into a separate buffer", vocab, l, loss)
			}
			var want float64
			for i := range n {
				row := logits[i*vocab : (i+1)*vocab]
				mx := math.Inf(-1)
				for _, v := range row {
					mx = math.Max(mx, float64(v))
				}
				var s float64
				for _, v := range row {
					s += math.Exp(float64(v) - mx)
				}
				lse := mx + math.Log(s)
				want += (lse - float64(row[targets[i]])) / n
				for j, v := range row {
					g := math.Exp(float64(v)-lse) / n
					if int32(j) == targets[i] {
						g -= 1.0 / n
					}
					k := i*vocab + j
					if math.Abs(float64(d[k])-g) > 1e-6*math.Abs(g)+1e-9 {
						t.Fatalf("vocab=%d: dlogits[%d][%d] = %g, float64 %g", vocab, i, j, d[k], g)
					}
					if math.Float32bits(alias[k]) != math.Float32bits(d[k]) {
						t.Fatalf("vocab=%d: aliased dlogits[%d][%d] = %g, separate %g", vocab, i, j, alias[k], d[k])
					}
				}
			}
			if math.Abs(float64(loss)-want) > 1e-6*want {
				t.Errorf("vocab=%d: loss %v, float64 %v", vocab, loss, want)
			}
			// Two shards (vocab even only).
			if vocab%2 != 0 {
				continue
			}
			local := vocab / 2
			all := make([]float32, 3*2*n)
			shards := make([][]float32, 2)
			for r := range 2 {
				shards[r] = make([]float32, n*local)
				for i := range n {
					copy(shards[r][i*local:(i+1)*local], logits[i*vocab+r*local:i*vocab+(r+1)*local])
				}
				st := make([]float32, 3*n)
				CrossEntropyStats(st, shards[r], targets, n, local, r*local, vocab)
				for i := range n {
					copy(all[i*6+3*r:i*6+3*r+3], st[3*i:3*i+3])
				}
			}
			lse := make([]float32, n)
			CrossEntropyCombine(lse, all, n, 2)
			for r := range 2 {
				ds := make([]float32, n*local)
				CrossEntropyShardBackward(ds, shards[r], lse, targets, n, local, r*local, vocab)
				for i := range n {
					for j := range local {
						g, w := ds[i*local+j], d[i*vocab+r*local+j]
						if math.Abs(float64(g-w)) > 1e-6*math.Abs(float64(w))+1e-9 {
							t.Fatalf("vocab=%d shard %d: dlogits[%d][%d] = %g, whole %g", vocab, r, i, j, g, w)
						}
					}
				}
			}
		}
	})
}
