package kernels

import "math"

// CrossEntropy returns the mean over the n rows of logits [n, vocab] of the cross-entropy against
// the class targets [n] (torch.nn.functional.cross_entropy with reduction='mean'):
//
//	loss = (1/n) Σ_i (logsumexp(logits_i) − logits_i[targets_i])
//
// The log-sum-exp subtracts the row maximum first, so large logits neither overflow nor lose the
// loss. If dlogits [n, vocab] is not nil it is overwritten with the gradient of the returned loss,
// (softmax(logits_i) − onehot(targets_i)) / n. dlogits may alias logits. The exponentials are
// exp32's (float32, within 2 ulp; a logit of -Inf gets 2^-126 of its row's sum, as in Softmax),
// summed in float64 from float32 partial sums, so the loss is within about 2e-6 of the float64
// formula.
//
// It panics if n or vocab is not positive, a length does not match, or a target is outside
// [0, vocab).
func CrossEntropy(dlogits, logits []float32, targets []int32, n, vocab int) float32 {
	if n <= 0 || vocab <= 0 {
		panicf("CrossEntropy: n = %d and vocab = %d must be positive", n, vocab)
	}
	checkLen("CrossEntropy", "logits", logits, n*vocab)
	if len(targets) != n {
		panicf("CrossEntropy: len(targets) = %d, want %d", len(targets), n)
	}
	if dlogits != nil {
		checkLen("CrossEntropy", "dlogits", dlogits, n*vocab)
	}
	invN := 1 / float64(n)
	var total float64
	for i, t := range targets {
		if t < 0 || int(t) >= vocab {
			panicf("CrossEntropy: targets[%d] = %d outside [0, %d)", i, t, vocab)
		}
		row := logits[i*vocab : (i+1)*vocab]
		tl := float64(row[t]) // before dlogits, which may alias logits, overwrites it
		if dlogits == nil {
			mx, sum := maxSumExp(row)
			total += float64(mx) + math.Log(sum) - tl
			continue
		}
		// The gradient's softmax from the exponentials of the log-sum-exp, computed once:
		// exp(x_j - lse)/n = exp(x_j - m)/(n Σ).
		drow := dlogits[i*vocab : (i+1)*vocab]
		mx := rowMax(row)
		sum := expSumRow(drow, row, mx)
		total += float64(mx) + math.Log(sum) - tl
		Scale(float32(invN/sum), drow)
		drow[t] -= float32(invN)
	}
	return float32(total * invN)
}

// MSE returns the mean over all elements of (y − target)² (torch.nn.functional.mse_loss with
// reduction='mean'). If dy is not nil it is overwritten with the gradient 2(y − target)/len(y).
// dy may alias y.
//
// It panics if y is empty or the lengths differ.
func MSE(dy, y, target []float32) float32 {
	if len(y) == 0 {
		panicf("MSE: empty input")
	}
	checkSame("MSE", y, "target", target)
	if dy != nil {
		checkSame("MSE", y, "dy", dy)
	}
	inv := 1 / float64(len(y))
	var total float64
	// AVX2 for the multiples of 8 (its own partial sums, then this loop's): on the 512×1024
	// output of the 1024-4096-1024 MLP the scalar loop took 0.51 ms (0.75 with dy), the AVX2 one
	// 0.088 (0.16), best of 20 on the Intel Xeon VM (2026-12-04); at 64 MiB it runs at 0.93 of
	// copy (BenchmarkElementwise's mse rows).
	v0 := vecLen(len(y))
	if v0 > 0 {
		var d *float32
		if dy != nil {
			d = &dy[0]
		}
		total = mseAVX(d, &y[0], &target[0], v0, 2*inv)
	}
	for i := v0; i < len(y); i++ {
		v := y[i]
		d := float64(v) - float64(target[i])
		total += d * d
		if dy != nil {
			dy[i] = float32(2 * d * inv)
		}
	}
	return float32(total * inv)
}

// Vocabulary-parallel cross-entropy (as Megatron-LM's vocab_parallel_cross_entropy and PyTorch's
// loss_parallel compute it): each of p ranks holds the logits of vocabulary entries [lo, lo+local)
// for all n rows. CrossEntropyStats reduces a shard to three numbers per row, the ranks gather
// them (Megatron-LM all-reduces them instead: a max and two sums), and CrossEntropyCombine and
// CrossEntropyShardBackward finish on every rank without the full logits.

