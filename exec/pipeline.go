package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tpsim/tpsim/strategies"
)

// action is one entry of a pipeline rank's schedule: the forward or backward of one model chunk
// (the chunk-th virtual stage this rank holds) on one microbatch.
type action struct {
	Backward bool
	Chunk    int
	Micro    int
}

func (a action) String() string {
	k := "F"
	if a.Backward {
		k = "B"
	}
	return fmt.Sprintf("%s%d.%d", k, a.Chunk, a.Micro)
}

// Schedule returns the order in which pipeline rank rank of pp runs the forwards and backwards of
// m microbatches over vpp model chunks under schedule sched:
//
//   - gpipe (Huang et al. 2019): every forward, then every backward (in reverse, as autograd
//     unwinds the accumulated microbatches);
//   - 1f1b (PipeDream-Flush, Narayanan et al. 2021 §2.2.1): pp-rank-1 warm-up forwards, then one
//     forward and one backward alternately, then the remaining backwards;
//   - interleaved (Narayanan et al. 2021 §2.2.2): 1F1B over m*vpp virtual microbatches, Megatron-LM's
//     forward_backward_pipelining_with_interleaving: warm-up (pp-rank-1)*2 + (vpp-1)*pp (all of
//     them when m == pp), virtual microbatch k running chunk (k/pp) mod vpp forward and
//     vpp-1-(k/pp) mod vpp backward, on microbatch (k/(pp*vpp))*pp + k mod pp.
func Schedule(sched strategies.Schedule, pp, vpp, rank, m int) []action {
	var out []action
	switch sched {
	case strategies.ScheduleGPipe:
		for i := 0; i < m; i++ {
			out = append(out, action{Micro: i})
		}
		for i := m - 1; i >= 0; i-- {
			out = append(out, action{Backward: true, Micro: i})
		}
		return out
	case strategies.ScheduleInterleaved:
	default:
		vpp = 1
	}
	total := m * vpp
	warm := min(pp-rank-1, total)
	if vpp > 1 {
		warm = min((pp-rank-1)*2+(vpp-1)*pp, total)
		if m == pp {
			warm = total
		}
	}
	at := func(k int, bwd bool) action {
		c := (k / pp) % vpp
		if bwd {
			c = vpp - 1 - c
		}
		return action{Backward: bwd, Chunk: c, Micro: (k/(pp*vpp))*pp + k%pp}
	}
	for k := 0; k < warm; k++ {
		out = append(out, at(k, false))
	}
	rest := total - warm
	for k := 0; k < rest; k++ {
		out = append(out, at(warm+k, false), at(k, true))
	}
	for k := rest; k < total; k++ {
		out = append(out, at(k, true))
	}
	return out
}

// mailbox carries the activations and gradients that pipeline stages send each other, point to
// point: one buffered slot per (dp, tp coordinates, sending stage, receiving stage, microbatch,
// direction), so a message can never be taken by a receive meant for another (the interleaved
// schedule sends activations and gradients both ways between the same two ranks). A send copies
// the payload (as a send into a peer's buffer does) and returns once the slot holds it; a receive
// waits for its message, the run's cancellation or the timeout.
type mailbox struct {
	boxes   sync.Map // p2pKey -> chan []float32
	timeout time.Duration
}

type p2pKey struct {
	dp, tp, from, to, micro int
	grad                    bool
}

func (mb *mailbox) box(k p2pKey) chan []float32 {
	if v, ok := mb.boxes.Load(k); ok {
		return v.(chan []float32)
	}
	v, _ := mb.boxes.LoadOrStore(k, make(chan []float32, 1))
	return v.(chan []float32)
}

func (mb *mailbox) send(ctx context.Context, k p2pKey, buf []float32) error {
	msg := slices.Clone(buf)
	t := time.NewTimer(mb.timeout)
	defer t.Stop()
	select {
	case mb.box(k) <- msg:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("exec: pipeline send from stage %d to %d (microbatch %d) canceled: %w", k.from, k.to, k.micro, context.Cause(ctx))
	case <-t.C:
		return fmt.Errorf("exec: pipeline send from stage %d to %d (microbatch %d) waited %v for the receiver", k.from, k.to, k.micro, mb.timeout)
	}
}

func (mb *mailbox) recv(ctx context.Context, k p2pKey, buf []float32) error {
	t := time.NewTimer(mb.timeout)
	defer t.Stop()
	select {
	case msg := <-mb.box(k):
		if len(msg) != len(buf) {
			return fmt.Errorf("exec: pipeline stage %d sent %d elements to stage %d where %d were expected (microbatch %d)", k.from, k.to, len(msg), len(buf), k.micro)
		}
		copy(buf, msg)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("exec: pipeline receive on stage %d from %d (microbatch %d) canceled: %w", k.to, k.from, k.micro, context.Cause(ctx))
	case <-t.C:
		return fmt.Errorf("exec: pipeline stage %d waited %v for microbatch %d from stage %d", k.to, mb.timeout, k.micro, k.from)
	}
}
