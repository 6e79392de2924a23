package comm

import (
	"fmt"
	"unsafe"

	"github.com/tpsim/tpsim/exec/kernels"
)

// broadcastSegment is the pipeline segment of Broadcast, in elements (256 KiB of float32).
const broadcastSegment = 1 << 16

// ChunkBounds returns the element range [lo, hi) of chunk i when n elements are split into p
// chunks in order: the first n%p chunks have n/p+1 elements, the others n/p (as
// torch.tensor_split). It panics if n < 0, p < 1 or i is not in [0, p).
func ChunkBounds(n, p, i int) (lo, hi int) {
	if n < 0 || p < 1 || i < 0 || i >= p {
		panic(fmt.Sprintf("comm: ChunkBounds(%d, %d, %d): want n >= 0, p >= 1 and 0 <= i < p", n, p, i))
	}
	q, r := n/p, n%p
	lo = i*q + min(i, r)
	hi = lo + q
	if i < r {
		hi++
	}
	return lo, hi
}

func mod(a, p int) int { return ((a % p) + p) % p }

func (g *Group) panicf(kind Kind, format string, args ...any) {
	panic(fmt.Sprintf("comm: %s on %s: ", kind, g) + fmt.Sprintf(format, args...))
}

// AllReduce replaces buf on every member by the elementwise sum of all members' buf, with the ring
// algorithm: a reduce-scatter then an all-gather over Size() chunks (ChunkBounds). Every member
// ends with the same bits. A rank sends 2(p-1) messages and, for n = len(buf) divisible by p,
// 2(p-1)/p*n*4 bytes; in general 4*(2n - |chunk i| - |chunk i+1 mod p|) for Index() i.
// All members must pass buffers of the same length.
func (g *Group) AllReduce(buf []float32) error {
	o, ok := g.begin(KindAllReduce, -1, len(buf))
	if !ok {
		return nil
	}
	return o.end(o.allReduce(buf))
}

func (o *op) allReduce(buf []float32) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	if o.g.Size() == 2 {
		return o.allReducePair(buf)
	}
	if err := o.reduceScatterInPlace(buf); err != nil {
		return err
	}
	return o.allGatherRing(buf)
}

// allReducePair is the ring all-reduce of two members with its all-gather folded into the
// reduce-scatter. In the ring, member r lends chunk q (q = 1-r, the peer) to q, which adds it into
// its own chunk q; then q lends its summed chunk back and r copies it in. Here q writes the sum
// into both buffers in the pass that adds them (kernels.AddBoth), so the sum reaches r's buffer
// without being read again from memory: each member reads and writes its chunk of both buffers
// once (2n elements of traffic instead of the ring's 2.5n). The write-back is the all-gather's
// message, |chunk q| elements that really move from q's sum into r's buffer, and it is counted as
// one (so the counters are the ring's: 2 messages, 4n bytes per member). The sum is b_q + b_r
// elementwise, the bits of the ring's sum in either order.
func (o *op) allReducePair(buf []float32) error {
	r, n := o.g.index, len(buf)
	q := 1 - r
	lo, hi := ChunkBounds(n, 2, q)
	out := newRef(buf[lo:hi]) // q sums it in place and releases it
	if err := o.send(classCollective, q, out); err != nil {
		return err
	}
	lo, hi = ChunkBounds(n, 2, r)
	in, err := o.recv(classCollective, q, hi-lo)
	if err != nil {
		o.reclaim(classCollective, q, out) // so that q no longer reads or writes buf
		return err
	}
	if !in.lent {
		o.release(q, in)
		o.reclaim(classCollective, q, out)
		return o.errorf(ErrMismatch, nil, "rank %d sent its chunk as a copy where the pair all-reduce lends it", o.g.gs.ranks[q])
	}
	kernels.AddBoth(buf[lo:hi], in.data)
	o.release(q, in)
	o.msgs++ // the sum written back into q's buffer: the all-gather's message
	o.bytes += 4 * int64(hi-lo)
	return o.waitAck(classCollective, q, out)
}

