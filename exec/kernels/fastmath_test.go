package kernels

import (
	"math"
	"slices"
	"testing"
)

// ulps is |got - want| in units of the last place of float32 at want.
func ulps(got float32, want float64) float64 {
	w := float32(want)
	ulp := math.Float32frombits(math.Float32bits(w)+1) - w
	if ulp == 0 || math.IsInf(float64(ulp), 0) {
		ulp = math.Float32frombits(math.Float32bits(w)) - math.Float32frombits(math.Float32bits(w)-1)
	}
	return math.Abs(float64(got)-want) / math.Abs(float64(ulp))
}

// sweep is n evenly spaced float32 points of [lo, hi], with n a multiple of 8 plus 5 so that both
// the AVX2 body and the scalar tail of a kernel see them.
func sweep(lo, hi float64, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*float64(i)/float64(n-1))
	}
	return x
}

// forEachPath runs f with the kernels this CPU selects, then, where it has AVX-512, with the AVX2
// kernels alone, and with the portable float32 code on every element.
func forEachPath(t *testing.T, f func(t *testing.T)) {
	t.Run("default", f)
	if useAVX512 {
		useAVX512 = false
		t.Run("avx2", f)
		useAVX512 = true
	}
	if useAVX {
		useAVX = false
		defer func() { useAVX = true }()
		t.Run("portable", f)
	}
}

// TestExp32Accuracy measures exp32 (and expSum's kernel) against math.Exp over its whole range:
// the Cephes expf polynomial is accurate to about 1 ulp (its header quotes a peak relative error of
// 1.7e-7 = 1.4 ulp over ±MAXLOG); we allow 2 ulp.
func TestExp32Accuracy(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		x := sweep(expLo, expHi, 1<<18+5)
		y := make([]float32, len(x))
		sum := expSum(y, x, 0)
		var worst, s float64
		for i, v := range x {
			want := math.Exp(float64(v))
			s += float64(y[i])
			if u := ulps(y[i], want); u > worst {
				worst = u
			}
			if e := exp32(v); ulps(e, want) > 2 {
				t.Fatalf("exp32(%g) = %g, math.Exp %g: %.2f ulp", v, e, want, ulps(e, want))
			}
		}
		t.Logf("max error %.2f ulp", worst)
		if worst > 2 {
			t.Errorf("expSum: max error %.2f ulp, want <= 2", worst)
		}
		if math.Abs(sum-s) > 1e-12*s {
			t.Errorf("expSum returned %g, the sum of its outputs is %g", sum, s)
		}
		// Clamps: below the range 2⁻¹²⁶, above it exp(88), NaN stays NaN.
		z := []float32{-1000, float32(math.Inf(-1)), 1000, float32(math.NaN()), 0, 0, 0, 0, -1000}
		expSum(z, z, 0)
		// float32(expLo) is 4e-6 below ln 2⁻¹²⁶, so the lower clamp gives 2⁻¹²⁶ to 1e-5 relative.
		near := func(got float32, want float64) bool { return math.Abs(float64(got)-want) <= 1e-5*want }
		if !near(z[0], 0x1p-126) || !near(z[1], 0x1p-126) || !near(z[8], 0x1p-126) || !near(z[2], math.Exp(88)) || !math.IsNaN(float64(z[3])) || z[4] != 1 {
			t.Errorf("clamps: exp of [-1000 -Inf 1000 NaN 0 ... -1000] = %v", z)
		}
	})
}

// Float64 references: the formulas of GELU, GELUBackward, SiLU and SiLUBackward evaluated with
// math.Exp at the float32 input. GELU's 0.5 (1 + tanh u) is written 1/(1 + exp(-2u)), the same
// function exactly, because the tanh form cancels to 0 in float64 too once tanh u rounds to -1
// (x < -9); TestGELUAndSiLUValues checks hand values where it does not cancel.
func geluSigma(x float64) float64 {
	return 1 / (1 + math.Exp(-2*geluC*(x+geluA*x*x*x)))
}

func geluRef(x float64) float64 { return x * geluSigma(x) }

