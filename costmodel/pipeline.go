package costmodel

import (
	"fmt"
	"sync"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// pipelineEnds lays out one step of a pipeline: every pipeline rank runs the forward and
// backward tasks of its model chunks in the order of st's schedule (program.AppendSchedule, the order
// the simulator follows), a task starts when the rank is free and, but on the first stage's
// forward and the last stage's backward, when the neighbouring stage's task of the same
// microbatch has ended (its send is the last op of that task, the receive the first of this one,
// as program.Lower emits them). Virtual stage i's forward takes f[i] and its backward b[i] per
// microbatch. It returns when each rank's last task ends: the longest path through the
// schedule, which is the simulator's timeline when no communication overlaps compute.
//
// compose's bound is a lower bound of it that costs O(pp) instead of O(pp v m): every schedule
// starts rank r with the forward of microbatch 0 on its first chunk, after it has passed stages
// 0..r-1, and ends every rank with the backward of microbatch m-1 on its first chunk, which
// stages r-1..0 then run in turn, so rank 0 ends no earlier than sum_{i<r} f_i + (rank r's busy
// time) + sum_{i<r} b_i, and rank r no earlier than sum_{i<r} f_i + its busy time. For equal
// stages of one chunk that is (m + p - 1)(f + b), the timeline itself.
func pipelineEnds(st strategies.Strategy, microbatches int, f, b []units.Seconds) ([]units.Seconds, error) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	e, err := sc.ends(st, microbatches, f, b)
	if err != nil {
		return nil, err
	}
	return append([]units.Seconds(nil), e...), nil
}

// scratch holds pipelineEnds' buffers, reused across calls.
type scratch struct {
	end   []units.Seconds
	tasks []program.Task
	off   []int
	next  []int
	free  []units.Seconds
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// ends lays out m microbatches; the result lives in sc.free until the next call.
func (sc *scratch) ends(st strategies.Strategy, m int, f, b []units.Seconds) ([]units.Seconds, error) {
	pp, v := st.Mesh.PP, st.VPP
	nv := pp * v
	sc.end = grow(sc.end, 2*nv*m)
	fEnd, bEnd := sc.end[:nv*m], sc.end[nv*m:]
	for i := range sc.end {
		sc.end[i] = -1
	}
	sc.tasks = sc.tasks[:0]
	sc.off = append(sc.off[:0], 0)
	var err error
	for r := 0; r < pp; r++ {
		if sc.tasks, err = program.AppendSchedule(sc.tasks, st.Schedule, pp, v, m, r); err != nil {
			return nil, err
		}
		sc.off = append(sc.off, len(sc.tasks))
	}
	sc.next = append(sc.next[:0], sc.off[:pp]...)
	free := grow(sc.free, pp)
	sc.free = free
	for r := range free {
		free[r] = 0
	}
	left := len(sc.tasks)
	for left > 0 {
		moved := false
		for r := 0; r < pp; r++ {
			for sc.next[r] < sc.off[r+1] {
				t := sc.tasks[sc.next[r]]
				i := t.Chunk*pp + r
				ready := free[r]
				if !t.Backward && i > 0 {
					d := fEnd[(i-1)*m+t.Micro]
					if d < 0 {
						break
					}
					ready = max(ready, d)
				}
				if t.Backward && i < nv-1 {
					d := bEnd[(i+1)*m+t.Micro]
					if d < 0 {
						break
					}
					ready = max(ready, d)
				}
				if t.Backward {
					free[r] = ready + b[i]
					bEnd[i*m+t.Micro] = free[r]
				} else {
					free[r] = ready + f[i]
					fEnd[i*m+t.Micro] = free[r]
				}
				sc.next[r]++
				left--
				moved = true
			}
		}
		if !moved {
			return nil, fmt.Errorf("costmodel: the %s schedule of pp=%d, vpp=%d, %d microbatches deadlocks", st.Schedule, pp, v, m)
		}
	}
	return free, nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
