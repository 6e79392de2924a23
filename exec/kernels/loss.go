package kernels

import "math"

// CrossEntropy returns the mean over the n rows of logits [n, vocab] of the cross-entropy against
// the class targets [n] (torch.nn.functional.cross_entropy with reduction='mean'):
//
//	loss = (1/n) Σ_i (logsumexp(logits_i) − logits_i[targets_i])
//
// The log-sum-exp subtracts the row maximum first, so large logits neither overflow nor lose the
// loss. If dlogits [n, vocab] is not nil it is overwritten with the gradient of the returned loss,
// (softmax(logits_i) − onehot(targets_i)) / n. dlogits may alias logits.
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
		mx := row[0]
		for _, x := range row[1:] {
			if x > mx {
				mx = x
			}
		}
		var sum float64
		for _, x := range row {
			sum += math.Exp(float64(x - mx))
		}
		lse := float64(mx) + math.Log(sum)
		total += lse - float64(row[t])
		if dlogits != nil {
			drow := dlogits[i*vocab : (i+1)*vocab]
			for j, x := range row {
				drow[j] = float32(math.Exp(float64(x)-lse) * invN)
			}
			drow[t] -= float32(invN)
		}
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
	for i, v := range y {
		d := float64(v) - float64(target[i])
		total += d * d
		if dy != nil {
			dy[i] = float32(2 * d * inv)
		}
	}
	return float32(total * inv)
}
