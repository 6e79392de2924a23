package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// mailbox carries the activations and gradients that pipeline stages send each other, point to
// point: one buffered slot per (dp, tp coordinates, sending stage, receiving stage, microbatch,
// direction), so a message can never be taken by a receive meant for another (the interleaved
// schedule sends activations and gradients both ways between the same two ranks). A send copies
// the payload (as a send into a peer's buffer does) and returns once the slot holds it; a receive
// waits for its message, the run's cancellation or the timeout. A message carries the sender's
// device clock at the send (deviceClock).
type mailbox struct {
	boxes   sync.Map // p2pKey -> chan p2pMsg
	timeout time.Duration
}

type p2pMsg struct {
	data []float32
	at   time.Duration
}

type p2pKey struct {
	dp, tp, from, to, micro int
	grad                    bool
}

func (mb *mailbox) box(k p2pKey) chan p2pMsg {
	if v, ok := mb.boxes.Load(k); ok {
		return v.(chan p2pMsg)
	}
	v, _ := mb.boxes.LoadOrStore(k, make(chan p2pMsg, 1))
	return v.(chan p2pMsg)
}

// send posts a copy of buf, stamped with the sender's device clock at.
func (mb *mailbox) send(ctx context.Context, k p2pKey, buf []float32, at time.Duration) error {
	msg := p2pMsg{data: slices.Clone(buf), at: at}
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

// recv copies its message into buf and returns the sender's device clock at the send.
func (mb *mailbox) recv(ctx context.Context, k p2pKey, buf []float32) (time.Duration, error) {
	t := time.NewTimer(mb.timeout)
	defer t.Stop()
	select {
	case msg := <-mb.box(k):
		if len(msg.data) != len(buf) {
			return 0, fmt.Errorf("exec: pipeline stage %d sent %d elements to stage %d where %d were expected (microbatch %d)", k.from, k.to, len(msg.data), len(buf), k.micro)
		}
		copy(buf, msg.data)
		return msg.at, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("exec: pipeline receive on stage %d from %d (microbatch %d) canceled: %w", k.to, k.from, k.micro, context.Cause(ctx))
	case <-t.C:
		return 0, fmt.Errorf("exec: pipeline stage %d waited %v for microbatch %d from stage %d", k.to, mb.timeout, k.micro, k.from)
	}
}
