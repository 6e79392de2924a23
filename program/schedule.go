package program

import (
	"fmt"
	"slices"

	"github.com/tpsim/tpsim/strategies"
)

// Task is one unit of a pipeline schedule: the forward or backward of microbatch Micro on model
// chunk Chunk of the rank.
type Task struct {
	Chunk, Micro int
	Backward     bool
}

// String is "F" or "B", the chunk and the microbatch: "F1.3" is chunk 1's forward of microbatch 3.
func (t Task) String() string {
	k := "F"
	if t.Backward {
		k = "B"
	}
	return fmt.Sprintf("%s%d.%d", k, t.Chunk, t.Micro)
}

// AppendSchedule appends to out the order in which pipeline rank r of p runs its tasks with m
// microbatches and v model chunks, the order exec runs, the cost model and the simulator lay out:
//
//   - gpipe (Huang et al. 2019): every forward, then every backward in reverse, as autograd
//     unwinds the accumulated microbatches;
//   - 1f1b (PipeDream-Flush, Narayanan et al. 2021 §2.2.1): p - r - 1 warm-up forwards, then one
//     forward and one backward alternately, then the remaining backwards;
//   - interleaved (Narayanan et al. 2021 §2.2.2): 1F1B over m v virtual microbatches, as
//     Megatron-LM's forward_backward_pipelining_with_interleaving runs them: (p - r - 1) 2 +
//     (v - 1) p warm-up forwards (all of them when m == p), virtual microbatch k running chunk
//     (k/p) mod v forward and v - 1 - (k/p) mod v backward, on microbatch (k/(p v)) p + k mod p.
func AppendSchedule(out []Task, kind strategies.Schedule, p, v, m, r int) ([]Task, error) {
	out = slices.Grow(out, 2*m*max(v, 1)) // every microbatch's forward and backward on each chunk
	switch kind {
	case strategies.ScheduleGPipe:
		for j := 0; j < m; j++ {
			out = append(out, Task{0, j, false})
		}
		for j := m - 1; j >= 0; j-- {
			out = append(out, Task{0, j, true})
		}
		return out, nil
	case strategies.Schedule1F1B:
		warm := min(p-r-1, m)
		for j := 0; j < warm; j++ {
			out = append(out, Task{0, j, false})
		}
		for i := 0; i < m-warm; i++ {
			out = append(out, Task{0, warm + i, false}, Task{0, i, true})
		}
		for j := m - warm; j < m; j++ {
			out = append(out, Task{0, j, true})
		}
		return out, nil
	case strategies.ScheduleInterleaved:
		if m%p != 0 {
			return nil, fmt.Errorf("program: the interleaved schedule needs the %d microbatches to be a multiple of pp=%d", m, p)
		}
		total := m * v
		chunk := func(k int, fwd bool) int {
			c := (k % (p * v)) / p
			if !fwd {
				c = v - 1 - c
			}
			return c
		}
		micro := func(k int) int { return (k/(p*v))*p + k%p }
		warm := min((p-r-1)*2+(v-1)*p, total)
		if m == p {
			warm = total
		}
		for k := 0; k < warm; k++ {
			out = append(out, Task{chunk(k, true), micro(k), false})
		}
		for i := 0; i < total-warm; i++ {
			k := warm + i
			out = append(out, Task{chunk(k, true), micro(k), false}, Task{chunk(i, false), micro(i), true})
		}
		for k := total - warm; k < total; k++ {
			out = append(out, Task{chunk(k, false), micro(k), true})
		}
		return out, nil
	}
	return nil, fmt.Errorf("program: unknown schedule %q; valid: %s, %s, %s", kind, strategies.ScheduleGPipe, strategies.Schedule1F1B, strategies.ScheduleInterleaved)
}
