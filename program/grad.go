package program

import (
	"fmt"

	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// contrib is one gradient contribution to a value.
type contrib struct {
	id ValueID
	pl Placement
}

// backward is the state of one differentiation (builder.differentiate): the gradient
// contributions collected so far, the recomputed copies of values, and the stage and forward op
// being differentiated, which its methods read.
type backward struct {
	b     *builder
	grads perStage[[]contrib]
	// remap is the recomputed copy of a value, plus one (0: none).
	remap perStage[ValueID]
	// recvOf is the receive of each pipeline send.
	recvOf map[vkey]vkey
	// layerEnd is, under full or per-op recompute, the layer whose last forward op each entry is:
	// its forward ops are replayed just before its backward.
	layerEnd map[tapeEntry]layerRange
	s        *Stage
	fop      Op
	arena    []contrib // addGrad's
}

// differentiate walks the forward tape backwards and emits each stage's backward ops: the backward
// of every compute op, the collectives that gradient placements need (the gradient of a value
// placed Partial is summed where a Replicate value needs it; the backward of each forward
// redistribution is its transpose), pipeline sends of gradients, recomputation under full or
// per-op recompute, and ZeRO-3 gathers.
func (b *builder) differentiate() {
	nv := len(b.p.Stages)
	d := &backward{b: b, grads: make(perStage[[]contrib], nv), remap: make(perStage[ValueID], nv),
		recvOf: map[vkey]vkey{}, layerEnd: map[tapeEntry]layerRange{}}
	b.recomputeGathered = map[paramLoc]bool{}
	for _, r := range b.layerOps {
		d.layerEnd[tapeEntry{r.stage, r.hi - 1}] = r
	}
	for _, sp := range b.sends {
		d.recvOf[sp.from] = sp.to
	}
	b.seqGathers()
	replay := b.st.Recompute == strategies.RecomputeFull || b.st.Recompute == strategies.RecomputeOp
	for ti := len(b.tape) - 1; ti >= 0; ti-- {
		te := b.tape[ti]
		b.stage = b.p.Stages[te.stage]
		d.s = b.stage
		d.fop = d.s.Forward[te.op]
		if r, ok := d.layerEnd[te]; ok && replay {
			d.replay(r)
		}
		switch d.fop.Kind {
		case OpLoss:
			d.loss(te.op)
		case OpSend, OpRecv:
			d.pipeline()
		case OpAllReduce, OpReduceScatter, OpAllGather, OpSlice, OpAllToAll:
			d.redistribution()
		case OpAdd:
			g, pl := d.sumGrad(d.fop.Out[0])
			if g >= 0 {
				d.addGrad(d.fop.In[0], g, pl)
				d.addGrad(d.fop.In[1], g, pl)
			}
		default:
			d.computeBackward(te.op)
		}
	}
}

// saved is the copy of value id of the current stage that a backward op reads: its recomputed
// copy where the layer was replayed, else id.
func (d *backward) saved(id ValueID) ValueID {
	if r := d.remap.get(vkey{d.s.Index, id}); r > 0 {
		return r - 1
	}
	return id
}

// savedIDs is saved of each of ids.
func (d *backward) savedIDs(ids ...ValueID) []ValueID { return d.b.mapIDs(ids, d.saved) }

// needsGrad reports whether value id of the current stage needs a gradient.
func (d *backward) needsGrad(id ValueID) bool { return d.b.needsGrad.get(vkey{d.s.Index, id}) }

// gradOf sums the gradient of value id and brings it to placement want (collectGrad).
func (d *backward) gradOf(id ValueID, want Placement) ValueID {
	return d.b.collectGrad(d.grads, vkey{d.s.Index, id}, want, d.fop.Module)
}

// sumGrad adds the contributions to the gradient of value id (builder.sumGrad).
func (d *backward) sumGrad(id ValueID) (ValueID, Placement) {
	return d.b.sumGrad(d.grads, vkey{d.s.Index, id}, d.fop.Module)
}

// addGrad records g, placed pl, as a contribution to the gradient of value id, where id needs one.
func (d *backward) addGrad(id ValueID, g ValueID, pl Placement) {
	if g < 0 || !d.needsGrad(id) {
		return
	}
	k := vkey{d.s.Index, id}
	cs := d.grads.get(k)
	if cs == nil {
		// Most values get one contribution: carve it out of a shared array (capped, so
		// that a second one copies).
		if len(d.arena) == cap(d.arena) {
			d.arena = make([]contrib, 0, min(2*cap(d.arena)+32, 4096))
		}
		d.arena = append(d.arena, contrib{g, pl})
		d.grads.set(k, d.arena[len(d.arena)-1:len(d.arena):len(d.arena)])
		return
	}
	d.grads.set(k, append(cs, contrib{g, pl}))
}

// newGrad is a new value for the gradient of value of, placed pl.
func (d *backward) newGrad(of ValueID, pl Placement) ValueID {
	v := d.s.Values[of]
	return d.b.val(d.b.name("grad.", v.Name), v.Shape, pl)
}

// emit appends op to the current stage's backward.
func (d *backward) emit(op Op) {
	op.Phase = Backward
	if op.Kind.IsComm() || op.Kind == OpSlice {
		op.Fwd = -1
	}
	d.s.Backward = append(d.s.Backward, op)
}

// gradPlace is the placement of the gradient of a value placed pl: a Partial value's gradient is
// the whole sum's, Replicate.
func gradPlace(pl Placement) Placement {
	if pl.Kind == Partial {
		return Placement{Kind: Replicate}
	}
	return pl
}

// replay emits the recomputed forward of layer r before its backward (full recompute, or per-op
// recompute for the ops keptByOpCheckpoint does not keep), its outputs as new values that the
// backward ops read instead of the forward's (saved).
func (d *backward) replay(r layerRange) {
	b, s := d.b, d.s
	products := 0
	for i := r.lo; i < r.hi; i++ {
		op := s.Forward[i]
		if b.st.Recompute == strategies.RecomputeOp && keptByOpCheckpoint(op.Kind, &products) {
			continue // its outputs stay saved from the forward
		}
		op.Recompute, op.Phase, op.Fwd = true, Backward, -1
		op.In = d.savedIDs(op.In...)
		outs := b.ids(op.Out...)
		for j, o := range op.Out {
			v := s.Values[o]
			nv := ValueID(len(s.Values))
			v.ID, v.Name = nv, b.name(v.Name, ".re")
			s.Values = append(s.Values, v)
			d.remap.set(vkey{s.Index, o}, nv+1)
			outs[j] = nv
		}
		op.Out = outs
		s.Backward = append(s.Backward, op)
		if op.IsParamGather() && !b.st.TensorLists {
			// ZeRO-3: the recomputed forward's gather also serves the backward ops
			// (FSDP unshards a checkpointed unit once in its backward and recomputes
			// with those parameters; DeepSpeed since ZeRO-Infinity keeps a parameter it
			// reuses soon, stage3_max_reuse_distance), which then gather nothing. The
			// ZeRO-3 of 2021 (tensorlists=on) released every submodule's parameters
			// after its forward and fetched them again in its backward hook.
			for _, name := range op.Params {
				b.recomputeGathered[paramLoc{s.Index, name}] = true
			}
		}
	}
}

// loss emits the backward of the loss op Forward[fi] (d.fop).
func (d *backward) loss(fi int) {
	b, s, fop := d.b, d.s, d.fop
	y, yv := fop.In[0], s.Values[fop.In[0]]
	gpl := Placement{Kind: Replicate}
	sv, mem, flops, elems := b.ids(d.saved(y), fop.In[1]), fop.MemBytes, fop.FLOPs, fop.Elems
	switch {
	case fop.VocabHi > 0:
		// Vocabulary-parallel (build.go vocabParallelLoss): the gradient of this rank's
		// shard, exp(y - lse) minus the one-hot target where the rank holds it, from the
		// shard (its fp32 copy under mixed precision) and the lse. Per local logit it reads
		// 4 bytes and writes 4 (fp32), then casts back to e (reads 4, writes e).
		gpl = yv.Place // the shard's gradient is the shard's
		n := yv.Elems()
		yin := y
		if len(fop.In) == 4 {
			yin = fop.In[3] // the fp32 copy
		}
		sv = b.ids(d.saved(yin), fop.In[1], fop.Out[1])
		mem, flops, elems = units.Bytes(8*n), units.FLOPs(5*n), n
		if yv.Elem < 4 {
			mem = units.Bytes(n * int64(12+yv.Elem))
		}
	case len(fop.Out) == 3: // [loss, fp32 copy, log-probabilities]: OpLoss's doc
		// The fp32 loss of mixed precision (build.go): the backward reads the saved
		// log-probabilities. Per logit: the loss's backward writes a dense fp32 gradient
		// (4 bytes), log_softmax's backward reads it and the output and writes its own
		// (12), the cast back reads 4 and writes e.
		sv = b.ids(d.saved(fop.Out[2]), fop.In[1])
		mem = units.Bytes(yv.Elems() * int64(20+yv.Elem))
	}
	g := d.newGrad(y, gpl)
	outs := b.ids(g)
	if len(fop.Out) == 3 && fop.VocabHi == 0 {
		// The two fp32 gradients are buffers of their own, alive beside the saved
		// log-probabilities: PyTorch's nll_loss backward allocates a dense fp32 gradient
		// (zeros, then the targets' entries), and _log_softmax_backward_data a new one
		// from it and the output (aten/src/ATen/native/LossNLL.cpp and SoftMax.cpp), so
		// three fp32 copies of the logits are live at once, the peak of the step for a
		// large vocabulary. This is F.cross_entropy's path (torchtitan, Hugging Face);
		// Megatron-LM's fused cross-entropy works in place on its saved softmax and
		// vocabulary-parallel runs take the path above. The bf16 gradient the op also
		// writes comes after the dense one is freed, so the op's peak counts e bytes per
		// logit more than PyTorch's.
		for _, name := range []string{"loss.grad_nll_fp32", "loss.grad_logits_fp32"} {
			t := b.val(name, yv.Shape, Placement{Kind: Replicate})
			s.Values[t].Elem = 4
			outs = append(outs, t)
		}
	}
	d.emit(Op{Kind: OpLoss, Loss: fop.Loss, Module: fop.Module, Fwd: fi, Out: outs, Scale: fop.Scale, Elems: elems,
		VocabLo: fop.VocabLo, VocabHi: fop.VocabHi, Saved: sv, FLOPs: flops, MemBytes: mem, GradInput: true})
	d.addGrad(y, g, gpl)
}

// pipeline emits the backward of a pipeline send (the receive of its input's gradient from the
// next stage) or receive (the send of its output's gradient to the previous stage).
func (d *backward) pipeline() {
	b, s, fop := d.b, d.s, d.fop
	if fop.Kind == OpSend {
		r := d.recvOf[vkey{s.Index, fop.In[0]}]
		if !b.needsGrad.get(r) {
			return
		}
		v := s.Values[fop.In[0]]
		g := d.newGrad(fop.In[0], gradPlace(v.Place))
		op := pipelineOp(OpRecv, r.stage, v.Bytes())
		op.Out = b.ids(g)
		d.emit(op)
		d.addGrad(fop.In[0], g, gradPlace(v.Place))
		return
	}
	out := fop.Out[0]
	if !d.needsGrad(out) {
		return
	}
	v := s.Values[out]
	g := d.gradOf(out, gradPlace(v.Place))
	if g < 0 {
		return
	}
	op := pipelineOp(OpSend, fop.Peer, v.Bytes())
	op.In = b.ids(g)
	d.emit(op)
}

// redistribution emits the backward of a forward collective or slice (d.fop): over tp, the
// transposed redistribution of the output's gradient (an all-reduce's gradient passes through,
// a reduce-scatter's or a slice's is all-gathered, an all-gather's is reduce-scattered or
// sliced, an all-to-all's goes back); over cp, the reduce-scatter of the gathered keys' and
// values' gradients. (ZeRO-3's gathers over dp are not on the tape: builder.emit.)
func (d *backward) redistribution() {
	b, s, fop := d.b, d.s, d.fop
	if fop.Dim == strategies.DimCP {
		// Reduce-scatter the key/value gradients back over the context-parallel group (the
		// forward's gather of them is the one collective over cp).
		op := collectiveOp(OpReduceScatter, strategies.DimCP, fop.Group, s.Values[fop.Out[0]].Bytes())
		op.Module, op.Axis = fop.Module, 1
		d.emit(op)
		return
	}
	in, out := fop.In[0], fop.Out[0]
	switch fop.Kind {
	case OpAllReduce:
		// Partial -> Replicate: the gradient of each summand is the gradient of the sum.
		d.addGrad(in, d.gradOf(out, Placement{Kind: Replicate}), Placement{Kind: Replicate})
	case OpReduceScatter, OpSlice:
		if !d.needsGrad(in) {
			return
		}
		if g := d.gradOf(out, s.Values[out].Place); g >= 0 {
			d.addGrad(in, b.bwdCollective(OpAllGather, g, Placement{Kind: Replicate}, fop.Axis, fop.Module), Placement{Kind: Replicate})
		}
	case OpAllGather:
		if !d.needsGrad(in) {
			return
		}
		g, pl := d.sumGrad(out)
		if g < 0 {
			return
		}
		inPl := s.Values[in].Place
		kind := OpSlice
		if pl.Kind == Partial {
			kind = OpReduceScatter
		}
		d.addGrad(in, b.bwdCollective(kind, g, inPl, inPl.Dim, fop.Module), inPl)
	case OpAllToAll:
		g := d.gradOf(out, s.Values[out].Place)
		if g < 0 || !d.needsGrad(in) {
			return
		}
		inPl := s.Values[in].Place
		d.addGrad(in, b.bwdCollective(OpAllToAll, g, inPl, inPl.Dim, fop.Module), inPl)
	}
}

// mapIDs is f of each of ids, carved out of the builder's arena (builder.ids).
func (b *builder) mapIDs(ids []ValueID, f func(ValueID) ValueID) []ValueID {
	out := b.ids(ids...)
	for i, id := range out {
		out[i] = f(id)
	}
	return out
}

// sumGrad adds the contributions to value k, making them Replicate first when placements differ.
func (b *builder) sumGrad(grads perStage[[]contrib], k vkey, module string) (ValueID, Placement) {
	cs := grads.get(k)
	if len(cs) == 0 {
		return -1, Placement{}
	}
	mixed := false
	for _, c := range cs[1:] {
		if c.pl != cs[0].pl {
			mixed = true
		}
	}
	if mixed {
		for i, c := range cs {
			if c.pl.Kind == Partial {
				cs[i] = contrib{b.bwdCollective(OpAllReduce, c.id, Placement{Kind: Replicate}, 0, module), Placement{Kind: Replicate}}
			}
		}
	}
	g, pl := cs[0].id, cs[0].pl
	for _, c := range cs[1:] {
		if c.pl != pl {
			panic(fmt.Sprintf("program: cannot add gradients placed %v and %v", pl, c.pl))
		}
		v := b.v(g)
		out := b.val(b.name(v.Name, ".sum"), v.Shape, pl)
		n := elems(v.Shape)
		b.stage.Backward = append(b.stage.Backward, Op{Kind: OpAdd, Phase: Backward, Fwd: -1, Module: module, In: b.ids(g, c.id), Out: b.ids(out), Elems: n,
			FLOPs: units.FLOPs(n), MemBytes: units.Bytes(3 * n * int64(v.Elem))})
		g = out
	}
	grads.set(k, nil)
	return g, pl
}

// collectGrad sums the gradient of k and brings it to placement want (a Partial gradient of a
// Replicate value is all-reduced here, where the op that produced the value needs it whole).
func (b *builder) collectGrad(grads perStage[[]contrib], k vkey, want Placement, module string) ValueID {
	g, pl := b.sumGrad(grads, k, module)
	if g < 0 {
		return -1
	}
	if pl == want {
		return g
	}
	switch {
	case pl.Kind == Partial && want.Kind == Replicate:
		return b.bwdCollective(OpAllReduce, g, want, 0, module)
	case pl.Kind == Partial && want.Kind == Shard:
		return b.bwdCollective(OpReduceScatter, g, want, want.Dim, module)
	case pl.Kind == Replicate && want.Kind == Shard:
		return b.bwdCollective(OpSlice, g, want, want.Dim, module)
	case pl.Kind == Shard && want.Kind == Replicate:
		return b.bwdCollective(OpAllGather, g, want, pl.Dim, module)
	}
	panic(fmt.Sprintf("program: gradient placed %v where %v is needed in %s", pl, want, module))
}

// computeBackward emits the backward op of compute op Forward[fi] (d.fop) and the gradients of
// its inputs.
func (d *backward) computeBackward(fi int) {
	b, s, fop := d.b, d.s, d.fop
	out := fop.Out[0]
	outPl := s.Values[out].Place
	g := d.gradOf(out, gradPlace(outPl))
	if g < 0 {
		return
	}
	sv := d.savedIDs
	op := Op{Kind: fop.Kind, Module: fop.Module, Fwd: fi, In: b.ids(g), Param: fop.Param, Bias: fop.Bias, Act: fop.Act, Norm: fop.Norm, Elems: fop.Elems, M: fop.M, N: fop.N, K: fop.K,
		VocabLo: fop.VocabLo, VocabHi: fop.VocabHi, Heads: fop.Heads, KVHeads: fop.KVHeads, HeadDim: fop.HeadDim}
	needIn := func(i int) bool { return i < len(fop.In) && d.needsGrad(fop.In[i]) }
	if b.st.ZeRO == 3 && fop.Param != "" && !b.recomputeGathered[paramLoc{s.Index, fop.Param}] {
		b.zeroGather(fop, d.emit)
	}
	switch fop.Kind {
	case OpLinear:
		x := fop.In[0]
		op.Saved = sv(x)
		if gi, ok := b.seqGather[vkey{s.Index, x}]; ok && op.Saved[0] == x {
			// Sequence parallel (Korthikanti et al. 2022 §4.2.2): the Linear's input is the
			// all-gather of a [b, s/t, h] shard; the shard is saved, not the gathered tensor, and
			// it is all-gathered again here, once for all the Linears that read it.
			op.Saved = b.ids(b.regather(gi, fop.Module))
		}
		op.GradInput = needIn(0)
		// dW = dy^T x always; dx = dy W when needed: each the FLOPs of the forward GEMM.
		op.FLOPs = fop.FLOPs
		op.MemBytes = fop.MemBytes
		if op.GradInput {
			op.FLOPs *= 2
			op.MemBytes *= 2
			xp := s.Values[x].Place
			pl := xp
			if p := b.paramByName(fop.Param); p != nil && p.ShardDim == 0 {
				pl = Placement{Kind: Partial}
			}
			gx := d.newGrad(x, pl)
			op.Out = b.ids(gx)
			d.emit(op)
			d.addGrad(x, gx, pl)
		} else {
			d.emit(op)
		}
	case OpBias:
		op.FLOPs, op.MemBytes = fop.FLOPs, b.backwardTraffic(s, fop)
		d.emit(op)
		d.addGrad(fop.In[0], g, outPl)
	case OpEmbedding:
		if len(fop.In) > 0 {
			op.Saved = sv(fop.In[0])
		}
		op.FLOPs, op.MemBytes = units.FLOPs(elems(s.Values[out].Shape)), fop.MemBytes
		d.emit(op)
	case OpNorm, OpAct, OpMul, OpAttention, OpDropout:
		op.GradInput = needIn(0) || needIn(1)
		switch fop.Kind {
		case OpNorm:
			op.Saved = sv(fop.In[0], fop.Out[1])
		case OpAct:
			op.Saved = sv(fop.In[0])
		case OpDropout:
			op.Saved = sv(fop.Out[1])
			op.P = fop.P
		case OpMul:
			op.Saved = sv(fop.In[0], fop.In[1])
		case OpAttention:
			op.Saved = sv(fop.In...)
			for j := 1; j < len(fop.In); j++ {
				if gi, ok := b.seqGather[vkey{s.Index, fop.In[j]}]; ok && op.Saved[j] == fop.In[j] {
					// Context parallel's ring: the keys and values of the other ranks pass
					// around the ring again (seqGathers).
					op.Saved[j] = b.regather(gi, fop.Module)
				}
			}
			op.Saved = append(op.Saved, sv(fop.Out[1:]...)...)
			op.P = fop.P
		}
		// Backward of elementwise ops and of attention costs twice the forward's FLOPs (two
		// products per forward product for attention; Narayanan et al. 2021 §5.1 takes backward =
		// 2 x forward). Its memory traffic is what the backward kernels read and write
		// (backwardTraffic).
		op.FLOPs, op.MemBytes = 2*fop.FLOPs, b.backwardTraffic(s, fop)
		if fop.Kind == OpAttention && b.st.FusedAttention() {
			// FlashAttention's backward recomputes the scores: 5 products for the forward's 2
			// (Dao 2023 §4.1: backward FLOPs = 2.5 x forward). It reads q, k, v, the output, its
			// gradient and the lse and writes dq, dk, dv: about twice the forward's traffic.
			op.FLOPs = fop.FLOPs * 5 / 2
		} else if fop.Kind == OpAttention && b.st.Recompute == strategies.RecomputeSelective {
			// Korthikanti et al. 2022 §4.2: recompute QK^T, softmax and its product with V, their
			// products and their passes over the scores again. Under full recompute the replayed
			// forward has paid for them and written the probabilities this op reads.
			op.FLOPs += fop.FLOPs
			op.MemBytes += fop.MemBytes - b.rotaryBytes(s, fop) // the rotary ops are not replayed
			op.Recompute = true
		}
		var outs []ValueID
		type pending struct {
			in, g ValueID
			pl    Placement
		}
		var buf [2]pending // OpMul has two inputs, the others one
		add := buf[:0]
		for i, in := range fop.In {
			if fop.Kind == OpAttention && i > 0 {
				break // kv gathered over cp: its gradient is folded into dqkv, then reduce-scattered
			}
			if !d.needsGrad(in) {
				outs = append(outs, -1)
				continue
			}
			pl := s.Values[in].Place
			gi := d.newGrad(in, pl)
			outs = append(outs, gi)
			add = append(add, pending{in, gi, pl})
		}
		op.Out = outs
		d.emit(op)
		// The inputs' gradients, last input first.
		for i := len(add) - 1; i >= 0; i-- {
			d.addGrad(add[i].in, add[i].g, add[i].pl)
		}
	default:
		panic("program: no backward for " + string(fop.Kind))
	}
	if b.st.ZeRO == 3 && fop.Param != "" {
		b.zeroReduce(fop, d.emit)
	}
}

// seqGathers finds, on every stage, the all-gathers along the sequence whose outputs are not
// saved for backward, the backward gathering the input shard again (regather):
//   - sequence parallel's: forward all-gathers over tp along the sequence axis of a [batch, seq,
//     feature] value whose output only Linears read (Korthikanti et al. 2022 §4.2.2);
//   - context parallel's, with a blockwise (flash) attention: the keys and values gathered over cp
//     that only the attention reads. Ring attention keeps its own chunk and passes the others
//     around the ring again in backward (Liu et al. 2023, arXiv:2310.01889, §3; Transformer
//     Engine's context parallel saves the local K and V only), so the gathered sequence is never
//     held from the forward to the backward.
func (b *builder) seqGathers() {
	b.seqGather = map[vkey]int{}
	b.regathered = map[vkey]ValueID{}
	for _, s := range b.p.Stages {
		reader := map[ValueID]OpKind{} // the one op kind that may read each candidate's output
		for i, op := range s.Forward {
			if op.Kind == OpAllGather && len(op.In) == 1 && len(op.Out) == 1 {
				sh := s.Values[op.Out[0]].Shape
				seq := len(sh) == 3 && axisOf(sh, op.Axis) == 1
				switch {
				case seq && op.Dim == strategies.DimTP:
					reader[op.Out[0]] = OpLinear
				case seq && op.Dim == strategies.DimCP && b.st.FusedAttention():
					reader[op.Out[0]] = OpAttention
				}
				if _, ok := reader[op.Out[0]]; ok {
					b.seqGather[vkey{s.Index, op.Out[0]}] = i
				}
			}
			for _, id := range op.In {
				if k, ok := reader[id]; ok && k != op.Kind {
					delete(reader, id)
					delete(b.seqGather, vkey{s.Index, id})
				}
			}
		}
	}
}

// regather emits, in the current stage's backward, the all-gather of the input shard of the
// forward all-gather Forward[fi] (the same collective and bytes) for module, the first Linear
// whose backward needs it, and returns the gathered value.
func (b *builder) regather(fi int, module string) ValueID {
	s := b.stage
	fop := s.Forward[fi]
	k := vkey{s.Index, fop.Out[0]}
	if id, ok := b.regathered[k]; ok {
		return id
	}
	v := s.Values[fop.Out[0]]
	id := b.val(b.name(v.Name, ".regather"), v.Shape, v.Place)
	op := fop
	op.Phase, op.Fwd, op.Recompute, op.Free, op.Module = Backward, -1, false, nil, module
	op.In, op.Out = b.ids(fop.In[0]), b.ids(id)
	s.Backward = append(s.Backward, op)
	b.regathered[k] = id
	return id
}

func (b *builder) opParamBytes(fop Op, per int) units.Bytes {
	var n int64
	for _, name := range [2]string{fop.Param, fop.Bias} {
		if q := b.paramByName(name); q != nil && name != "" {
			n += q.Elems()
		}
	}
	return units.Bytes(n * int64(per))
}

// opParams lists the parameters op fop reads (its weight, and its bias when it has one), which
// ZeRO-3's gathers and reduce-scatters move (opParamBytes counts the same).
func opParams(fop Op) []string {
	if fop.Bias != "" {
		return []string{fop.Param, fop.Bias}
	}
	return []string{fop.Param}
}

// zeroGather is ZeRO-3's all-gather of a module's parameters over dp before its backward
// (Rajbhandari et al. 2020 §5.3: parameters are gathered for forward and again for backward).
func (b *builder) zeroGather(fop Op, emit func(Op)) {
	emit(b.zeroOp(OpAllGather, fop, b.p.ParamBytes))
}

// zeroReduce is ZeRO-3's reduce-scatter of a module's gradients over dp after its backward.
func (b *builder) zeroReduce(fop Op, emit func(Op)) {
	emit(b.zeroOp(OpReduceScatter, fop, b.p.GradBytes))
}

// zeroOp is ZeRO-3's collective of kind over the data-parallel group (dp x cp ranks) on the
// parameters of op fop, per bytes an element.
func (b *builder) zeroOp(kind OpKind, fop Op, per int) Op {
	op := collectiveOp(kind, strategies.DimDP, b.st.Mesh.DP*b.st.Mesh.CP, b.opParamBytes(fop, per))
	op.Module, op.Params = fop.Module, opParams(fop)
	return op
}

// computeFree fills each op's Free list with the values whose last use it is, over one
// microbatch's forward then backward, and marks the values backward ops read as Saved.
func (s *Stage) computeFree() {
	last := make([]int, len(s.Values))
	for i := range last {
		last[i] = -1
	}
	ops := make([]*Op, 0, len(s.Forward)+len(s.Backward))
	for i := range s.Forward {
		ops = append(ops, &s.Forward[i])
	}
	nf := len(ops)
	for i := range s.Backward {
		ops = append(ops, &s.Backward[i])
	}
	for i, op := range ops {
		for _, list := range [][]ValueID{op.In, op.Out, op.Saved} {
			for _, id := range list {
				if id >= 0 {
					last[id] = i
				}
			}
		}
	}
	// Every op's Free list is carved, in ascending value order, out of one array (each capped,
	// so appending to one cannot write into the next).
	count := make([]int32, len(ops))
	n := 0
	for _, i := range last {
		if i >= 0 {
			count[i]++
			n++
		}
	}
	free := make([]ValueID, n)
	at := 0
	for i, c := range count {
		if c > 0 {
			ops[i].Free = free[at : at : at+int(c)]
			at += int(c)
		}
	}
	for id, i := range last {
		if i >= 0 {
			ops[i].Free = append(ops[i].Free, ValueID(id))
		}
	}
	// Values a forward op writes, or forward data.
	fwd := make([]bool, len(s.Values))
	for _, op := range ops[:nf] {
		for _, o := range op.Out {
			if o >= 0 {
				fwd[o] = true
			}
		}
	}
	for _, op := range ops[nf:] {
		for _, list := range [][]ValueID{op.In, op.Saved} {
			for _, id := range list {
				if id >= 0 && (fwd[id] || s.Values[id].Data) {
					s.Values[id].Saved = true
				}
			}
		}
	}
}

// keptByOpCheckpoint says whether per-op selective checkpointing (strategies.RecomputeOp) keeps
// the outputs of a layer's forward op of kind k instead of replaying it in backward. torchtitan's
// policy (torchtitan/parallelisms/parallelize_llama.py, _save_list and _custom_policy, Dec 2024)
// saves the outputs of aten.mm except every second one, of scaled-dot-product attention and of
// reduce-scatter, and recomputes every other op of the layer; products counts the layer's matrix
// products so far. tpsim's layer fuses q, k and v into one product, so the saved products are
// qkv, the MLP's gate and its down projection, where torchtitan's are wq, wv, w1 and w2.
func keptByOpCheckpoint(k OpKind, products *int) bool {
	switch k {
	case OpLinear:
		*products++
		return *products%2 == 1
	case OpAttention, OpReduceScatter:
		return true
	}
	return false
}

// backwardTraffic is the bytes the backward kernels of the bias, elementwise, norm or attention
// op fop read and write, counted in tensors of its output's size (n elements of a bytes) from
// the shapes, not from fop.MemBytes, which a fused forward splits (builder.residual):
//   - bias: the input's gradient is the output's (no kernel); the bias gradient sums it over the
//     rows, reading it once (PyTorch's AddBackward passes the gradient through): 1.
//   - dropout: reads dy and the 1-byte mask, writes dx (native_dropout_backward, one masked
//     scale): 2 and the mask, as its forward.
//   - activation (GELU, SiLU, ReLU): reads dy and x, writes dx (gelu_backward, silu_backward,
//     threshold_backward): 3, where the forward moves 2.
//   - norm (LayerNorm, RMSNorm): two kernels, the weight (and bias) gradient reading dy and x,
//     the input gradient reading dy and x and writing dx (PyTorch's layer_norm_backward:
//     GammaBetaBackward and the dX kernel; apex's FusedLayerNorm: cuComputePartGradGammaBeta
//     and cuComputeGradInput): 5, where the forward moves 2.
//     An RMSNorm written as eager PyTorch ops (Strategy.EagerKernels) moves eagerRMSNormBackwardBytes.
//   - mul (SwiGLU's gate) and eager attention: twice the forward (MulBackward's da = dy b and
//     db = dy a as two kernels; attention's two products and passes over the scores per
//     forward one). The rotary embedding's eager kernels, which the attention op carries
//     (builder.attention), move as much in backward as in forward: once, not twice.
func (b *builder) backwardTraffic(s *Stage, fop Op) units.Bytes {
	y := s.Values[fop.Out[0]]
	n, a := elems(y.Shape), int64(y.Elem)
	switch fop.Kind {
	case OpBias:
		return units.Bytes(n * a)
	case OpDropout:
		return units.Bytes(n * (2*a + 1))
	case OpAct:
		return units.Bytes(3 * n * a)
	case OpNorm:
		if b.eagerNorm(fop.Norm) {
			return eagerRMSNormBackwardBytes(n, a)
		}
		return units.Bytes(5 * n * a)
	case OpAttention:
		rope := b.rotaryBytes(s, fop)
		return 2*(fop.MemBytes-rope) + rope
	}
	return 2 * fop.MemBytes
}
