package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
)

// mailbox carries the activations and gradients that pipeline stages send each other, point to
// point: one buffered slot per (dp, tp coordinates, sending stage, receiving stage, microbatch,
// direction), so a message can never be taken by a receive meant for another (the interleaved
// schedule sends activations and gradients both ways between the same two ranks). A send copies
// the payload (as a send into a peer's buffer does) and returns once the slot holds it; a receive
// waits for its message, the run's cancellation or the timeout (an error that names both ranks,
// the transfer and wraps comm.ErrTimeout). A message carries the sender's
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

// what names a transfer of key k in an error: "microbatch 2's activation" or "the tied
// embedding's gradient".
func (k p2pKey) what() string {
	switch {
	case k.micro < 0:
		return "the tied embedding's gradient"
	case k.grad:
		return fmt.Sprintf("microbatch %d's gradient", k.micro)
	}
	return fmt.Sprintf("microbatch %d's activation", k.micro)
}

// send posts a copy of buf, stamped with the sender's device clock at; peer is the receiver's
// global rank, for the errors (comm.RunError names the rank that sends).
func (mb *mailbox) send(ctx context.Context, k p2pKey, buf []float32, at time.Duration, peer int) error {
	msg := p2pMsg{data: slices.Clone(buf), at: at}
	box := mb.box(k)
	select {
	case box <- msg:
		return nil
	default:
	}
	t := time.NewTimer(mb.timeout)
	defer t.Stop()
	select {
	case box <- msg:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("exec: pipeline send of %s from stage %d to stage %d on rank %d canceled: %w", k.what(), k.from, k.to, peer, context.Cause(ctx))
	case <-t.C:
		return fmt.Errorf("exec: pipeline send of %s from stage %d to stage %d on rank %d waited %v for rank %d to take the last one: %w", k.what(), k.from, k.to, peer, mb.timeout, peer, comm.ErrTimeout)
	}
}

// recv copies its message into buf and returns the sender's device clock at the send; peer is the
// sender's global rank, for the errors (comm.RunError names the rank that receives).
func (mb *mailbox) recv(ctx context.Context, k p2pKey, buf []float32, peer int) (time.Duration, error) {
	box := mb.box(k)
	var msg p2pMsg
	select {
	case msg = <-box:
	default:
		t := time.NewTimer(mb.timeout)
		defer t.Stop()
		select {
		case msg = <-box:
		case <-ctx.Done():
			return 0, fmt.Errorf("exec: pipeline recv of %s on stage %d from stage %d on rank %d canceled: %w", k.what(), k.to, k.from, peer, context.Cause(ctx))
		case <-t.C:
			return 0, fmt.Errorf("exec: pipeline recv of %s on stage %d from stage %d on rank %d: rank %d did not send it within %v: %w", k.what(), k.to, k.from, peer, peer, mb.timeout, comm.ErrTimeout)
		}
	}
	if len(msg.data) != len(buf) {
		return 0, fmt.Errorf("exec: pipeline stage %d on rank %d sent %d elements to stage %d where %d were expected (%s)", k.from, peer, len(msg.data), k.to, len(buf), k.what())
	}
	copy(buf, msg.data)
	return msg.at, nil
}
