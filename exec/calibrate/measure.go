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

// each times every function of fns interleaved, as a training step runs its kernels: a pass
// calls each function once in turn (a few times back to back only when one call is shorter than
// eachMinSample, so that the clock's cost stays small), timing each, and the passes repeat until
// about len(fns) x budget has passed (at least reps passes); each function's time is the median
// over the passes. Back to back, a kernel finds its data, code and branch history as it left
// them; in a step it follows other kernels, and on a shared virtual machine, which switches
// between speeds within tens of milliseconds (a neighbour on the same physical core: the same
// layernorm takes 62 or 90 µs from one quarter second to the next), interleaving also lets every
// kernel's median see the same mix of speeds a step meets. It returns ctx's error when ctx is
// done before a pass starts.
func (s sampler) each(ctx context.Context, fns []func()) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	batch := make([]int, len(fns))
	var pass time.Duration
	for i, fn := range fns {
		fn() // warm-up: first-touch page faults, code and data into cache
		t := time.Now()
		fn()
		one := time.Since(t)
		batch[i] = 1
		if one < eachMinSample {
			batch[i] = int(eachMinSample/max(one, 1)) + 1
		}
		pass += one * time.Duration(batch[i])
	}
	passes := max(1, s.reps)
	if pass > 0 {
		passes = int(min(max(int64(passes), int64(s.budget)*int64(len(fns))/int64(pass)), eachMaxPasses))
	}
	times := make([][]float64, len(fns))
	for range passes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i, fn := range fns {
			t := time.Now()
			for range batch[i] {
				fn()
			}
			times[i] = append(times[i], time.Since(t).Seconds()/float64(batch[i]))
		}
	}
	out := make([]float64, len(fns))
	for i := range fns {
		out[i] = median(times[i])
	}
	return out, nil
}

// eachMinSample is the shortest timing each takes of one function: below it a call is repeated
// back to back, so that two clock reads (tens of ns) stay under 1% of it.
const eachMinSample = 5 * time.Microsecond

// eachMaxPasses bounds each's passes over functions of a few microseconds.
const eachMaxPasses = 400

// itersFor is the number of calls that fill budget when one call takes one (at least 1, at
// most maxBatch).
func itersFor(budget time.Duration, one float64) int {
	if !(one > 0) {
		return 1
	}
	return int(max(1, min(budget.Seconds()/one, maxBatch)))
}
