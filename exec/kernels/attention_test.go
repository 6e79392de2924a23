package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveAttention is the per-head reference of AttentionForward in float64: explicit loops over
// sequence, query head, query position and key position.
func naiveAttention(q, k, v []float32, d AttnDims) (o, probs []float64) {
	S, D := d.Seq, d.HeadDim
	wq, wkv := d.Heads*D, d.KVHeads*D
	o = make([]float64, d.QLen())
	probs = make([]float64, d.ProbsLen())
	for b := range d.Batch {
		for h := range d.Heads {
			g := h / (d.Heads / d.KVHeads)
			for i := range S {
				qi := (b*S + i) * wq
				scores := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					kj := (b*S + j) * wkv
					var s float64
					for c := range D {
						s += float64(q[qi+h*D+c]) * float64(k[kj+g*D+c])
					}
					scores[j] = s / math.Sqrt(float64(D))
					mx = math.Max(mx, scores[j])
				}
				var sum float64
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				prow := probs[((b*d.Heads+h)*S+i)*S:]
				for j := range scores {
					p := scores[j] / sum
					prow[j] = p
					vj := (b*S + j) * wkv
					for c := range D {
						o[qi+h*D+c] += p * float64(v[vj+g*D+c])
					}
				}
			}
		}
	}
	return o, probs
}

var attnCases = []AttnDims{
	{Batch: 1, Seq: 1, Heads: 1, KVHeads: 1, HeadDim: 1},
	{Batch: 2, Seq: 5, Heads: 2, KVHeads: 2, HeadDim: 3}, // multi-head
	{Batch: 2, Seq: 5, Heads: 4, KVHeads: 2, HeadDim: 3}, // grouped-query
	{Batch: 1, Seq: 4, Heads: 3, KVHeads: 1, HeadDim: 2}, // multi-query
	{Batch: 1, Seq: 6, Heads: 4, KVHeads: 4, HeadDim: 8},
	{Batch: 1, Seq: 19, Heads: 2, KVHeads: 1, HeadDim: 8}, // rows rounded up to whole vectors, the last clamped
	{Batch: 1, Seq: 40, Heads: 1, KVHeads: 1, HeadDim: 4}, // rows past 32 (the AVX-512 exponentials)
}

func TestAttentionForwardAgainstNaive(t *testing.T) {
	rng := NewRand(9)
	for _, d := range attnCases {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			q := randSlice(rng, d.QLen(), 1.5)
			k := randSlice(rng, d.KVLen(), 1.5)
			v := randSlice(rng, d.KVLen(), 1)
			o := randSlice(rng, d.QLen(), 1) // garbage that must be overwritten
			probs := randSlice(rng, d.ProbsLen(), 1)
			AttentionForward(o, probs, q, k, v, d)
			wantO, wantP := naiveAttention(q, k, v, d)
			if diff := maxAbsDiff(o, wantO); diff > 1e-5 {
				t.Errorf("o: max |diff| = %g", diff)
			}
			if diff := maxAbsDiff(probs, wantP); diff > 1e-6 {
				t.Errorf("probs: max |diff| = %g", diff)
			}
		})
	}
}

func TestAttentionFirstTokenCopiesValue(t *testing.T) {
	// Causality by hand: token 0 can only attend to itself, so o[0] = v[0] whatever q and k are.
	d := AttnDims{Batch: 1, Seq: 3, Heads: 2, KVHeads: 1, HeadDim: 2}
	q := []float32{9, -9, 3, 3, 1, 2, 3, 4, 5, 6, 7, 8}
	k := []float32{1, 1, 50, 50, -50, 50}
	v := []float32{0.5, -0.25, 7, 7, 8, 8}
	o := make([]float32, d.QLen())
	AttentionForward(o, make([]float32, d.ProbsLen()), q, k, v, d)
	for h := range 2 {
		if o[h*2] != 0.5 || o[h*2+1] != -0.25 {
			t.Fatalf("o[token 0] = %v, want v[0] = (0.5, -0.25) for both heads", o[:4])
		}
	}
}

func TestAttentionGradients(t *testing.T) {
	attentionGradCheck(t, NewRand(10), func(d AttnDims) (attnFwd, attnBwd) {
		probs, scratch := make([]float32, d.ProbsLen()), make([]float32, d.ScratchLen())
		return func(o, q, k, v []float32) { AttentionForward(o, probs, q, k, v, d) },
			func(dq, dk, dv, do, q, k, v []float32) { AttentionBackward(dq, dk, dv, scratch, do, q, k, v, probs, d) }
	})
}