func geluGradRef(x float64) float64 {
	s := geluSigma(x)
	// 0.5 (1 + t) + 0.5 x (1 - t²) C (1 + 3a x²) with 1 + t = 2s, 1 - t² = 4 s (1 - s).
	return s + 2*x*s*(1-s)*geluC*(1+3*geluA*x*x)
}

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func siluGradRef(x float64) float64 {
	s := 1 / (1 + math.Exp(-x))
	return s * (1 + x*(1-s))
}

// TestFastActivationAccuracy measures the float32 activations against the float64 formulas. The
// error is a few ulp where the function is well conditioned, and grows with the condition number
// |x f'(x)/f(x)| where the output decays exponentially (GELU at x = -8 has condition number about
// 70, SiLU at x = -20 about 20): rounding the float32 intermediate u = C(x + a x³) alone costs that
// many ulp, so the bound is rtol·(1 + cond) with rtol = 4 ulp, plus an absolute 1e-30 for outputs
// that underflow.
func TestFastActivationAccuracy(t *testing.T) {
	const u32 = 1.0 / (1 << 23) // one ulp at 1
	cases := []struct {
		name   string
		lo, hi float64
		kernel func(dst, x []float32)
		ref    func(float64) float64
	}{
		{"GELU", -12, 12, GELU, geluRef},
		{"GELUBackward", -12, 12, func(dst, x []float32) { one(dst); GELUBackward(dst, dst, x) }, geluGradRef},
		{"SiLU", -40, 40, SiLU, siluRef},
		{"SiLUBackward", -40, 40, func(dst, x []float32) { one(dst); SiLUBackward(dst, dst, x) }, siluGradRef},
	}
	forEachPath(t, func(t *testing.T) {
		for _, c := range cases {
			x := sweep(c.lo, c.hi, 1<<16+5)
			y := make([]float32, len(x))
			c.kernel(y, x)
			var worst float64
			for i, v := range x {
				xv := float64(v)
				want := c.ref(xv)
				h := 1e-4 * math.Max(1, math.Abs(xv))
				cond := math.Abs(xv * (c.ref(xv+h) - c.ref(xv-h)) / (2 * h) / want)
				if want == 0 {
					cond = 0
				}
				err := math.Abs(float64(y[i]) - want)
				tol := 4*u32*(1+cond)*math.Abs(want) + 1e-30
				if err > tol {
					t.Fatalf("%s(%g) = %g, float64 %g: error %g > %g (cond %.1f)", c.name, v, y[i], want, err, tol, cond)
				}
				if r := err / (u32 * (1 + cond) * math.Abs(want)); math.Abs(want) > 1e-30 && r > worst {
					worst = r
				}
			}
			t.Logf("%s: max error %.2f ulp·(1+cond)", c.name, worst)
		}
	})
}

func one(x []float32) {
	for i := range x {
		x[i] = 1
	}
}

// TestReLUEdgeCases checks the vector and scalar ReLU on NaN, ±0, ±Inf and subnormals: x > 0
// passes (and so does its gradient), everything else gives +0.
func TestReLUEdgeCases(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	x := []float32{nan, 0, negz, inf, -inf, 1e-45, -1e-45, 3, -3, nan, negz, 1e-45, 2, -inf, inf, 0, 7}
	forEachPath(t, func(t *testing.T) {
		y := make([]float32, len(x))
		ReLU(y, x)
		dy := make([]float32, len(x))
		for i := range dy {
			dy[i] = float32(i + 1)
		}
		dx := make([]float32, len(x))
		ReLUBackward(dx, dy, x)
		for i, v := range x {
			want, wantD := float32(0), float32(0)
			if v > 0 {
				want, wantD = v, dy[i]
			}
			if math.Float32bits(y[i]) != math.Float32bits(want) || dx[i] != wantD {
				t.Errorf("x = %g: relu %g (bits %x), grad %g; want %g, %g", v, y[i], math.Float32bits(y[i]), dx[i], want, wantD)
			}
		}
	})
}

