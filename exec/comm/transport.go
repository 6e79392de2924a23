package comm

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// boxCap is the capacity of each mailbox (one per ordered pair of group members and traffic
// class). Sends complete without waiting for the receiver while fewer than boxCap messages are
// queued, which keeps the ring steps, where every rank sends before it receives, free of deadlock.
const boxCap = 8

// Traffic classes: collectives and point-to-point use separate mailboxes, so that a buffered Send
// is not taken by a collective the receiver calls first.
const (
	classCollective = 0
	classP2P        = 1
	// classAck carries lent messages (newRef) back from their receiver to their sender.
	classAck = 2
)

// msg is one message. Its payload is either owned by the message (newMsg): the receiver owns it
// after the channel hand-off and either forwards it (ring steps) or frees it; or lent (newRef): data
// is a slice of the sender's buffer, which the receiver reads in place (the two-member all-reduce
// also writes the sum into it) and hands back with release,
// and the sender neither writes that slice nor returns before waitAck has it back. The channel
// hand-offs order the sender's writes before the receiver's reads, and those before the sender's
// next writes.
type msg struct {
	kind Kind
	seq  int64 // the sender's collective number on the group (0 for point-to-point)
	data []float32
	lent bool
}

// pools[c] holds messages whose payload capacity is 1<<c elements.
var pools [64]sync.Pool

