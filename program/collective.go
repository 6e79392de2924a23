package program

import (
	"fmt"

	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// This file is the one place that sizes communication: the ring algorithm's steps and the share
// of the full tensor each rank sends (Thakur, Rabenseifner and Gropp 2005, "Optimization of
// Collective Communication Operations in MPICH", Sec. 4), the communication ops built from them
// (collectiveOp), and the builder's redistributions over the tensor-parallel group. The cost
// model (costmodel.CollectiveTime) and the calibration fit (exec/calibrate) size rings with
// SentBytes and RingSteps too, so no other package writes the ring's factor.

// RingShare is (g-1)/g, the share of the full tensor that each of g ranks sends in one ring pass:
// g-1 steps of one chunk of 1/g each (Thakur et al. 2005 Sec. 4).
func RingShare(g int) float64 { return float64(g-1) / float64(g) }

// RingSteps is the number of steps of a ring collective of kind over g ranks: g-1 for an
// all-gather, a reduce-scatter or an all-to-all, 2(g-1) for an all-reduce (a reduce-scatter,
// then an all-gather), 1 for a pipeline send (Thakur et al. 2005 Sec. 4).
func RingSteps(kind OpKind, g int) int {
	switch kind {
	case OpAllReduce:
		return 2 * (g - 1)
	case OpSend:
		return 1
	}
	return g - 1
}

// SentBytes is what one rank sends in a communication op of kind over a group of g ranks whose
// full tensor (an all-gather's output, a reduce-scatter's input, an all-reduce's tensor, a
// send's message) is full bytes: the ring's RingShare of it, twice for an all-reduce; the whole
// message for a send; nothing for a receive (the send carries the bytes) or a slice.
func SentBytes(kind OpKind, g int, full units.Bytes) units.Bytes {
	switch kind {
	case OpAllGather, OpReduceScatter, OpAllToAll:
		return units.Bytes(RingShare(g)) * full
	case OpAllReduce:
		return 2 * (units.Bytes(RingShare(g)) * full)
	case OpSend:
		return full
	}
	return 0
}

// collectiveOp is the communication op of kind over g ranks of mesh dimension dim on a full
// tensor of full bytes: its sent bytes (SentBytes), its full bytes, and its memory traffic, the
// full tensor. A slice communicates nothing and has no group.
func collectiveOp(kind OpKind, dim strategies.Dim, g int, full units.Bytes) Op {
	op := Op{Kind: kind, Dim: dim, Group: g, SentBytes: SentBytes(kind, g, full), FullBytes: full, MemBytes: full}
	if kind == OpSlice {
		op.Dim, op.Group = "", 0
	}
	return op
}

// redistribution is the tensor-parallel op that moves a value placed from to placement to, and
// the axis it gathers, scatters or slices (Placement's table).
func redistribution(from, to Placement) (OpKind, int) {
	switch {
	case from.Kind == Partial && to.Kind == Replicate:
		return OpAllReduce, 0
	case from.Kind == Partial && to.Kind == Shard:
		return OpReduceScatter, to.Dim
	case from.Kind == Shard && to.Kind == Replicate:
		return OpAllGather, from.Dim
	case from.Kind == Replicate && to.Kind == Shard:
		return OpSlice, to.Dim
	case from.Kind == Shard && to.Kind == Shard:
		return OpAllToAll, to.Dim
	}
	panic(fmt.Sprintf("program: no redistribution from %v to %v", from, to))
}

// tpOp builds (without emitting it) the op of kind over the tensor-parallel group that moves
// value v of the current stage to placement to along axis, and the value it writes: the full
// tensor is v's, gathered where v is sharded, and the result is sharded where to is.
func (b *builder) tpOp(kind OpKind, v ValueID, to Placement, axis int, module string) (Op, ValueID) {
	src := b.v(v)
	var fb, ob [8]int // shapes on the stack: val copies them
	shape := src.Shape
	full := append(fb[:0], shape...)
	if src.Place.Kind == Shard {
		full[axisOf(shape, src.Place.Dim)] *= b.tp
	}
	n := units.Bytes(elems(full) * int64(src.Elem))
	out := append(ob[:0], full...)
	if to.Kind == Shard {
		out[axisOf(out, to.Dim)] /= b.tp
	}
	op := collectiveOp(kind, strategies.DimTP, b.tp, n)
	op.Module, op.In, op.Axis = module, b.ids(v), axis
	id := b.val(b.name(src.Name, ".", string(kind)), out, to)
	b.v(id).Elem = src.Elem // n counts the source's element size; so does the result
	op.Out = b.ids(id)
	return op, id
}

// redistribute emits in the forward the collective that moves v to placement to (once per value
// and placement: later calls return the first one's result).
func (b *builder) redistribute(v ValueID, to Placement, module string) ValueID {
	from := b.v(v).Place
	if from == to || b.tp == 1 {
		return v
	}
	key := memoKey{b.stage.Index, v, to}
	if id, ok := b.memo[key]; ok {
		return id
	}
	kind, axis := redistribution(from, to)
	op, id := b.tpOp(kind, v, to, axis, module)
	b.emit(op)
	b.memo[key] = id
	return id
}

// bwdCollective emits in the backward the tensor-parallel op of kind that moves gradient g to
// placement to along axis.
func (b *builder) bwdCollective(kind OpKind, g ValueID, to Placement, axis int, module string) ValueID {
	op, id := b.tpOp(kind, g, to, axis, module)
	op.Phase, op.Fwd = Backward, -1
	b.stage.Backward = append(b.stage.Backward, op)
	return id
}

// pipelineOp is a send or receive of a message of n bytes between this pipeline stage and stage
// peer.
func pipelineOp(kind OpKind, peer int, n units.Bytes) Op {
	op := collectiveOp(kind, strategies.DimPP, 2, n)
	op.Module, op.Peer = "pp", peer
	return op
}