// TestRowMaxNaN pins rowMax's NaN rule on both paths: a NaN is skipped unless it is the first
// element (then the maximum is NaN), as the scalar x > max test gives.
func TestRowMaxNaN(t *testing.T) {
	nan := float32(math.NaN())
	forEachPath(t, func(t *testing.T) {
		x := sweep(-3, 2, 19)
		x[3], x[17] = nan, nan
		x[12] = 5
		if got := rowMax(x); got != 5 {
			t.Errorf("rowMax with NaN inside = %g, want 5", got)
		}
		x[0] = nan
		if got := rowMax(x); !math.IsNaN(float64(got)) {
			t.Errorf("rowMax with NaN first = %g, want NaN", got)
		}
	})
}

// TestAddLengths checks Add, AddInPlace and AddBoth bit for bit against the scalar sum on lengths that
// cover the 32-wide unrolled loop, the 8-wide loop and the scalar tail, in place and not.
func TestAddLengths(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 77, 200} {
			a, b := sweep(-1, 2, n+2)[:n], sweep(3, -5, n+2)[:n]
			want := make([]float32, n)
			for i := range want {
				want[i] = a[i] + b[i]
			}
			got := make([]float32, n)
			Add(got, a, b)
			acc := append([]float32(nil), a...)
			AddInPlace(acc, b)
			x, y := append([]float32(nil), a...), append([]float32(nil), b...)
			AddBoth(x, y)
			for i := range want {
				if got[i] != want[i] || acc[i] != want[i] || x[i] != want[i] || y[i] != want[i] {
					t.Fatalf("n=%d: element %d: Add %g, AddInPlace %g, AddBoth %g and %g, want %g", n, i, got[i], acc[i], x[i], y[i], want[i])
				}
			}
		}
	})
}

// TestExpSumMaxSum checks expSumMax's sum, which the AVX2 kernel adds in float32 within each block
// of 32 vectors, against the float64 sum of its outputs: within the 2e-6 relative bound its
// comment derives, for rows whose values are all near 1 (the worst case: the partial sums grow
// largest) and for a softmax-like spread.
func TestExpSumMaxSum(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, c := range []struct{ lo, hi float64 }{{-1e-3, 0}, {-20, 0}} {
			x := sweep(c.lo, c.hi, 1<<12+5)
			rng := NewRand(3)
			for i := range x { // shuffle, so that blocks mix large and small values
				j := int(rng.Uint64() % uint64(i+1))
				x[i], x[j] = x[j], x[i]
			}
			y := make([]float32, len(x))
			sum := expSumMax(y, x, 0)
			var s float64
			for _, v := range y {
				s += float64(v)
			}
			if d := math.Abs(sum - s); d > 2e-6*s {
				t.Errorf("x in [%g, %g]: expSumMax returned %g, the float64 sum of its outputs is %g (relative %.2g > 2e-6)", c.lo, c.hi, sum, s, d/s)
			}
			// The bounded kernel (two vectors at a time) computes each value as the general one.
			y2 := make([]float32, len(x))
			expSum(y2, x, 0)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(y2[i]) {
					t.Fatalf("x in [%g, %g]: expSumMax element %d = %g, expSum %g", c.lo, c.hi, i, y[i], y2[i])
				}
			}
		}
	})
}

// TestScaleAndMaxLengths checks Scale bit for bit against the scalar product, and rowMax against a
// scalar scan, on lengths that cover the 4-vector unrolled loops, the 1-vector loops and the
// scalar tails; rowMax also with a NaN inside (skipped) and a new maximum in each position class.
func TestScaleAndMaxLengths(t *testing.T) {
	nan := float32(math.NaN())
	forEachPath(t, func(t *testing.T) {
		for _, n := range []int{1, 7, 8, 31, 32, 33, 40, 63, 64, 77, 200} {
			x := sweep(-1, 2, n+2)[:n]
			want := make([]float32, n)
			for i, v := range x {
				want[i] = v * 1.5
			}
			got := append([]float32(nil), x...)
			Scale(1.5, got)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("Scale n=%d: element %d = %g, want %g", n, i, got[i], want[i])
				}
			}
			for _, pos := range []int{0, n / 3, n / 2, n - 1} {
				y := sweep(3, -5, n)
				y[pos] = 9
				if j := (pos + 1) % n; j != 0 && j != pos { // a NaN first would be the maximum
					y[j] = nan
				}
				if got := rowMax(y); got != 9 {
					t.Fatalf("rowMax n=%d with 9 at %d and a NaN after it: %g", n, pos, got)
				}
			}
		}
	})
}

