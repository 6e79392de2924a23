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

// differentiate walks the forward tape backwards and emits each stage's backward ops: the backward
// of every compute op, the collectives that gradient placements need (docs/architecture.md, "Backward ops
// carry the collective that the gradient's placement needs"), pipeline sends of gradients,
// recomputation under full recompute, and ZeRO-3 gathers.
func (b *builder) differentiate() {
	grads := make(perStage[[]contrib], len(b.p.Stages))
	b.recomputeGathered = map[paramLoc]bool{}
	// Full recompute: the forward ops of each layer are replayed just before its backward.
	layerEnd := map[tapeEntry]layerRange{}
	for _, r := range b.layerOps {
		layerEnd[tapeEntry{r.stage, r.hi - 1}] = r
	}
	// remap is the recomputed copy of a value, plus one (0: none).
	remap := make(perStage[ValueID], len(b.p.Stages))
	saved := func(s int, id ValueID) ValueID {
		if r := remap.get(vkey{s, id}); r > 0 {
			return r - 1
		}
		return id
	}
	recvOf := map[vkey]vkey{}
	for _, sp := range b.sends {
		recvOf[sp.from] = sp.to
	}
	b.seqGathers()
	// The stage and the forward op being differentiated, which the helpers below read (made
	// once, not for every op).
	var s *Stage
	var fop Op
	var arena []contrib // addGrad's
	gradOf := func(id ValueID, want Placement, allowPartial bool) ValueID {
		return b.collectGrad(grads, vkey{s.Index, id}, want, allowPartial, fop.Module)
	}
	addGrad := func(id ValueID, g ValueID, pl Placement) {
		if g < 0 || !b.needsGrad.get(vkey{s.Index, id}) {
			return
		}
		k := vkey{s.Index, id}
		cs := grads.get(k)
		if cs == nil {
			// Most values get one contribution: carve it out of a shared array (capped, so
			// that a second one copies).
			if len(arena) == cap(arena) {
				arena = make([]contrib, 0, min(2*cap(arena)+32, 4096))
			}
			arena = append(arena, contrib{g, pl})
			grads.set(k, arena[len(arena)-1:len(arena):len(arena)])
			return
		}
		grads.set(k, append(cs, contrib{g, pl}))
	}
	newGrad := func(of ValueID, pl Placement) ValueID {
		v := s.Values[of]
		return b.val(b.name("grad.", v.Name), v.Shape, pl)
	}
	emitB := func(op Op) {
		op.Phase = Backward
		if op.Kind.IsCollective() || op.Kind == OpSlice || op.Kind == OpSend || op.Kind == OpRecv {
			op.Fwd = -1
		}
		s.Backward = append(s.Backward, op)
	}
	gradPlace := func(pl Placement) Placement {
		if pl.Kind == Partial {
			return Placement{Kind: Replicate}
		}
		return pl
	}
	for ti := len(b.tape) - 1; ti >= 0; ti-- {
		te := b.tape[ti]
		b.stage = b.p.Stages[te.stage]
		s = b.stage
		fop = s.Forward[te.op]
		if r, ok := layerEnd[te]; ok && (b.st.Recompute == strategies.RecomputeFull || b.st.Recompute == strategies.RecomputeOp) {
			products := 0
			for i := r.lo; i < r.hi; i++ {
				op := s.Forward[i]
				if b.st.Recompute == strategies.RecomputeOp && keptByOpCheckpoint(op.Kind, &products) {
					continue // its outputs stay saved from the forward
				}
				op.Recompute, op.Phase, op.Fwd = true, Backward, -1
				op.In = b.mapIDs(op.In, func(id ValueID) ValueID { return saved(s.Index, id) })
				outs := b.ids(op.Out...)
				for j, o := range op.Out {
					v := s.Values[o]
					nv := ValueID(len(s.Values))
					v.ID, v.Name = nv, b.name(v.Name, ".re")
					s.Values = append(s.Values, v)
					remap.set(vkey{s.Index, o}, nv+1)
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
		switch fop.Kind {
		case OpLoss:
			y, yv := fop.In[0], s.Values[fop.In[0]]
			gpl := Placement{Kind: Replicate}
			sv, mem, flops, elems := b.ids(saved(s.Index, y), fop.In[1]), fop.MemBytes, fop.FLOPs, fop.Elems
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
				sv = b.ids(saved(s.Index, yin), fop.In[1], fop.Out[1])
				mem, flops, elems = units.Bytes(8*n), units.FLOPs(5*n), n
				if yv.Elem < 4 {
					mem = units.Bytes(n * int64(12+yv.Elem))
				}
			case len(fop.Out) == 3: // [loss, fp32 copy, log-probabilities]: OpLoss's doc
				// The fp32 loss of mixed precision (build.go): the backward reads the saved
				// log-probabilities. Per logit: the loss's backward writes a dense fp32 gradient
				// (4 bytes), log_softmax's backward reads it and the output and writes its own
				// (12), the cast back reads 4 and writes e.
				sv = b.ids(saved(s.Index, fop.Out[2]), fop.In[1])
				mem = units.Bytes(yv.Elems() * int64(20+yv.Elem))
			}
			g := newGrad(y, gpl)
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
			emitB(Op{Kind: OpLoss, Loss: fop.Loss, Module: fop.Module, Fwd: te.op, Out: outs, Scale: fop.Scale, Elems: elems,
				VocabLo: fop.VocabLo, VocabHi: fop.VocabHi, Saved: sv, FLOPs: flops, MemBytes: mem, GradInput: true})
			addGrad(y, g, gpl)
		case OpSend:
			r := recvOf[vkey{s.Index, fop.In[0]}]
			if !b.needsGrad.get(r) {
				continue
			}
			v := s.Values[fop.In[0]]
			g := newGrad(fop.In[0], gradPlace(v.Place))
			emitB(Op{Kind: OpRecv, Module: "pp", Out: b.ids(g), Dim: strategies.DimPP, Group: 2, Peer: r.stage, FullBytes: v.Bytes(), MemBytes: v.Bytes()})
			addGrad(fop.In[0], g, gradPlace(v.Place))
		case OpRecv:
			out := fop.Out[0]
			if !b.needsGrad.get(vkey{s.Index, out}) {
				continue
			}
			v := s.Values[out]
			g := gradOf(out, gradPlace(v.Place), false)
			if g < 0 {
				continue
			}
			emitB(Op{Kind: OpSend, Module: "pp", In: b.ids(g), Dim: strategies.DimPP, Group: 2, Peer: fop.Peer, SentBytes: v.Bytes(), FullBytes: v.Bytes(), MemBytes: v.Bytes()})
		case OpAllReduce:
			// Partial -> Replicate: the gradient of each summand is the gradient of the sum.
			out := fop.Out[0]
			g := gradOf(out, Placement{Kind: Replicate}, false)
			addGrad(fop.In[0], g, Placement{Kind: Replicate})
		case OpReduceScatter:
			if fop.Dim != strategies.DimTP {
				continue
			}
			g := gradOf(fop.Out[0], s.Values[fop.Out[0]].Place, false)
			if g < 0 {
				continue
			}
			gg := b.collective(OpAllGather, g, Placement{Kind: Replicate}, fop.Axis, fop.Module)
			emitB(s.lastBuilt(b))
			addGrad(fop.In[0], gg, Placement{Kind: Replicate})
		case OpAllGather:
			if fop.Dim != strategies.DimTP {
				if fop.Dim == strategies.DimCP {
					// Reduce-scatter the key/value gradients back over the context-parallel group.
					v := s.Values[fop.Out[0]]
					n := v.Bytes()
					emitB(Op{Kind: OpReduceScatter, Module: fop.Module, Dim: strategies.DimCP, Group: fop.Group, Axis: 1,
						SentBytes: fop.SentBytes, FullBytes: n, MemBytes: n})
				}
				continue
			}
			in := fop.In[0]
			if !b.needsGrad.get(vkey{s.Index, in}) {
				continue
			}
			g, pl := b.sumGrad(grads, vkey{s.Index, fop.Out[0]}, fop.Module)
			if g < 0 {
				continue
			}
			inPl := s.Values[in].Place
			var gi ValueID
			if pl.Kind == Partial {
				gi = b.collective(OpReduceScatter, g, inPl, inPl.Dim, fop.Module)
			} else {
				gi = b.collective(OpSlice, g, inPl, inPl.Dim, fop.Module)
			}
			emitB(s.lastBuilt(b))
			addGrad(in, gi, inPl)
		case OpSlice:
			in := fop.In[0]
			if !b.needsGrad.get(vkey{s.Index, in}) {
				continue
			}
			g := gradOf(fop.Out[0], s.Values[fop.Out[0]].Place, false)
			if g < 0 {
				continue
			}
			gg := b.collective(OpAllGather, g, Placement{Kind: Replicate}, fop.Axis, fop.Module)
			emitB(s.lastBuilt(b))
			addGrad(in, gg, Placement{Kind: Replicate})
		case OpAllToAll:
			in := fop.In[0]
			g := gradOf(fop.Out[0], s.Values[fop.Out[0]].Place, false)
			if g < 0 || !b.needsGrad.get(vkey{s.Index, in}) {
				continue
			}
			gi := b.collective(OpAllToAll, g, s.Values[in].Place, s.Values[in].Place.Dim, fop.Module)
			emitB(s.lastBuilt(b))
			addGrad(in, gi, s.Values[in].Place)
		case OpAdd:
			out := fop.Out[0]
			g, pl := b.sumGrad(grads, vkey{s.Index, out}, fop.Module)
			if g < 0 {
				continue
			}
			addGrad(fop.In[0], g, pl)
			addGrad(fop.In[1], g, pl)
		default:
			b.computeBackward(te.op, fop, grads, saved, gradOf, addGrad, newGrad, emitB)
		}
	}
}

// lastBuilt pops the op that collective() appended to Forward (it builds with emit) so that it can
// be re-emitted as a backward op.
func (s *Stage) lastBuilt(b *builder) Op {
	op := s.Forward[len(s.Forward)-1]
	s.Forward = s.Forward[:len(s.Forward)-1]
	b.tape = b.tape[:len(b.tape)-1]
	return op
}

// mapIDs is f of each of ids, carved out of the builder's arena (builder.ids).
func (b *builder) mapIDs(ids []ValueID, f func(ValueID) ValueID) []ValueID {
	out := b.ids(ids...)
	for i, id := range out {
		out[i] = f(id)
	}
	return out
}

// collective builds (with emit, popped by lastBuilt) a redistribution of gradient g.
func (b *builder) collective(kind OpKind, g ValueID, to Placement, axis int, module string) ValueID {
	src := b.v(g)
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
	frac := units.Bytes(b.tp-1) / units.Bytes(b.tp)
	op := Op{Kind: kind, Module: module, In: b.ids(g), Dim: strategies.DimTP, Group: b.tp, Axis: axis, FullBytes: n, MemBytes: n}
	switch kind {
	case OpAllReduce:
		op.SentBytes = 2 * frac * n
	case OpAllGather, OpReduceScatter, OpAllToAll:
		op.SentBytes = frac * n
	case OpSlice:
		op.Dim, op.Group = "", 0
	}
	id := b.val(b.name(src.Name, ".", string(kind)), out, to)
	b.v(id).Elem = src.Elem // n counts the source's element size; so does the result
	op.Out = b.ids(id)
	b.emit(op)
	return id
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

func (b *builder) bwdCollective(kind OpKind, g ValueID, to Placement, axis int, module string) ValueID {
	id := b.collective(kind, g, to, axis, module)
	op := b.stage.lastBuilt(b)
	op.Phase, op.Fwd = Backward, -1
	b.stage.Backward = append(b.stage.Backward, op)
	return id
}

// collectGrad sums the gradient of k and brings it to placement want (a Partial gradient of a
// Replicate value is all-reduced here, where the op that produced the value needs it whole).
func (b *builder) collectGrad(grads perStage[[]contrib], k vkey, want Placement, allowPartial bool, module string) ValueID {
	g, pl := b.sumGrad(grads, k, module)
	if g < 0 {
		return -1
	}
	if pl == want || (allowPartial && pl.Kind == Partial) {
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

// computeBackward emits the backward op of a compute op and the gradients of its inputs.
func (b *builder) computeBackward(fi int, fop Op, grads perStage[[]contrib], saved func(int, ValueID) ValueID,
	gradOf func(ValueID, Placement, bool) ValueID, addGrad func(ValueID, ValueID, Placement),
	newGrad func(ValueID, Placement) ValueID, emitB func(Op)) {
	s := b.stage
	out := fop.Out[0]
	outPl := s.Values[out].Place
	want := outPl
	if want.Kind == Partial {
		want = Placement{Kind: Replicate}
	}
	g := gradOf(out, want, false)
	if g < 0 {
		return
	}
	sv := func(ids ...ValueID) []ValueID {
		return b.mapIDs(ids, func(id ValueID) ValueID { return saved(s.Index, id) })
	}
	op := Op{Kind: fop.Kind, Module: fop.Module, Fwd: fi, In: b.ids(g), Param: fop.Param, Bias: fop.Bias, Act: fop.Act, Norm: fop.Norm, Elems: fop.Elems, M: fop.M, N: fop.N, K: fop.K,
		VocabLo: fop.VocabLo, VocabHi: fop.VocabHi, Heads: fop.Heads, KVHeads: fop.KVHeads, HeadDim: fop.HeadDim}
	needIn := func(i int) bool { return i < len(fop.In) && b.needsGrad.get(vkey{s.Index, fop.In[i]}) }
	if b.st.ZeRO == 3 && fop.Param != "" && !b.recomputeGathered[paramLoc{s.Index, fop.Param}] {
		b.zeroGather(fop, emitB)
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
			gx := newGrad(x, pl)
			op.Out = b.ids(gx)
			emitB(op)
			addGrad(x, gx, pl)
		} else {
			emitB(op)
		}
	case OpBias:
		op.FLOPs, op.MemBytes = fop.FLOPs, b.backwardTraffic(s, fop)
		emitB(op)
		addGrad(fop.In[0], g, outPl)
	case OpEmbedding:
		if len(fop.In) > 0 {
			op.Saved = sv(fop.In[0])
		}
		op.FLOPs, op.MemBytes = units.FLOPs(elems(s.Values[out].Shape)), fop.MemBytes
		emitB(op)
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
			if !b.needsGrad.get(vkey{s.Index, in}) {
				outs = append(outs, -1)
				continue
			}
			pl := s.Values[in].Place
			gi := newGrad(in, pl)
			outs = append(outs, gi)
			add = append(add, pending{in, gi, pl})
		}
		op.Out = outs
		emitB(op)
		// The inputs' gradients, last input first.
		for i := len(add) - 1; i >= 0; i-- {
			addGrad(add[i].in, add[i].g, add[i].pl)
		}
	default:
		panic("program: no backward for " + string(fop.Kind))
	}
	if b.st.ZeRO == 3 && fop.Param != "" {
		b.zeroReduce(fop, emitB)
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
	g := b.st.Mesh.DP * b.st.Mesh.CP
	n := b.opParamBytes(fop, b.p.ParamBytes)
	emit(Op{Kind: OpAllGather, Module: fop.Module, Params: opParams(fop), Dim: strategies.DimDP, Group: g,
		SentBytes: n * units.Bytes(g-1) / units.Bytes(g), FullBytes: n, MemBytes: n})
}

// zeroReduce is ZeRO-3's reduce-scatter of a module's gradients over dp after its backward.
func (b *builder) zeroReduce(fop Op, emit func(Op)) {
	g := b.st.Mesh.DP * b.st.Mesh.CP
	n := b.opParamBytes(fop, b.p.GradBytes)
	emit(Op{Kind: OpReduceScatter, Module: fop.Module, Params: opParams(fop), Dim: strategies.DimDP, Group: g,
		SentBytes: n * units.Bytes(g-1) / units.Bytes(g), FullBytes: n, MemBytes: n})
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