type (
	attnFwd func(o, q, k, v []float32)
	attnBwd func(dq, dk, dv, do, q, k, v []float32)
)

// attentionGradCheck checks a forward and backward attention kernel pair, made for each case by
// kernels (which allocates what they save between them), against finite differences of
// L = Σ o·r. The gradient buffers start as garbage: the backward overwrites them.
func attentionGradCheck(t *testing.T, rng *rand.Rand, kernels func(AttnDims) (attnFwd, attnBwd)) {
	t.Helper()
	for _, d := range attnCases {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			forward, backward := kernels(d)
			q := randSlice(rng, d.QLen(), 1)
			k := randSlice(rng, d.KVLen(), 1)
			v := randSlice(rng, d.KVLen(), 1)
			r := randSlice(rng, d.QLen(), 1)
			o := make([]float32, d.QLen())
			loss := func() float64 {
				forward(o, q, k, v)
				return dot64(o, r)
			}
			loss()
			dq := randSlice(rng, d.QLen(), 1)
			dk := randSlice(rng, d.KVLen(), 1)
			dv := randSlice(rng, d.KVLen(), 1)
			backward(dq, dk, dv, r, q, k, v)
			gradCheck(t, "dq", q, dq, loss)
			gradCheck(t, "dk", k, dk, loss)
			gradCheck(t, "dv", v, dv, loss)
		})
	}
}

func TestSplitMergeQKV(t *testing.T) {
	// Layout by hand for Heads = 4, KVHeads = 2, HeadDim = 2: the 16 fused columns of a row are
	// q0 q1 k0 v0 | q2 q3 k1 v1, each 2 columns.
	d := AttnDims{Batch: 1, Seq: 2, Heads: 4, KVHeads: 2, HeadDim: 2}
	qkv := make([]float32, d.QKVLen())
	for i := range qkv {
		qkv[i] = float32(i) // row r, column c holds 16r + c
	}
	q := make([]float32, d.QLen())
	k := make([]float32, d.KVLen())
	v := make([]float32, d.KVLen())
	SplitQKV(q, k, v, qkv, d)
	wantQ := []float32{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}
	wantK := []float32{4, 5, 12, 13, 20, 21, 28, 29}
	wantV := []float32{6, 7, 14, 15, 22, 23, 30, 31}
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"q", q, wantQ}, {"k", k, wantK}, {"v", v, wantV}} {
		for i := range c.want {
			if c.got[i] != c.want[i] {
				t.Fatalf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
	}

	// Round trip on random data for several groupings.
	rng := NewRand(11)
	for _, d := range attnCases {
		fused := randSlice(rng, d.QKVLen(), 1)
		q, k, v := make([]float32, d.QLen()), make([]float32, d.KVLen()), make([]float32, d.KVLen())
		SplitQKV(q, k, v, fused, d)
		back := make([]float32, d.QKVLen())
		MergeQKV(back, q, k, v, d)
		for i := range fused {
			if back[i] != fused[i] {
				t.Fatalf("%+v: round trip differs at %d", d, i)
			}
		}
	}
}

func TestAttentionPanics(t *testing.T) {
	d := AttnDims{Batch: 1, Seq: 2, Heads: 3, KVHeads: 2, HeadDim: 2}
	mustPanic(t, "groups", "does not divide", func() { AttentionForward(nil, nil, nil, nil, nil, d) })
	d.KVHeads = 1
	q := make([]float32, d.QLen())
	kv := make([]float32, d.KVLen())
	mustPanic(t, "probs", "len(probs)", func() { AttentionForward(q, nil, q, kv, kv, d) })
	mustPanic(t, "scratch", "len(scratch)", func() {
		AttentionBackward(q, kv, kv, nil, q, q, kv, kv, make([]float32, d.ProbsLen()), d)
	})
	mustPanic(t, "split", "len(qkv)", func() { SplitQKV(q, kv, kv, q, d) })
}

// naiveLSE is the log-sum-exp of the causal scores of every sequence b, query head h and row i,
// laid out [Batch, Heads, Seq], in float64.
func naiveLSE(q, k []float32, d AttnDims) []float64 {
	S, D := d.Seq, d.HeadDim
	wq, wkv := d.Heads*D, d.KVHeads*D
	lse := make([]float64, d.LSELen())
	for b := range d.Batch {
		for h := range d.Heads {
			g := h / (d.Heads / d.KVHeads)
			for i := range S {
				var sum float64
				for j := 0; j <= i; j++ {
					var s float64
					for c := range D {
						s += float64(q[(b*S+i)*wq+h*D+c]) * float64(k[(b*S+j)*wkv+g*D+c])
					}
					if D > 0 {
						s /= math.Sqrt(float64(D))
					}
					sum += math.Exp(s)
				}
				lse[(b*d.Heads+h)*S+i] = math.Log(sum)
			}
		}
	}
	return lse
}

// maxRelDiff is the largest |a_i − b_i| / max(|b_i|, 1) (+Inf if any is NaN).
func maxRelDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		d := math.Abs(float64(a[i])-float64(b[i])) / math.Max(math.Abs(float64(b[i])), 1)
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}