// ReduceScatter sets dst to chunk Index() (ChunkBounds(len(src), Size(), Index())) of the
// elementwise sum of all members' src, with the ring algorithm. src is not modified; dst may
// overlap src. A rank sends p-1 messages and, for n = len(src) divisible by p, (p-1)/p*n*4
// bytes; in general 4*(n - |chunk Index()|). It panics if len(dst) is not the chunk's length.
func (g *Group) ReduceScatter(dst, src []float32) error {
	p := g.Size()
	lo, hi := ChunkBounds(len(src), p, g.index)
	if len(dst) != hi-lo {
		g.panicf(KindReduceScatter, "dst has %d elements; chunk %d of %d elements over %d ranks has %d", len(dst), g.index, len(src), p, hi-lo)
	}
	o, ok := g.begin(KindReduceScatter, -1, len(src))
	if !ok {
		copy(dst, src)
		return nil
	}
	return o.end(o.reduceScatter(dst, src))
}

func (o *op) reduceScatter(dst, src []float32) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	return o.reduceScatterRing(dst, src)
}

// The ring steps below follow Patarasuk and Yuan 2009, "Bandwidth optimal all-reduce algorithms
// for clusters of workstations", section 3. The ranks share memory, so a step lends the sent chunk
// (newRef) instead of copying it into a message: the receiver adds or copies straight from the
// sender's buffer with the vectorised kernels.Add / AddInPlace and releases it, and the sender
// waits for the release (waitAck) at the end of the step, before it writes that chunk again or
// returns. A chunk is summed in the order r = c+1, c+2, ..., c (mod p) for chunk c as before, so the
// result's bits do not depend on lending.

// reduceScatterInPlace runs the p-1 steps of the ring reduce-scatter on buf in place: at step s
// member r lends its partial sum of chunk r-1-s to r+1 and adds the partial of chunk r-2-s lent by
// r-1 into its own buf. Afterwards chunk Index() of buf holds the full sum; the other chunks hold
// partial sums.
func (o *op) reduceScatterInPlace(buf []float32) error {
	p, r, n := o.g.Size(), o.g.index, len(buf)
	next, prev := mod(r+1, p), mod(r-1, p)
	for s := range p - 1 {
		lo, hi := ChunkBounds(n, p, mod(r-1-s, p))
		out := newRef(buf[lo:hi])
		if err := o.send(classCollective, next, out); err != nil {
			return err
		}
		lo, hi = ChunkBounds(n, p, mod(r-2-s, p))
		in, err := o.recv(classCollective, prev, hi-lo)
		if err != nil {
			o.reclaim(classCollective, next, out) // so that next no longer reads buf
			return err
		}
		kernels.AddInPlace(buf[lo:hi], in.data)
		o.release(prev, in)
		if err := o.waitAck(classCollective, next, out); err != nil {
			return err
		}
	}
	return nil
}

// reduceScatterRing runs the ring reduce-scatter of src (not modified) into dst, chunk Index() of
// the sum. Step 0 lends chunk r-1 of src; a received lent chunk is added to this member's src into
// a new message, a received owned message has src added into it in place, and either is forwarded
// at the next step. The last step adds straight into dst when dst is disjoint from src or exactly
// chunk Index() of it (no other member reads those elements); any other overlap goes through a
// message that is copied into dst once the lent chunk is released.
func (o *op) reduceScatterRing(dst, src []float32) error {
	p, r, n := o.g.Size(), o.g.index, len(src)
	next, prev := mod(r+1, p), mod(r-1, p)
	lo, hi := ChunkBounds(n, p, mod(r-1, p))
	out := newRef(src[lo:hi])
	lent := out // the lent message not yet released, or nil
	defer func() {
		if lent != nil {
			o.reclaim(classCollective, next, lent) // only on an error path
		}
	}()
	for s := range p - 1 {
		if err := o.send(classCollective, next, out); err != nil {
			if out == lent {
				lent = nil // not delivered
			}
			return err
		}
		lo, hi := ChunkBounds(n, p, mod(r-2-s, p))
		in, err := o.recv(classCollective, prev, hi-lo)
		if err != nil {
			return err
		}
		last := s == p-2
		// Partial + own: the order of summation whichever way the partial came.
		switch {
		case last && (disjoint(dst, src) || same(dst, src[lo:hi])):
			kernels.Add(dst, in.data, src[lo:hi])
			o.release(prev, in)
			out = nil
		case in.lent:
			out = newMsg(hi - lo)
			kernels.Add(out.data, in.data, src[lo:hi])
			o.release(prev, in)
		default:
			kernels.AddInPlace(in.data, src[lo:hi])
			out = in
		}
		if lent != nil {
			err := o.waitAck(classCollective, next, lent)
			lent = nil
			if err != nil {
				if out != nil {
					freeMsg(out)
				}
				return err
			}
		}
		if last && out != nil {
			copy(dst, out.data)
			freeMsg(out)
		}
	}
	return nil
}

