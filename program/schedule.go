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

// Schedule returns the order in which pipeline rank r of p runs its tasks with m microbatches and
// v model chunks (Narayanan et al. 2021 §2.2; Megatron-LM's schedules.py for the interleaved
// warm-up count (p - r - 1)*2 + (v - 1)*p).
func Schedule(kind strategies.Schedule, p, v, m, r int) ([]Task, error) {
	return AppendSchedule(nil, kind, p, v, m, r)
}

// AppendSchedule appends Schedule's tasks to out.
func AppendSchedule(out []Task, kind strategies.Schedule, p, v, m, r int) ([]Task, error) {
	out = slices.Grow(out, 2*m*max(v, 1)) // every microbatch's forward and backward on each chunk
	switch kind {
	case strategies.ScheduleGPipe:
		for j := 0; j < m; j++ {
			out = append(out, Task{0, j, false})
		}
		for j := 0; j < m; j++ {
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