func TestAttentionLSEMatchesEager(t *testing.T) {
	rng := NewRand(12)
	cases := append(append([]AttnDims{}, attnCases...), AttnDims{Batch: 2, Seq: 16, Heads: 4, KVHeads: 2, HeadDim: 8}, // gpt-tiny-like, GQA
		AttnDims{Batch: 1, Seq: 3, Heads: 2, KVHeads: 1, HeadDim: 0})
	for _, d := range cases {
		t.Run(fmt.Sprintf("%+v", d), func(t *testing.T) {
			// Scores of several units, so that the softmax is far from uniform.
			q := randSlice(rng, d.QLen(), 2)
			k := randSlice(rng, d.KVLen(), 2)
			v := randSlice(rng, d.KVLen(), 1)
			do := randSlice(rng, d.QLen(), 1)

			oRef := make([]float32, d.QLen())
			probs := make([]float32, d.ProbsLen())
			AttentionForward(oRef, probs, q, k, v, d)
			o := randSlice(rng, d.QLen(), 1) // garbage: outputs are overwritten
			lse := randSlice(rng, d.LSELen(), 1)
			AttentionForwardLSE(o, lse, randSlice(rng, d.ScratchLen(), 1), q, k, v, d)
			if diff := maxRelDiff(o, oRef); diff > 1e-6 {
				t.Errorf("o: max relative difference to AttentionForward %g", diff)
			}
			if diff := maxAbsDiff(lse, naiveLSE(q, k, d)); !(diff <= 1e-5) { // NaN fails too
				t.Errorf("lse: max |diff| to float64 log-sum-exp %g", diff)
			}

			dqRef, dkRef, dvRef := make([]float32, d.QLen()), make([]float32, d.KVLen()), make([]float32, d.KVLen())
			AttentionBackward(dqRef, dkRef, dvRef, make([]float32, d.ScratchLen()), do, q, k, v, probs, d)
			dq, dk, dv := randSlice(rng, d.QLen(), 1), randSlice(rng, d.KVLen(), 1), randSlice(rng, d.KVLen(), 1)
			AttentionBackwardLSE(dq, dk, dv, randSlice(rng, d.FlashScratchLen(), 1), do, q, k, v, lse, d)
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"dq", dq, dqRef}, {"dk", dk, dkRef}, {"dv", dv, dvRef}} {
				if diff := maxRelDiff(c.got, c.want); diff > 1e-5 {
					t.Errorf("%s: max relative difference to AttentionBackward %g", c.name, diff)
				}
			}
		})
	}
}

func TestAttentionLSEGradients(t *testing.T) {
	attentionGradCheck(t, NewRand(13), func(d AttnDims) (attnFwd, attnBwd) {
		lse, scratch := make([]float32, d.LSELen()), make([]float32, d.FlashScratchLen())
		return func(o, q, k, v []float32) { AttentionForwardLSE(o, lse, scratch, q, k, v, d) },
			func(dq, dk, dv, do, q, k, v []float32) {
				AttentionBackwardLSE(dq, dk, dv, scratch, do, q, k, v, lse, d)
			}
	})
}

func TestAttentionLSEPanics(t *testing.T) {
	d := AttnDims{Batch: 1, Seq: 2, Heads: 2, KVHeads: 1, HeadDim: 2}
	q := make([]float32, d.QLen())
	kv := make([]float32, d.KVLen())
	lse := make([]float32, d.LSELen())
	mustPanic(t, "lse", "len(lse)", func() { AttentionForwardLSE(q, nil, make([]float32, d.ScratchLen()), q, kv, kv, d) })
	mustPanic(t, "forward scratch", "len(scratch)", func() { AttentionForwardLSE(q, lse, nil, q, kv, kv, d) })
	mustPanic(t, "backward scratch", "len(scratch)", func() {
		AttentionBackwardLSE(q, kv, kv, make([]float32, d.ScratchLen()), q, q, kv, kv, lse, d)
	})
}