// TestNonTemporalStores checks that the kernels that store outputs of ntBytes or more with
// non-temporal stores give the bits they give below the threshold (computed here in pieces of
// 4096 elements), into a fresh buffer and in place (dst = x forward, dx = dy backward), with the
// AVX-512 kernels where the CPU has them and with the AVX2 ones alone; and that a dst only 32-byte
// aligned takes the AVX2 kernels' non-temporal stores too (the zmm ones need 64).
func TestNonTemporalStores(t *testing.T) {
	if !useAVX {
		t.Skip("without the AVX2 kernels there is no non-temporal path (portable code, or -race)")
	}
	if useAVX512 {
		t.Run("avx512", nonTemporalStores)
		useAVX512 = false
		defer func() { useAVX512 = true }()
	}
	t.Run("avx2", nonTemporalStores)
}

func nonTemporalStores(t *testing.T) {
	const n = ntBytes/4 + 13
	x := sweep(-9, 9, n)
	dy := sweep(2, -1, n)
	fwd := func(f func(dst, x []float32)) func(dst, dy, x []float32) {
		return func(dst, _, x []float32) { f(dst, x) }
	}
	kernels := []struct {
		name    string
		forward bool
		run     func(dst, dy, x []float32)
	}{
		{"GELU", true, fwd(GELU)},
		{"GELUBackward", false, GELUBackward},
		{"SiLU", true, fwd(SiLU)},
		{"SiLUBackward", false, SiLUBackward},
		{"ReLU", true, fwd(ReLU)},
		{"ReLUBackward", false, ReLUBackward},
	}
	// Softmax writes an output that large from a scratch row of exponentials: the same bits as
	// one row at a time (each far below the threshold), into a fresh buffer and in place.
	const cols = 1000
	rows := ntBytes/4/cols + 1
	sx := sweep(-9, 9, rows*cols)
	want := make([]float32, rows*cols)
	for r := range rows {
		Softmax(want[r*cols:(r+1)*cols], sx[r*cols:(r+1)*cols], 1, cols)
	}
	got := make([]float32, rows*cols)
	Softmax(got, sx, rows, cols)
	Softmax(sx, sx, rows, cols)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(sx[i]) != math.Float32bits(want[i]) {
			t.Fatalf("Softmax: element %d: %g (in place %g), want %g", i, got[i], sx[i], want[i])
		}
	}
	for _, k := range kernels {
		want := make([]float32, n)
		for lo := 0; lo < n; lo += 4096 {
			hi := min(n, lo+4096)
			k.run(want[lo:hi], dy[lo:hi], x[lo:hi])
		}
		got := make([]float32, n)
		if ntStores(got) == 0 {
			t.Fatalf("a fresh buffer of %d bytes does not take non-temporal stores", 4*n)
		}
		k.run(got, dy, x)
		// 32 bytes past a page boundary: the AVX2 kernels' non-temporal stores, not the zmm ones'.
		off := make([]float32, n+8)[8:]
		if ntStores(off) == 0 {
			t.Fatalf("a buffer 32-byte aligned does not take non-temporal stores")
		}
		k.run(off, dy[:len(off)], x[:len(off)])
		for i := range off {
			if math.Float32bits(off[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s at a 32-byte offset: element %d: %g, want %g", k.name, i, off[i], want[i])
			}
		}
		var in []float32
		if k.forward {
			in = append([]float32(nil), x...)
			k.run(in, dy, in)
		} else {
			in = append([]float32(nil), dy...)
			k.run(in, in, x)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(in[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d: %g (in place %g), want %g", k.name, i, got[i], in[i], want[i])
			}
		}
	}
}

// TestAVX512MatchesAVX2 checks that the AVX-512 exponential kernels give the bits of the AVX2 ones
// (softmax's exponentials too; their sum, added in another order, is TestExpSumMaxSum's), on
// lengths that cover their 32-element passes, the AVX2 vectors and the scalar tail after them,
// with NaN, infinities, zeros, subnormals and values beyond the clamps among the inputs.
func TestAVX512MatchesAVX2(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512 kernels on this CPU (or portable code, or -race)")
	}
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e30, -1e30, 100, -100, 88.5, -88.5}
	kernels := []struct {
		name string
		run  func(dst, dy, x []float32)
	}{
		{"GELU", func(dst, _, x []float32) { GELU(dst, x) }},
		{"GELUBackward", GELUBackward},
		{"SiLU", func(dst, _, x []float32) { SiLU(dst, x) }},
		{"SiLUBackward", SiLUBackward},
		{"expSumMax", func(dst, _, x []float32) { expSumMax(dst, x, rowMax(x)) }},
	}
	for _, n := range []int{32, 33, 40, 63, 64, 65, 96, 120, 1000, 4096 + 13} {
		dy := sweep(2, -1, n)
		for _, k := range kernels {
			x := sweep(-30, 30, n)
			for i, v := range special {
				x[(i*37)%n] = v
			}
			if k.name == "expSumMax" {
				// A finite row maximum, so that the exponentials are not all 0 (rowMax skips a
				// NaN past the first element), with the specials below it inside.
				x = sweep(-30, 5, n)
				for i, v := range []float32{float32(math.Inf(-1)), -1e30, float32(math.NaN()), 0,
					float32(math.Copysign(0, -1)), 1e-45, -1e-45, -88.5, -100} {
					x[(i*37+1)%n] = v
				}
			}
			run := func(zmm bool) []float32 {
				useAVX512 = zmm
				defer func() { useAVX512 = true }()
				dst := make([]float32, n)
				k.run(dst, dy, x)
				return dst
			}
			want, got := run(false), run(true)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d element %d (x = %g): AVX-512 %g, AVX2 %g", k.name, n, i, x[i], got[i], want[i])
				}
			}
		}
	}
}