// CrossEntropyStats writes, for each row i of a shard, stats[3i] = m (the shard's largest logit),
// stats[3i+1] = Σ_j exp(y_j - m) and stats[3i+2] = the target's logit if lo <= target < lo+local,
// else 0. It panics if a length does not match or a target is outside [0, vocab).
func CrossEntropyStats(stats, logits []float32, targets []int32, n, local, lo, vocab int) {
	if n <= 0 || local <= 0 {
		panicf("CrossEntropyStats: n = %d and local = %d must be positive", n, local)
	}
	checkLen("CrossEntropyStats", "logits", logits, n*local)
	checkLen("CrossEntropyStats", "stats", stats, 3*n)
	if len(targets) != n {
		panicf("CrossEntropyStats: len(targets) = %d, want %d", len(targets), n)
	}
	for i, t := range targets {
		if t < 0 || int(t) >= vocab {
			panicf("CrossEntropyStats: targets[%d] = %d outside [0, %d)", i, t, vocab)
		}
		row := logits[i*local : (i+1)*local]
		mx, sum := maxSumExp(row)
		var tl float32
		if j := int(t) - lo; j >= 0 && j < local {
			tl = row[j]
		}
		stats[3*i], stats[3*i+1], stats[3*i+2] = mx, float32(sum), tl
	}
}

// CrossEntropyCombine reads the gathered stats of p shards, all[i*3p + 3r + k] (row i, shard r, k
// as in CrossEntropyStats), writes each row's log-sum-exp over the whole vocabulary into lse and
// returns the mean over rows of lse - the target's logit. It panics if a length does not match.
func CrossEntropyCombine(lse, all []float32, n, p int) float32 {
	if n <= 0 || p <= 0 {
		panicf("CrossEntropyCombine: n = %d and p = %d must be positive", n, p)
	}
	checkLen("CrossEntropyCombine", "all", all, 3*p*n)
	checkLen("CrossEntropyCombine", "lse", lse, n)
	var total float64
	for i := range n {
		row := all[i*3*p : (i+1)*3*p]
		mx := row[0]
		for r := 1; r < p; r++ {
			mx = max(mx, row[3*r])
		}
		var sum, tl float64
		for r := range p {
			sum += float64(row[3*r+1]) * math.Exp(float64(row[3*r]-mx))
			tl += float64(row[3*r+2])
		}
		l := float64(mx) + math.Log(sum)
		lse[i] = float32(l)
		total += l - tl
	}
	return float32(total / float64(n))
}

// CrossEntropyShardBackward writes the gradient of CrossEntropyCombine's mean loss with respect to
// a shard: dlogits[i][j] = (exp(y_ij - lse_i) - [lo+j = target_i]) / n, lse_i CrossEntropyCombine's,
// at least every logit of its row over the whole vocabulary (each exponential at most 1:
// expSumMax). It panics if a length does not match or a target is outside [0, vocab).
func CrossEntropyShardBackward(dlogits, logits, lse []float32, targets []int32, n, local, lo, vocab int) {
	if n <= 0 || local <= 0 {
		panicf("CrossEntropyShardBackward: n = %d and local = %d must be positive", n, local)
	}
	checkLen("CrossEntropyShardBackward", "logits", logits, n*local)
	checkLen("CrossEntropyShardBackward", "dlogits", dlogits, n*local)
	checkLen("CrossEntropyShardBackward", "lse", lse, n)
	if len(targets) != n {
		panicf("CrossEntropyShardBackward: len(targets) = %d, want %d", len(targets), n)
	}
	invN := 1 / float64(n)
	for i, t := range targets {
		if t < 0 || int(t) >= vocab {
			panicf("CrossEntropyShardBackward: targets[%d] = %d outside [0, %d)", i, t, vocab)
		}
		row := logits[i*local : (i+1)*local]
		drow := dlogits[i*local : (i+1)*local]
		// exp(y_ij - lse_i) <= 1: lse_i is at least the row's largest logit over the whole
		// vocabulary, so expSumMax's bounded kernels apply (its sum is not needed).
		expSumMax(drow, row, lse[i])
		Scale(float32(invN), drow)
		if j := int(t) - lo; j >= 0 && j < local {
			drow[j] -= float32(invN)
		}
	}
}

// maxSumExp returns the largest of the non-empty x and Σ_j exp(x_j - max), the two passes of a
// numerically stable log-sum-exp, its exponentials written a chunk at a time into a buffer on the
// stack (kernels allocate nothing), with the sums expSumRow adds: the same bits as a caller that
// keeps the exponentials.
func maxSumExp(x []float32) (mx float32, sum float64) {
	mx = rowMax(x)
	var buf [lseChunk]float32
	for lo := 0; lo < len(x); lo += lseChunk {
		hi := min(len(x), lo+lseChunk)
		sum += expSumRow(buf[:hi-lo], x[lo:hi], mx) // one chunk, as expSumRow's own
	}
	return mx, sum
}

// lseChunk is the piece of a row maxSumExp and expSumRow sum at a time: 4 KiB of exponentials.
const lseChunk = 1024

// expSumRow sets dst = exp32(x - mx) for mx at least every x and returns Σ dst, summed as
// maxSumExp sums it (expSumMax's float32 lane sums, within 2e-6 of the exact sum relative to it).
func expSumRow(dst, x []float32, mx float32) float64 {
	var sum float64
	for lo := 0; lo < len(x); lo += lseChunk {
		hi := min(len(x), lo+lseChunk)
		sum += expSumMax(dst[lo:hi], x[lo:hi], mx)
	}
	return sum
}
