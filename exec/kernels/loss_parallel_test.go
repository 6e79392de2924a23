package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Splitting the vocabulary over p shards and combining the per-shard statistics gives the loss
// and the gradient of CrossEntropy on the whole logits, for every shard count that divides the
// vocabulary, with targets in every shard.
func TestCrossEntropyVocabParallelMatchesWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	const n, vocab = 5, 12
	logits := randSlice(rng, n*vocab, 4)
	targets := []int32{0, 11, 5, 6, 3}
	want := make([]float32, n*vocab)
	wantLoss := CrossEntropy(want, logits, targets, n, vocab)
	for _, p := range []int{1, 2, 3, 4, 6} {
		local := vocab / p
		shard := func(r int) []float32 {
			out := make([]float32, n*local)
			for i := range n {
				copy(out[i*local:(i+1)*local], logits[i*vocab+r*local:i*vocab+(r+1)*local])
			}
			return out
		}
		all := make([]float32, 3*p*n)
		for r := range p {
			st := make([]float32, 3*n)
			CrossEntropyStats(st, shard(r), targets, n, local, r*local, vocab)
			for i := range n { // the all-gather along the last axis
				copy(all[i*3*p+3*r:i*3*p+3*r+3], st[3*i:3*i+3])
			}
		}
		lse := make([]float32, n)
		got := CrossEntropyCombine(lse, all, n, p)
		if math.Abs(float64(got-wantLoss)) > 1e-6*math.Abs(float64(wantLoss)) {
			t.Errorf("p=%d: loss %v, whole-vocabulary CrossEntropy %v", p, got, wantLoss)
		}
		for r := range p {
			d := make([]float32, n*local)
			CrossEntropyShardBackward(d, shard(r), lse, targets, n, local, r*local, vocab)
			for i := range n {
				for j := range local {
					g, w := d[i*local+j], want[i*vocab+r*local+j]
					if math.Abs(float64(g-w)) > 1e-6 {
						t.Fatalf("p=%d shard %d: dlogits[%d][%d] = %v, whole-vocabulary %v", p, r, i, j, g, w)
					}
				}
			}
		}
	}
}

func TestCrossEntropyVocabParallelPanics(t *testing.T) {
	mustPanic(t, "stats length", "len(stats)", func() { CrossEntropyStats(make([]float32, 2), make([]float32, 4), []int32{0}, 1, 4, 0, 8) })
	mustPanic(t, "targets", "len(targets)", func() { CrossEntropyStats(make([]float32, 3), make([]float32, 4), nil, 1, 4, 0, 8) })
	mustPanic(t, "target past the vocabulary", "outside [0, 8)", func() {
		CrossEntropyStats(make([]float32, 3), make([]float32, 4), []int32{99}, 1, 4, 0, 8)
	})
	mustPanic(t, "negative target", "outside [0, 8)", func() {
		CrossEntropyShardBackward(make([]float32, 4), make([]float32, 4), make([]float32, 1), []int32{-1}, 1, 4, 0, 8)
	})
	mustPanic(t, "gathered stats", "len(all)", func() { CrossEntropyCombine(make([]float32, 1), make([]float32, 3), 1, 2) })
	mustPanic(t, "lse", "len(lse)", func() {
		CrossEntropyShardBackward(make([]float32, 4), make([]float32, 4), nil, []int32{0}, 1, 4, 0, 8)
	})
}