// TestExpSumMaxNext checks expSumMaxNext against expSumMax and rowMax: the same exponentials and
// sum, and the next row's maximum with its bits, wherever the maximum is (each of the 32 positions
// of a pass of the AVX-512 kernel, and the elements after them), with NaN in the maximum's lane
// later on (skipped) and as next[0] (the maximum is then NaN, as rowMax's).
func TestExpSumMaxNext(t *testing.T) {
	nan := float32(math.NaN())
	forEachPath(t, func(t *testing.T) {
		for _, n := range []int{1, 8, 31, 32, 33, 63, 64, 100, 1000} {
			rng := NewRand(uint64(n))
			x := make([]float32, n)
			FillUniform(x, rng, -10, 0)
			positions := []int{n - 1, n - 2, n - 9}
			for p := range min(n, 40) {
				positions = append(positions, p)
			}
			for _, p := range positions {
				if p < 0 {
					continue
				}
				for nans := range 3 { // none; in the maximum's lane later on; next[0]
					next := make([]float32, n)
					FillUniform(next, rng, -10, 10)
					next[p] = 20
					switch {
					case nans == 1:
						for _, q := range []int{p + 16, p + 32} {
							if q < n {
								next[q] = nan
							}
						}
					case nans == 2 && p != 0:
						next[0] = nan
					}
					want := rowMax(next)
					dst, dst2 := make([]float32, n), make([]float32, n)
					sum, got := expSumMaxNext(dst, x, 0, next)
					sum2 := expSumMax(dst2, x, 0)
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("n=%d maximum at %d, NaNs %d: next's maximum %g, rowMax %g", n, p, nans, got, want)
					}
					if sum != sum2 {
						t.Fatalf("n=%d: sum %g, expSumMax's %g", n, sum, sum2)
					}
					for i := range dst {
						if math.Float32bits(dst[i]) != math.Float32bits(dst2[i]) {
							t.Fatalf("n=%d element %d: %g, expSumMax's %g", n, i, dst[i], dst2[i])
						}
					}
				}
			}
		}
	})
}

