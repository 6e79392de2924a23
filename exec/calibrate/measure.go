package calibrate

import (
	"context"
	"time"
)

// sampler times a function: a warm-up call, a timed call, then reps repetitions, each calling
// the function back to back in batches until budget/reps has passed (at least one call); the
// result is the median over repetitions of the mean time per call. A point thus costs about
// budget (plus a batch, an eighth of a repetition, at most), or reps+2 calls when one call takes
// longer than budget/reps: the calibration's duration is bounded whatever the machine does
// meanwhile.
type sampler struct {
	budget time.Duration
	reps   int
}

// maxBatch bounds the calls between two clock reads.
const maxBatch = 1 << 20

// seconds returns the median time of one call of fn in seconds. It returns ctx's error when ctx is
// done before the measurement starts.
func (s sampler) seconds(ctx context.Context, fn func()) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	fn() // warm-up: first-touch page faults, code and data into cache
	t := time.Now()
	fn()
	one := time.Since(t)
	reps := max(1, s.reps)
	per := s.budget / time.Duration(reps)
	// Read the clock about 8 times per repetition (its cost, tens of ns, is then spread over
	// many calls of a fast function).
	batch := 1
	if one < per/8 {
		batch = int(min(int64(per/8/max(one, 1)), maxBatch))
	}
	times := make([]float64, 0, reps)
	for range reps {
		calls := 0
		t := time.Now()
		for {
			for range batch {
				fn()
			}
			calls += batch
			if d := time.Since(t); d >= per {
				times = append(times, d.Seconds()/float64(calls))
				break
			}
		}
	}
	return median(times), nil
}

// each times every function of fns as seconds does, but interleaved: every repetition times each
// function in turn, so that the repetitions of one function are spread over the whole
// measurement. A shared virtual machine switches between speeds within tens of milliseconds (a
// neighbour on the same physical core: the same layernorm takes 62 or 90 µs from one quarter
// second to the next); timed one after the other, each kernel would see one speed, at random.
// Interleaved, every kernel's median sees the mix of speeds a training step meets. It returns
// ctx's error when ctx is done before a repetition starts.
func (s sampler) each(ctx context.Context, fns []func()) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reps := max(1, s.reps)
	per := s.budget / time.Duration(reps)
	batch := make([]int, len(fns))
	for i, fn := range fns {
		fn() // warm-up: first-touch page faults, code and data into cache
		t := time.Now()
		fn()
		one := time.Since(t)
		batch[i] = 1
		if one < per/8 {
			batch[i] = int(min(int64(per/8/max(one, 1)), maxBatch))
		}
	}
	times := make([][]float64, len(fns))
	for range reps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, fn := range fns {
			calls := 0
			t := time.Now()
			for {
				for range batch[i] {
					fn()
				}
				calls += batch[i]
				if d := time.Since(t); d >= per {
					times[i] = append(times[i], d.Seconds()/float64(calls))
					break
				}
			}
		}
	}
	out := make([]float64, len(fns))
	for i := range fns {
		out[i] = median(times[i])
	}
	return out, nil
}

// itersFor is the number of calls that fill budget when one call takes one (at least 1, at
// most maxBatch).
func itersFor(budget time.Duration, one float64) int {
	if !(one > 0) {
		return 1
	}
	return int(max(1, min(budget.Seconds()/one, maxBatch)))
}