func sizeClass(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

func newMsg(n int) *msg {
	c := sizeClass(n)
	if v := pools[c].Get(); v != nil {
		m := v.(*msg)
		m.data = m.data[:n]
		return m
	}
	return &msg{data: make([]float32, n, 1<<c)}
}

func freeMsg(m *msg) {
	if m.lent {
		m.data = nil // never pool the sender's buffer
		refPool.Put(m)
		return
	}
	m.data = m.data[:cap(m.data)]
	pools[sizeClass(cap(m.data))].Put(m)
}

// refPool holds the message headers of lent payloads.
var refPool = sync.Pool{New: func() any { return &msg{lent: true} }}

// newRef returns a message that lends data, a slice of the caller's buffer, to its receiver.
func newRef(data []float32) *msg {
	m := refPool.Get().(*msg)
	m.data = data
	return m
}

// groupRun is a group's state during one run: arrival counters and mailboxes.
type groupRun struct {
	gs *groupState
	// entered[i] counts the collectives member i has entered on this group: member i has arrived
	// at collective number k when entered[i] >= k.
	entered []atomic.Int64
	boxes   sync.Map // int key (class, from, to) -> chan *msg, made on first use
}

func (gr *groupRun) box(class, from, to int) chan *msg {
	p := len(gr.gs.ranks)
	key := (class*p+from)*p + to
	if v, ok := gr.boxes.Load(key); ok {
		return v.(chan *msg)
	}
	v, _ := gr.boxes.LoadOrStore(key, make(chan *msg, boxCap))
	return v.(chan *msg)
}

// ErrTimeout is the cause (errors.Is) of a call that failed because a rank did not arrive within
// the World's timeout.
var ErrTimeout = errors.New("comm: timeout")

// ErrMismatch is the cause of a call that received a message from another kind of call, or a
// payload of the wrong length: the ranks of a group called different operations or passed buffers
// of different lengths.
var ErrMismatch = errors.New("comm: mismatched calls")

// Error is the error of a collective or point-to-point call that could not complete.
type Error struct {
	Kind    Kind   // the operation of the failed call
	Dim     string // the dim of its group
	Group   []int  // global ranks of the group
	Peer    int    // global rank of the other side of a send or recv; -1 for collectives
	Missing []int  // global ranks that did not arrive
	Err     error  // the cause: a missing rank's error, the abort cause, ErrTimeout or ErrMismatch
	msg     string

	// rootRank is the rank whose failure caused this one (a missing rank that failed), or -1.
	rootRank int
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// op is one call of one rank on one group.
type op struct {
	g       *Group
	st      *runState
	gr      *groupRun
	kind    Kind
	seq     int64 // collective number on the group; 0 for point-to-point
	peer    int   // group index of the point-to-point peer; -1 for collectives
	elems   int
	timer   *time.Timer
	timeout <-chan time.Time
	start   time.Time
	msgs    int64
	bytes   int64
}

// begin starts a call. ok is false for a group of size 1: the call is a no-op.
func (g *Group) begin(kind Kind, peer, elems int) (o op, ok bool) {
	if len(g.gs.ranks) == 1 {
		return op{}, false
	}
	st := g.c.w.st.Load()
	o = op{g: g, st: st, gr: st.groups[g.gs.id], kind: kind, peer: peer, elems: elems}
	if peer < 0 {
		o.seq = o.gr.entered[g.index].Add(1)
	}
	if d := g.c.w.opts.timeout; d > 0 {
		o.timer = time.NewTimer(d)
		o.timeout = o.timer.C
	}
	if g.c.w.opts.tracer != nil {
		o.start = time.Now()
	}
	return o, true
}

// end finishes a call: it records the counters and the trace event, and aborts the world when the
// call failed (the group's mailboxes are then in an unknown state).
func (o *op) end(err error) error {
	if o.timer != nil {
		o.timer.Stop()
	}
	c := o.g.c
	statKind := o.kind
	if statKind == KindRecv {
		statKind = "" // a recv sends nothing; it has no Stats row
	}
	if statKind != "" {
		c.count(Key{statKind, o.g.gs.dim}, o.msgs, o.bytes)
	}
	if err != nil {
		// Abort with the root cause, so that the world's cause is the same whichever rank notices
		// a failed rank first.
		if e, ok := err.(*Error); ok && e.rootRank >= 0 {
			o.st.abortWith(e.rootRank, e.Err)
		} else {
			o.st.abortWith(c.rank, err)
		}
	}
	if t := c.w.opts.tracer; t != nil {
		peer := -1
		if o.peer >= 0 {
			peer = o.g.gs.ranks[o.peer]
		}
		t.Trace(Event{
			Rank: c.rank, Kind: o.kind, Dim: o.g.gs.dim, Group: o.g.gs.ranks, Peer: peer,
			Elems: o.elems, Messages: o.msgs, Bytes: o.bytes, Start: o.start, End: time.Now(), Err: err,
		})
	}
	return err
}

// checkAborted fails the call at once if the world was already aborted.
func (o *op) checkAborted() error {
	select {
	case <-o.st.abort:
		return o.fail(-1, whyAbort)
	default:
		return nil
	}
}

// send puts m in the mailbox to group member to. On failure m is freed.
func (o *op) send(class, to int, m *msg) error {
	m.kind, m.seq = o.kind, o.seq
	bytes := 4 * int64(len(m.data)) // read before the hand-off: then the receiver owns m
	box := o.gr.box(class, o.g.index, to)
	select {
	case box <- m:
	default:
		select {
		case box <- m:
		case <-o.st.exited[o.g.gs.ranks[to]]:
			freeMsg(m)
			return o.fail(to, whyExited)
		case <-o.st.abort:
			freeMsg(m)
			return o.fail(-1, whyAbort)
		case <-o.timeout:
			freeMsg(m)
			return o.fail(to, whyTimeout)
		}
	}
	o.msgs++
	o.bytes += bytes
	return nil
}

// release hands a received message back: a lent one to its sender (group member from), which waits
// for it in waitAck; an owned one to the pools.
func (o *op) release(from int, m *msg) {
	if !m.lent {
		freeMsg(m)
		return
	}
	select {
	case o.gr.box(classAck, o.g.index, from) <- m:
	default:
		// Cannot happen: a sender lends one message at a time per peer and waits for it.
	}
}

// waitAck waits until group member to has released m, a lent message this call sent it on class,
// so that the caller may write the lent slice again or return. A receiver releases a message right
// after reading it, so once it has taken m the wait is short and ends only with the release (or the
// receiver's return, after which it reads nothing): an abort does not end it. Before that, the
// timeout takes m back out of the mailbox and fails the call.
func (o *op) waitAck(class, to int, m *msg) error {
	ack := o.gr.box(classAck, to, o.g.index)
	if got := spinRecv(ack); got != nil {
		return o.acked(to, m, got)
	}
	select {
	case got := <-ack:
		return o.acked(to, m, got)
	case <-o.st.exited[o.g.gs.ranks[to]]:
	case <-o.timeout:
		if o.takeBack(class, to, m) {
			return o.fail(to, whyTimeout)
		}
	}
	return o.awaitRelease(to, m)
}

// reclaim ends a lend on an error path: it takes m back if the receiver has not taken it yet and
// otherwise waits for the release. Either way nobody reads the lent slice afterwards.
func (o *op) reclaim(class, to int, m *msg) {
	if !o.takeBack(class, to, m) {
		o.awaitRelease(to, m)
	}
}

// takeBack takes m out of the mailbox to group member to if it is still there.
func (o *op) takeBack(class, to int, m *msg) bool {
	select {
	case got := <-o.gr.box(class, o.g.index, to):
		if got == m {
			freeMsg(m)
			return true
		}
		// An earlier message, which cannot be there: a sender waits for each lend's release
		// before it sends again. The run is failing; drop it.
	default:
	}
	return false
}

// awaitRelease waits for the release of m by group member to, or for its return.
func (o *op) awaitRelease(to int, m *msg) error {
	box := o.gr.box(classAck, to, o.g.index)
	select {
	case got := <-box:
		return o.acked(to, m, got)
	case <-o.st.exited[o.g.gs.ranks[to]]:
		select {
		case got := <-box: // released before it returned
			return o.acked(to, m, got)
		default:
			return o.fail(to, whyExited)
		}
	}
}

func (o *op) acked(to int, m, got *msg) error {
	if got != m {
		return o.errorf(ErrMismatch, nil, "rank %d released a message this call did not lend it", o.g.gs.ranks[to])
	}
	freeMsg(m)
	return nil
}

// recv takes the next message from group member from and checks that it belongs to this call and
// holds n elements (any number if n < 0).
func (o *op) recv(class, from, n int) (*msg, error) {
	box := o.gr.box(class, from, o.g.index)
	m := spinRecv(box)
	if m == nil {
		select {
		case m = <-box:
		case <-o.st.exited[o.g.gs.ranks[from]]:
			select {
			case m = <-box: // sent before it returned
			default:
				return nil, o.fail(from, whyExited)
			}
		case <-o.st.abort:
			return nil, o.fail(-1, whyAbort)
		case <-o.timeout:
			return nil, o.fail(from, whyTimeout)
		}
	}
	sender := o.g.gs.ranks[from]
	want := o.kind
	if want == KindRecv {
		want = KindSend
	}
	if m.kind != want || m.seq != o.seq {
		what := fmt.Sprintf("a %s message", m.kind)
		if m.kind == want {
			what = fmt.Sprintf("a message of its %s number %d on this group while this rank is at number %d", m.kind, m.seq, o.seq)
		}
		o.release(from, m)
		return nil, o.errorf(ErrMismatch, nil, "rank %d sent %s (the ranks of the group called operations in different orders)", sender, what)
	}
	if n >= 0 && len(m.data) != n {
		got := len(m.data)
		o.release(from, m)
		return nil, o.errorf(ErrMismatch, nil, "rank %d sent %d elements where %d were expected (buffer lengths differ across ranks)", sender, got, n)
	}
	return m, nil
}

type why int

const (
	whyAbort   why = iota // the world was aborted
	whyExited             // the peer's function returned
	whyTimeout            // the timeout fired
)

func (o *op) errorf(cause error, missing []int, format string, args ...any) *Error {
	gs := o.g.gs
	var b strings.Builder
	fmt.Fprintf(&b, "comm: %s on %s", o.kind, groupString(gs))
	peer := -1
	if o.peer >= 0 {
		peer = gs.ranks[o.peer]
		if o.kind == KindRecv {
			fmt.Fprintf(&b, " from rank %d", peer)
		} else {
			fmt.Fprintf(&b, " to rank %d", peer)
		}
	}
	b.WriteString(": ")
	fmt.Fprintf(&b, format, args...)
	return &Error{Kind: o.kind, Dim: gs.dim, Group: slices.Clone(gs.ranks), Peer: peer, Missing: missing, Err: cause, msg: b.String(), rootRank: -1}
}

// fail builds the error of a call that can not complete. peer is the group index of the member the
// call was waiting for, or -1.
func (o *op) fail(peer int, w why) error {
	gs, st := o.g.gs, o.st
	// The ranks that did not arrive: for a collective, the members that have not entered it; for a
	// point-to-point call, the peer.
	var candidates []int
	if o.peer >= 0 {
		candidates = []int{o.peer}
	} else {
		for j := range gs.ranks {
			if j != o.g.index && o.gr.entered[j].Load() < o.seq {
				candidates = append(candidates, j)
			}
		}
	}
	// Name the ranks that have returned if there are any: they are why the others wait.
	var gone, running []int
	for _, j := range candidates {
		exited, _ := st.status(gs.ranks[j])
		// Look at entered again after the status: a member may have entered the collective and
		// failed inside it since the scan above, and then it did arrive (its own error names why).
		if o.peer < 0 && o.gr.entered[j].Load() >= o.seq {
			continue
		}
		if exited {
			gone = append(gone, gs.ranks[j])
		} else {
			running = append(running, gs.ranks[j])
		}
	}
	missing := gone
	if len(missing) == 0 {
		missing = running
	}
	within := ""
	if w == whyTimeout {
		within = fmt.Sprintf(" within %v", o.g.c.w.opts.timeout)
	}
	var parts []string
	var cause error
	root := -1
	for _, r := range missing {
		exited, err := st.status(r)
		parts = append(parts, fmt.Sprintf("rank %d did not arrive%s (%s)", r, within, statusText(exited, err)))
		if cause == nil && err != nil {
			cause, root = err, r
		}
	}
	if len(missing) == 0 && w == whyExited && peer >= 0 {
		r := gs.ranks[peer]
		exited, err := st.status(r)
		parts = append(parts, fmt.Sprintf("rank %d returned before completing it (%s)", r, statusText(exited, err)))
		if err != nil {
			cause, root = err, r
		}
	}
	if len(gone) == 0 {
		switch w {
		case whyAbort:
			parts = append(parts, "aborted: "+st.cause.Error())
			cause = st.cause
		case whyTimeout:
			if len(missing) == 0 {
				parts = append(parts, fmt.Sprintf("timed out after %v", o.g.c.w.opts.timeout))
			}
			cause = ErrTimeout
		}
	}
	e := o.errorf(cause, missing, "%s", strings.Join(parts, "; "))
	e.rootRank = root
	return e
}

func statusText(exited bool, err error) string {
	switch {
	case !exited:
		return "it is still running"
	case err != nil:
		return "it failed: " + err.Error()
	default:
		return "it returned"
	}
}

// spinPolls is how many times a rank polls a mailbox, yielding between polls, before it blocks
// on it. A goroutine that blocks on a channel parks, and when its processor finds nothing else to
// run its thread sleeps in the kernel: the peer's send must then wake it (a futex wake and a
// reschedule; on a virtual machine the host must also wake the halted vCPU, hundreds of
// microseconds, milliseconds on a busy host), which a collective pays at every step and every
// rank pays at every step's all-reduce while the slower rank finishes its backward. Polling keeps
// the thread awake, as a GPU's collective kernel spins; runtime.Gosched lets the processor run
// other ranks meanwhile, so ranks that outnumber the cores still take turns. A poll and a yield
// with nothing else to run take about 0.1 us here, so the spin lasts up to about 8 ms, longer than
// the skew of two ranks over one step's backward. Calibrate's contention mix (two ranks of a
// one-core GEMM and adds meeting at an all-reduce after each) measured 1.89x the time of one rank
// alone with 512 polls, 1.03-1.22x with 4096 to 16384; from 4096 to 65536 polls the exposed
// communication compare measured fell from 13% to 10% of the step on dp=2, from 11-12% to 7-9% on
// tp=2 and from 17-20% to 16-17% on ZeRO-3 dp=2 (two runs of each, alternating), with dp=4 and
// tp=4 (4 ranks on 2 cores) unchanged. It is bounded by count, not by the clock, so that a fake
// clock (testing/synctest) cannot make it endless.
const spinPolls = 1 << 16

// spinRecv polls box up to spinPolls times; nil when nothing came.
func spinRecv(box chan *msg) *msg {
	for range spinPolls {
		select {
		case m := <-box:
			return m
		default:
		}
		runtime.Gosched()
	}
	return nil
}