// vectorLengths cover the AVX2 loops that take two vectors a pass (16 elements), their
// one-vector tail and the scalar tail after them.
var vectorLengths = []int{1, 7, 8, 9, 16, 24, 33, 1000}

// TestOptimizerVectorsMatchScalar checks that SGD and Adam give the same bits with the AVX2 loops
// (eight elements at a time, then the scalar tail) as with the scalar code alone, over three
// steps, on vectorLengths.
func TestOptimizerVectorsMatchScalar(t *testing.T) {
	if !useAVX {
		t.Skip("without the AVX2 kernels there is only the scalar path (portable code, or -race)")
	}
	for _, n := range vectorLengths {
		rng := NewRand(uint64(n))
		p0, g := make([]float32, n), make([]float32, n)
		FillUniform(p0, rng, -1, 1)
		FillUniform(g, rng, -3, 3)
		g[0] = 0 // a zero gradient: v stays 0 and the update divides by eps
		run := func(avx bool) (sgd, adam []float32) {
			useAVX = avx
			defer func() { useAVX = true }()
			sgd, adam = slices.Clone(p0), slices.Clone(p0)
			m, v := make([]float32, n), make([]float32, n)
			for step := 1; step <= 3; step++ {
				SGD{LR: 0.1}.Step(sgd, g, nil)
				NewAdam(1e-3).Step(adam, g, m, v, step)
			}
			return sgd, adam
		}
		s1, a1 := run(true)
		s0, a0 := run(false)
		for i := range s0 {
			if math.Float32bits(s1[i]) != math.Float32bits(s0[i]) || math.Float32bits(a1[i]) != math.Float32bits(a0[i]) {
				t.Fatalf("n=%d element %d: SGD %g (scalar %g), Adam %g (scalar %g)", n, i, s1[i], s0[i], a1[i], a0[i])
			}
		}
	}
}

// TestMSEVectorsMatchScalar checks MSE's AVX2 loop against the scalar code alone: the same bits of
// the gradient, and the loss within float64 rounding of a different order of summation, on
// vectorLengths, with dy aliasing y too.
func TestMSEVectorsMatchScalar(t *testing.T) {
	if !useAVX {
		t.Skip("without the AVX2 kernels there is only the scalar path (portable code, or -race)")
	}
	for _, n := range vectorLengths {
		rng := NewRand(uint64(n))
		y, target := make([]float32, n), make([]float32, n)
		FillUniform(y, rng, -3, 3)
		FillUniform(target, rng, -1, 1)
		run := func(avx, alias bool) (float32, []float32) {
			useAVX = avx
			defer func() { useAVX = true }()
			if alias {
				dy := slices.Clone(y)
				return MSE(dy, dy, target), dy
			}
			dy := make([]float32, n)
			return MSE(dy, y, target), dy
		}
		l0, d0 := run(false, false)
		for _, alias := range []bool{false, true} {
			l1, d1 := run(true, alias)
			if math.Abs(float64(l1-l0)) > 1e-6*math.Abs(float64(l0)) {
				t.Errorf("n=%d alias=%v: loss %g, scalar %g", n, alias, l1, l0)
			}
			for i := range d0 {
				if math.Float32bits(d1[i]) != math.Float32bits(d0[i]) {
					t.Fatalf("n=%d alias=%v element %d: dy %g, scalar %g", n, alias, i, d1[i], d0[i])
				}
			}
		}
		if l := MSE(nil, y, target); l != l0 && math.Abs(float64(l-l0)) > 1e-6*math.Abs(float64(l0)) {
			t.Errorf("n=%d: loss without dy %g, with %g", n, l, l0)
		}
	}
}