// disjoint reports whether a and b share no element.
func disjoint(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0+4*uintptr(len(a)) <= b0 || b0+4*uintptr(len(b)) <= a0
}

// same reports whether a and b are the same elements.
func same(a, b []float32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// allGatherRing runs the p-1 steps of the ring all-gather on dst, whose chunk Index() already holds
// this member's part: at step s member r lends chunk r-s to r+1 and copies chunk r-1-s, lent by
// r-1, into dst.
func (o *op) allGatherRing(dst []float32) error {
	p, r, n := o.g.Size(), o.g.index, len(dst)
	next, prev := mod(r+1, p), mod(r-1, p)
	for s := range p - 1 {
		lo, hi := ChunkBounds(n, p, mod(r-s, p))
		out := newRef(dst[lo:hi])
		if err := o.send(classCollective, next, out); err != nil {
			return err
		}
		lo, hi = ChunkBounds(n, p, mod(r-1-s, p))
		in, err := o.recv(classCollective, prev, hi-lo)
		if err != nil {
			o.reclaim(classCollective, next, out) // so that next no longer reads dst
			return err
		}
		copy(dst[lo:hi], in.data)
		o.release(prev, in)
		if err := o.waitAck(classCollective, next, out); err != nil {
			return err
		}
	}
	return nil
}

// AllGather sets dst to the concatenation of all members' src, member i's src going to chunk i
// (ChunkBounds(len(dst), Size(), i)), with the ring algorithm. src may overlap dst. A rank sends
// p-1 messages and, for n = len(dst) divisible by p, (p-1)/p*n*4 bytes; in general
// 4*(n - |chunk Index()+1 mod p|). It panics if len(src) is not the length of chunk Index().
func (g *Group) AllGather(dst, src []float32) error {
	p := g.Size()
	lo, hi := ChunkBounds(len(dst), p, g.index)
	if len(src) != hi-lo {
		g.panicf(KindAllGather, "src has %d elements; chunk %d of %d elements over %d ranks has %d", len(src), g.index, len(dst), p, hi-lo)
	}
	o, ok := g.begin(KindAllGather, -1, len(dst))
	if !ok {
		copy(dst, src)
		return nil
	}
	return o.end(o.allGather(dst, src, lo, hi))
}

func (o *op) allGather(dst, src []float32, lo, hi int) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	copy(dst[lo:hi], src)
	return o.allGatherRing(dst)
}

// Broadcast copies buf of member root (a group index) into buf of every member, pipelined along
// the chain root, root+1, ..., root-1 (mod p) in segments of up to 65536 elements (the ring
// broadcast of NCCL). Every member but the last of the chain sends the whole buffer: n*4 bytes in
// ceil(n/65536) messages (one empty message when n = 0); the last, member root-1, sends nothing.
// All members must pass buffers of the same length. It panics if root is not in [0, Size()).
func (g *Group) Broadcast(buf []float32, root int) error {
	p := g.Size()
	if root < 0 || root >= p {
		g.panicf(KindBroadcast, "root %d is not a member index in [0, %d)", root, p)
	}
	o, ok := g.begin(KindBroadcast, -1, len(buf))
	if !ok {
		return nil
	}
	return o.end(o.broadcast(buf, root))
}

func (o *op) broadcast(buf []float32, root int) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	p, r, n := o.g.Size(), o.g.index, len(buf)
	pos := mod(r-root, p) // position in the chain
	next, prev := mod(r+1, p), mod(r-1, p)
	segs := max(1, (n+broadcastSegment-1)/broadcastSegment)
	for k := range segs {
		lo, hi := ChunkBounds(n, segs, k)
		if pos == 0 {
			m := newMsg(hi - lo)
			copy(m.data, buf[lo:hi])
			if err := o.send(classCollective, next, m); err != nil {
				return err
			}
			continue
		}
		in, err := o.recv(classCollective, prev, hi-lo)
		if err != nil {
			return err
		}
		copy(buf[lo:hi], in.data)
		if pos < p-1 {
			if err := o.send(classCollective, next, in); err != nil {
				return err
			}
		} else {
			freeMsg(in)
		}
	}
	return nil
}

// AllToAll sends chunk j of src to member j and puts the chunk that member i sent into chunk i of
// dst; chunks are equal, len(src)/Size() elements. Member r sends to r+1, r+2, ... and receives
// from r-1, r-2, ... (mod p): p-1 messages, (p-1)/p*n*4 bytes. dst may overlap src. It panics if
// len(dst) != len(src) or the length is not divisible by Size().
func (g *Group) AllToAll(dst, src []float32) error {
	p := g.Size()
	if len(dst) != len(src) || len(src)%p != 0 {
		g.panicf(KindAllToAll, "dst has %d elements and src %d; want equal lengths divisible by %d", len(dst), len(src), p)
	}
	o, ok := g.begin(KindAllToAll, -1, len(src))
	if !ok {
		copy(dst, src)
		return nil
	}
	return o.end(o.allToAll(dst, src))
}

func (o *op) allToAll(dst, src []float32) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	p, r := o.g.Size(), o.g.index
	k := len(src) / p
	for s := 1; s < p; s++ {
		j := mod(r+s, p)
		m := newMsg(k)
		copy(m.data, src[j*k:(j+1)*k])
		if err := o.send(classCollective, j, m); err != nil {
			return err
		}
	}
	copy(dst[r*k:(r+1)*k], src[r*k:(r+1)*k])
	for s := 1; s < p; s++ {
		i := mod(r-s, p)
		in, err := o.recv(classCollective, i, k)
		if err != nil {
			return err
		}
		copy(dst[i*k:(i+1)*k], in.data)
		freeMsg(in)
	}
	return nil
}

// Send sends a copy of buf to member dst (a group index): one message, len(buf)*4 bytes, counted
// under KindSend. It returns once the message is queued (up to 8 messages wait per pair of ranks),
// so buf may be reused at once. It panics if dst is not another member's index.
func (g *Group) Send(dst int, buf []float32) error {
	if dst < 0 || dst >= g.Size() || dst == g.index {
		g.panicf(KindSend, "destination %d is not another member's index in [0, %d)", dst, g.Size())
	}
	o, _ := g.begin(KindSend, dst, len(buf))
	return o.end(o.sendP2P(dst, buf))
}

func (o *op) sendP2P(dst int, buf []float32) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	m := newMsg(len(buf))
	copy(m.data, buf)
	return o.send(classP2P, dst, m)
}

// Recv receives the next message that member src (a group index) sent to this rank with Send, into
// buf, which must have the message's length. It panics if src is not another member's index.
func (g *Group) Recv(src int, buf []float32) error {
	if src < 0 || src >= g.Size() || src == g.index {
		g.panicf(KindRecv, "source %d is not another member's index in [0, %d)", src, g.Size())
	}
	o, _ := g.begin(KindRecv, src, len(buf))
	return o.end(o.recvP2P(src, buf))
}

func (o *op) recvP2P(src int, buf []float32) error {
	if err := o.checkAborted(); err != nil {
		return err
	}
	m, err := o.recv(classP2P, src, len(buf))
	if err != nil {
		return err
	}
	copy(buf, m.data)
	freeMsg(m)
	return nil
}
