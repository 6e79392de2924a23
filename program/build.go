package program

import (
	"fmt"
	"slices"
	"sync"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func (b *builder) build() error {
	p, st := b.p, b.st
	b.memo = map[memoKey]ValueID{}
	nv := st.Mesh.PP * st.VPP
	p.Stages = make([]*Stage, nv)
	var counts []int
	if t := p.Model.Transformer; t != nil {
		counts = StageCounts(t.Layers, nv)
	}
	for i := range p.Stages {
		s := &Stage{Index: i, Rank: i % st.Mesh.PP}
		if counts != nil {
			s.reserve(counts[i], st)
		}
		p.Stages[i] = s
	}
	b.needsGrad = make(perStage[bool], nv)
	b.stage = p.Stages[0]
	mb := st.MBS
	var y ValueID
	var err error
	if m := p.Model; m.Transformer == nil {
		x := b.val("input", []int{mb, m.InDim}, Placement{Kind: Replicate})
		b.v(x).Data = true
		b.v(x).Elem = p.ActBytes
		y, err = b.sequential("", m.Root, x)
	} else {
		y, err = b.transformer()
	}
	if err != nil {
		return err
	}
	b.loss(y)
	b.differentiate()
	if b.noOptimizer {
		return nil
	}
	for _, s := range p.Stages {
		b.stage = s
		b.optimizer()
	}
	return nil
}

// reserve makes room in s for the ops and values of a transformer stage of layers layers, so
// that appending does not copy them over and over (an Op is about 450 bytes): about 18 forward
// ops a layer and the embedding's, head's and loss's, as many backward ones, a layer's forward
// again under full or per-op recompute and half again under ZeRO-3 (its gathers and
// reductions), and about two values per op (three and a half under recompute). A guess: it
// changes only the capacities.
func (s *Stage) reserve(layers int, st strategies.Strategy) {
	f := 18*layers + 14
	bwd, vals := f, 2*f
	if st.Recompute == strategies.RecomputeFull || st.Recompute == strategies.RecomputeOp {
		bwd, vals = 2*f, 7*f/2
	}
	if st.ZeRO == 3 {
		bwd += f / 2
	}
	r, _ := recycled.Get().(*Stage)
	if r == nil {
		r = &Stage{}
	}
	s.Forward, s.Backward, s.Values, s.Params = reuse(r.Forward, f), reuse(r.Backward, bwd), reuse(r.Values, vals), reuse(r.Params, 4*layers+8)
}

// reuse is a, emptied, where it holds n, else a new array of n.
func reuse[T any](a []T, n int) []T {
	if cap(a) >= n {
		return a[:0]
	}
	return make([]T, 0, n)
}

// recycled holds stages whose arrays Recycle gave back.
var recycled sync.Pool

// Recycle gives the arrays of p's ops and values to later lowerings, which overwrite them, and
// drops p.Stages: nothing read from p's stages (ops, values) may be used after. For callers that
// lower many Programs and keep only their prices (costmodel.Derived).
func Recycle(p *Program) {
	for _, s := range p.Stages {
		recycled.Put(&Stage{Forward: s.Forward, Backward: s.Backward, Values: s.Values, Params: s.Params})
	}
	p.Stages = nil
}

type memoKey struct {
	stage int
	v     ValueID
	to    Placement
}

// prepare applies PrepareModuleInput styles to x before module fqn runs.
func (b *builder) prepareInput(fqn string, x ValueID) ValueID {
	switch b.styles[fqn] {
	case strategies.InputReplicate, strategies.NoParallel:
		return b.redistribute(x, Placement{Kind: Replicate}, fqn)
	case strategies.InputShard:
		return b.redistribute(x, Placement{Kind: Shard, Dim: -1}, fqn)
	}
	return x
}

func (b *builder) prepareOutput(fqn string, y ValueID) ValueID {
	switch b.styles[fqn] {
	case strategies.OutputReplicate:
		return b.redistribute(y, Placement{Kind: Replicate}, fqn)
	case strategies.OutputShard:
		return b.redistribute(y, Placement{Kind: Shard, Dim: -1}, fqn)
	}
	return y
}

// sequential lowers the children of a Sequential in order.
func (b *builder) sequential(prefix string, mod *model.Module, x ValueID) (ValueID, error) {
	var err error
	for _, c := range mod.Children {
		fqn := join(prefix, c.Name)
		x = b.prepareInput(fqn, x)
		switch c.Kind {
		case model.KindLinear:
			x, err = b.linear(fqn, c, x)
		case model.KindReLU:
			x = b.elementwise(fqn, "relu", x)
		case model.KindGELU:
			x = b.elementwise(fqn, "gelu", x)
		case model.KindLayerNorm, model.KindRMSNorm:
			x, err = b.norm(fqn, c, x)
		case model.KindSequential:
			x, err = b.sequential(fqn, c, x)
		default:
			return 0, fmt.Errorf("program: module %q of kind %s cannot appear in a Sequential MLP", fqn, c.Kind)
		}
		if err != nil {
			return 0, err
		}
		x = b.prepareOutput(fqn, x)
	}
	return x, nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (b *builder) transformer() (ValueID, error) {
	p, st := b.p, b.st
	t := p.Model.Transformer
	root := p.Model.Root
	seq := st.Seq / st.Mesh.CP
	mb := st.MBS
	ids := b.val("ids", []int{mb, seq}, Placement{Kind: Replicate})
	b.v(ids).Elem, b.v(ids).Data, b.v(ids).Int = 4, true, true
	x, err := b.embedding("embed", root.Child("embed"), ids)
	if err != nil {
		return 0, err
	}
	if pos := root.Child("pos"); pos != nil {
		px, err := b.embedding("pos", pos, -1)
		if err != nil {
			return 0, err
		}
		x = b.add("pos", x, px)
	}
	x = b.hiddenDropout("embed.dropout", x)
	layers := root.Child("layers")
	nv := len(p.Stages)
	stageOf := StageLayers(t.Layers, nv)
	for li, blk := range layers.Children {
		// Narayanan et al. 2021 §2.2.2: with v model chunks, device i holds chunks i, i+p, ...
		vs := stageOf[li]
		if vs != b.stage.Index {
			x = b.sendRecv(x, p.Stages[vs])
			b.stage.LayerLo = li
		}
		b.stage.LayerHi = li + 1
		lo := len(b.stage.Forward)
		if x, err = b.block("layers."+blk.Name, blk, x); err != nil {
			return 0, err
		}
		b.layerOps = append(b.layerOps, layerRange{b.stage.Index, lo, len(b.stage.Forward)})
	}
	if b.stage.Index != nv-1 {
		x = b.sendRecv(x, p.Stages[nv-1])
	}
	if x, err = b.norm("norm", root.Child("norm"), x); err != nil {
		return 0, err
	}
	if head := root.Child("head"); head != nil {
		return b.linear("head", head, x)
	}
	// Tied output head: logits = x E^T with the embedding's weight; a vocabulary-parallel
	// embedding makes it column-parallel over the vocabulary.
	emb := root.Child("embed")
	tied := &model.Module{Kind: model.KindLinear, In: emb.Dim, Out: emb.Num}
	// (builder.linear reads tiedColwise: the styles may be shared by other Programs, so they
	// are not written.)
	b.tiedColwise = b.styles["embed"] == strategies.Rowwise
	b.tiedHead = true
	return b.linear("head", tied, x)
}

type layerRange struct{ stage, lo, hi int }

func (b *builder) sendRecv(x ValueID, to *Stage) ValueID {
	from := b.stage
	xv := *b.v(x)
	bytes := xv.Bytes()
	send := pipelineOp(OpSend, to.Index, bytes)
	send.In = b.ids(x)
	b.emit(send)
	b.stage = to
	y := b.val(b.name(xv.Name, ".recv"), xv.Shape, xv.Place)
	if b.needsGrad.get(vkey{from.Index, x}) {
		b.needsGrad.set(vkey{to.Index, y}, true)
	}
	recv := pipelineOp(OpRecv, from.Index, bytes)
	recv.Out = b.ids(y)
	b.emit(recv)
	b.sends = append(b.sends, sendPair{vkey{from.Index, x}, vkey{to.Index, y}})
	return y
}

type sendPair struct{ from, to vkey }

// embedding lowers a token embedding (ids >= 0) or a learned position embedding (ids = -1).
func (b *builder) embedding(fqn string, mod *model.Module, ids ValueID) (ValueID, error) {
	st := b.styles[fqn]
	mb, seq := b.st.MBS, b.st.Seq/b.st.Mesh.CP
	outShape := []int{mb, seq, mod.Dim}
	op := Op{Kind: OpEmbedding, Module: fqn, VocabLo: 0, VocabHi: mod.Num}
	shard := -1
	var pl Placement
	switch st {
	case strategies.Rowwise:
		if err := b.checkShardable(fqn, mod.Num, "num_embeddings"); err != nil {
			return 0, err
		}
		shard, pl = 0, Placement{Kind: Partial}
		op.VocabHi = mod.Num / b.tp
	case strategies.Colwise:
		if err := b.checkShardable(fqn, mod.Dim, "embedding_dim"); err != nil {
			return 0, err
		}
		shard, pl = 1, Placement{Kind: Shard, Dim: -1}
		outShape[2] /= b.tp
	default:
		pl = Placement{Kind: Replicate}
	}
	op.Param = b.param(fqn, "weight", []int{mod.Num, mod.Dim}, shard)
	if ids >= 0 {
		op.In = b.ids(ids)
	}
	y := b.val(b.name(fqn, ".out"), outShape, pl)
	op.Out = b.ids(y)
	op.MemBytes = b.v(y).Bytes()
	b.emit(op)
	if st == strategies.Rowwise {
		y = b.redistribute(y, b.rowwiseOutput(outShape), fqn)
	}
	return y, nil
}

// block lowers a pre-norm transformer block: x + attn(norm1(x)), then x + mlp(norm2(x)).
func (b *builder) block(prefix string, blk *model.Module, x ValueID) (ValueID, error) {
	sublayers := [...]struct {
		norm, name string
		lower      func(fqn string, mod *model.Module, x ValueID) (ValueID, error)
	}{{"norm1", "attn", b.attention}, {"norm2", "mlp", b.mlp}}
	for _, sl := range sublayers {
		h, err := b.norm(prefix+"."+sl.norm, blk.Child(sl.norm), x)
		if err != nil {
			return 0, err
		}
		y, err := sl.lower(prefix+"."+sl.name, blk.Child(sl.name), h)
		if err != nil {
			return 0, err
		}
		x = b.residual(prefix+"."+sl.name, x, y)
	}
	return x, nil
}

// residual closes a block: dropout on its output y (when the model has it) added to the residual
// stream x. Under Strategy.Fusion the row-parallel bias, the dropout and the add run as one kernel
// (Megatron-LM's bias_dropout_add_fused_train): it reads y before its bias and x, and writes the
// sum and the 1-byte mask, so the ops keep their FLOPs and their order (exec and the gradients
// are unchanged) but their bytes are split as the one kernel moves them: the bias reads y, the
// dropout writes its mask, the add reads x and writes the sum.
func (b *builder) residual(fqn string, x, y ValueID) ValueID {
	out := b.add(fqn, x, b.hiddenDropout(fqn+".dropout", y))
	if !b.st.Fusion {
		return out
	}
	ops := b.stage.Forward
	add := &ops[len(ops)-1]
	n := elems(b.v(out).Shape)
	a := int64(b.p.ActBytes)
	in := add.In[1]
	// producer finds the forward op that wrote v, among the ops of this block's tail.
	producer := func(v ValueID, kind OpKind) *Op {
		for i := len(ops) - 2; i >= 0; i-- {
			if slices.Contains(ops[i].Out, v) {
				if ops[i].Kind == kind && elems(b.v(v).Shape) == n {
					return &ops[i]
				}
				return nil
			}
		}
		return nil
	}
	read := units.Bytes(n * a) // the branch, read once by the first op of the chain
	if d := producer(in, OpDropout); d != nil {
		d.MemBytes = units.Bytes(n) // writes the mask
		if bias := producer(d.In[0], OpBias); bias != nil {
			bias.MemBytes = read
		} else {
			d.MemBytes += read
		}
	} else if bias := producer(in, OpBias); bias != nil {
		bias.MemBytes = read
	} else {
		return out // a lone add is one kernel already
	}
	add.MemBytes = units.Bytes(2 * n * a) // reads the residual, writes the sum
	return out
}

func (b *builder) attention(fqn string, mod *model.Module, x ValueID) (ValueID, error) {
	qkv, err := b.linear(fqn+".qkv", mod.Child("qkv"), x)
	if err != nil {
		return 0, err
	}
	qv := b.v(qkv)
	heads, kv := mod.Heads, mod.KVHeads
	if qv.Place.Kind == Shard {
		heads /= b.tp
		kv /= b.tp
	} else if qv.Place.Kind == Partial {
		qkv = b.redistribute(qkv, Placement{Kind: Replicate}, fqn)
		qv = b.v(qkv)
	}
	mb, s := qv.Shape[0], qv.Shape[1]
	in := b.ids(qkv)
	sFull := s
	if cp := b.st.Mesh.CP; cp > 1 {
		// Context parallel (Llama 3 §3.3.2): keys and values are all-gathered over cp before attention.
		sFull = s * cp
		kvShape := []int{mb, sFull, 2 * kv * mod.HeadDim}
		full := units.Bytes(elems(kvShape) * int64(b.p.ActBytes))
		kvAll := b.val(b.name(fqn, ".kv_cp"), kvShape, qv.Place)
		gather := collectiveOp(OpAllGather, strategies.DimCP, cp, full)
		gather.Module, gather.In, gather.Out, gather.Axis = fqn, b.ids(qkv), b.ids(kvAll), 1
		b.emit(gather)
		in = append(in, kvAll)
	}
	o := b.val(b.name(fqn, ".core"), []int{mb, s, heads * mod.HeadDim}, qv.Place)
	op := Op{Kind: OpAttention, Module: fqn, In: in, Out: b.ids(o), Heads: heads, KVHeads: kv, HeadDim: mod.HeadDim}
	op.Elems = int64(mb) * int64(heads) * int64(s) * int64(sFull)
	// QK^T and (softmax)V over the local heads, the full s x S product (attentionFLOPs).
	products := attentionFLOPs(mb, s, sFull, heads*mod.HeadDim)
	switch {
	case b.st.FusedAttention():
		// FlashAttention, of either generation (Dao 2023 §3.1), keeps the output and the softmax's
		// log-sum-exp, one fp32 per query row and head, and regenerates its dropout mask from the
		// RNG state in backward. Recompute modes leave it as it is: its backward always recomputes
		// the scores. A causal mask lets the kernel skip the blocks above the diagonal, half the
		// products (Dao 2023 §4.1 counts it so). It reads qkv (and the gathered keys and values) and
		// writes the output and the lse.
		lse := b.val(b.name(fqn, ".lse"), []int{mb, heads, s}, qv.Place)
		b.v(lse).Elem = 4
		op.Out = append(op.Out, lse)
		op.P = b.dropout()
		op.FLOPs = units.FLOPs(products / 2)
		op.MemBytes = qv.Bytes() + b.v(o).Bytes() + b.v(lse).Bytes()
		if len(in) > 1 {
			op.MemBytes += b.v(in[1]).Bytes()
		}
	default:
		if b.st.Recompute != strategies.RecomputeSelective {
			// The softmax output (and dropout's mask and output) is what the attention's backward
			// reads. Without recompute it is saved; under full recompute the forward's copy is
			// transient (freed by this op: the backward reads the copy the replayed forward writes,
			// as Megatron-LM's checkpointed layer keeps the probabilities of the layer it
			// recomputes); only selective recompute drops it and recomputes it inside the backward
			// op (Korthikanti et al. 2022 §4.2).
			probShape := []int{mb, heads, s, sFull}
			probs := b.val(b.name(fqn, ".probs"), probShape, qv.Place)
			op.Out = append(op.Out, probs)
			if pd := b.dropout(); pd > 0 {
				// Attention dropout keeps its 1-byte mask and its output, the input of the product
				// with V (Korthikanti et al. 2022 §4.1: as^2b + 2as^2b of the 5as^2b).
				mask := b.val(b.name(fqn, ".attn_mask"), probShape, qv.Place)
				b.v(mask).Elem = 1
				dropped := b.val(b.name(fqn, ".dropped"), probShape, qv.Place)
				op.Out = append(op.Out, mask, dropped)
				op.P = pd
			}
		}
		op.FLOPs = units.FLOPs(products)
		probBytes := op.Elems * int64(b.p.ActBytes)
		op.MemBytes = qv.Bytes() + b.v(o).Bytes() + units.Bytes(2*probBytes)
		if b.dropout() > 0 {
			op.MemBytes += units.Bytes(2*probBytes + probBytes/int64(b.p.ActBytes)) // dropout: read, write, mask
		}
	}
	op.MemBytes += b.rotaryBytes(b.stage, op)
	b.emit(op)
	return b.linear(fqn+".proj", mod.Child("proj"), o)
}

func (b *builder) mlp(fqn string, mod *model.Module, x ValueID) (ValueID, error) {
	if !mod.Gated {
		h, err := b.linear(fqn+".fc1", mod.Child("fc1"), x)
		if err != nil {
			return 0, err
		}
		h = b.elementwise(fqn+".act", "gelu", h)
		return b.linear(fqn+".fc2", mod.Child("fc2"), h)
	}
	g, err := b.linear(fqn+".gate", mod.Child("gate"), x)
	if err != nil {
		return 0, err
	}
	u, err := b.linear(fqn+".up", mod.Child("up"), x)
	if err != nil {
		return 0, err
	}
	g = b.elementwise(fqn+".silu", "silu", g)
	if b.v(g).Place != b.v(u).Place {
		u = b.redistribute(u, b.v(g).Place, fqn)
	}
	n := elems(b.v(g).Shape)
	y := b.val(b.name(fqn, ".mul"), b.v(g).Shape, b.v(g).Place)
	b.emit(Op{Kind: OpMul, Module: fqn, In: b.ids(g, u), Out: b.ids(y), FLOPs: units.FLOPs(n), MemBytes: units.Bytes(3 * n * int64(b.p.ActBytes))})
	return b.linear(fqn+".down", mod.Child("down"), y)
}

// loss applies the model's loss: vocabulary-parallel cross-entropy on logits sharded over the
// vocabulary, else on the output gathered when a plan left it sharded.
func (b *builder) loss(y ValueID) {
	if yv := b.v(y); b.p.Model.Loss == model.KindCrossEntropy && b.tp > 1 && yv.Place.Kind == Shard &&
		axisOf(yv.Shape, yv.Place.Dim) == len(yv.Shape)-1 {
		b.vocabParallelLoss(y)
		return
	}
	y = b.redistribute(y, Placement{Kind: Replicate}, "loss")
	yv := b.v(y)
	target := b.targets(yv.Shape)
	l := b.val("loss", []int{1}, Placement{Kind: Replicate})
	b.v(l).Elem = 4
	n := elems(yv.Shape)
	op := Op{Kind: OpLoss, Loss: b.p.Model.Loss, Module: "loss", In: b.ids(y, target), Out: b.ids(l),
		Scale: b.lossScale(), FLOPs: units.FLOPs(5 * n), MemBytes: units.Bytes(2 * n * int64(yv.Elem))}
	if b.p.Model.Loss == model.KindCrossEntropy && yv.Elem < 4 {
		// Mixed precision: cross-entropy runs in fp32 on an upcast copy of the logits (PyTorch's
		// autocast runs log_softmax and cross_entropy in float32; Megatron-LM passes
		// output.float() to its loss), and its backward reads the saved fp32 log-probabilities,
		// not the logits. The copy lives only during the op. Traffic per logit: the cast reads e
		// and writes 4 bytes, log_softmax reads the copy twice (max and sum, then normalise) and
		// writes 4.
		up := b.val("loss.logits_fp32", yv.Shape, Placement{Kind: Replicate})
		lp := b.val("loss.logprobs", yv.Shape, Placement{Kind: Replicate})
		b.v(up).Elem, b.v(lp).Elem = 4, 4
		op.Out = append(op.Out, up, lp)
		op.MemBytes = units.Bytes(n * int64(yv.Elem+16))
	}
	b.emit(op)
}

// targets is the data value of the loss's targets for outputs of shape y: one int32 class per row
// for cross-entropy, y's shape otherwise.
func (b *builder) targets(y []int) ValueID {
	shape := y
	if b.p.Model.Loss == model.KindCrossEntropy {
		shape = y[:len(y)-1]
	}
	t := b.val("targets", shape, Placement{Kind: Replicate})
	if b.p.Model.Loss == model.KindCrossEntropy {
		b.v(t).Elem, b.v(t).Int = 4, true
	}
	b.v(t).Data = true
	return t
}

// lossScale is the factor of each microbatch's loss: one over the microbatches of a step on all
// data- and context-parallel ranks.
func (b *builder) lossScale() float64 {
	return 1 / float64(b.p.Microbatches*b.st.Mesh.DP*b.st.Mesh.CP)
}

// vocabParallelLoss is cross-entropy on logits sharded over the vocabulary across tp, without
// gathering them, as Megatron-LM's vocab_parallel_cross_entropy and PyTorch's loss_parallel do:
// each rank reduces its shard to three numbers per row (OpLossStats), and every rank combines
// them into the loss and each row's log-sum-exp (OpLoss), which the backward reads with the shard
// to write the shard's gradient. Megatron-LM exchanges the numbers in three all-reduces (max,
// sum, sum) of one fp32 per row; tpsim all-gathers the three at once (3t fp32 per row, the same
// information in one collective, which exec's communicator runs without a max reduction); both
// are a few bytes per token against the logits' V/t. The statistics op is not on the tape, so
// nothing after it needs a gradient but through the combine, whose backward is the whole loss's.
// Under mixed precision the combine also lists the shard's fp32 copy, which its backward reads.
func (b *builder) vocabParallelLoss(y ValueID) {
	s, yv := b.stage, b.v(y)
	shape := yv.Shape
	rowsShape := shape[:len(shape)-1]
	rows := elems(rowsShape)
	n := elems(shape)
	local := shape[len(shape)-1]
	target := b.targets(shape)
	stats := b.val("loss.stats", append(append([]int(nil), rowsShape...), 3), Placement{Kind: Shard, Dim: -1})
	b.v(stats).Elem = 4
	// Traffic per local logit: read the shard twice (the max, then the sum of exponentials); under
	// mixed precision the upcast reads e and writes 4 bytes first, and the two passes read the copy,
	// which is kept for backward (Megatron-LM's .float() and saved softmax).
	so := Op{Kind: OpLossStats, Module: "loss", In: b.ids(y, target), Out: b.ids(stats), VocabLo: 0, VocabHi: local,
		FLOPs: units.FLOPs(5 * n), MemBytes: units.Bytes(n * 8), Elems: n, Phase: Forward, Fwd: -1}
	if yv.Elem < 4 {
		up := b.val("loss.logits_fp32", shape, yv.Place)
		b.v(up).Elem = 4
		so.Out = append(so.Out, up)
		so.MemBytes = units.Bytes(n * int64(yv.Elem+12))
	}
	s.Forward = append(s.Forward, so)
	// On the tape, but stats needs no gradient (the statistics op is not on it), so the gather gets
	// no backward.
	all := b.redistribute(stats, Placement{Kind: Replicate}, "loss")
	l := b.val("loss", []int{1}, Placement{Kind: Replicate})
	lse := b.val("loss.lse", rowsShape, Placement{Kind: Replicate})
	b.v(l).Elem, b.v(lse).Elem = 4, 4
	in := b.ids(y, target, all)
	if len(so.Out) == 2 {
		in = append(in, so.Out[1]) // the fp32 copy
	}
	b.emit(Op{Kind: OpLoss, Loss: b.p.Model.Loss, Module: "loss", In: in, Out: b.ids(l, lse),
		VocabLo: 0, VocabHi: local, Scale: b.lossScale(), Elems: rows,
		FLOPs: units.FLOPs(5 * rows * int64(b.tp)), MemBytes: b.v(all).Bytes() + b.v(lse).Bytes()})
}

// optimizer emits the gradient reductions, the update and the ZeRO parameter gathers of a stage.
func (b *builder) optimizer() {
	s := b.stage
	s.Optimizer = b.p.OptimizerOps(s.Index, len(b.p.Stages), s.Params)
}

// OptimizerOps is the optimizer phase of virtual stage index of nv holding params (in
// registration order): the tensor-parallel all-reduce of tp-partial gradients, the data-parallel
// gradient reduction in DDP buckets, the tied embedding's all-reduce over pp, the update and the
// ZeRO-1/2 parameter gather. Lower calls it for every stage; the closed form prices the same
// phase for a stage of any number of layers with OptimizerPhase, so the two cannot disagree on
// any of these ops.
func (p *Program) OptimizerOps(index, nv int, params []Param) []Op {
	var ops []Op
	p.OptimizerPhase(index, nv, StageParams{Pre: params}, true, func(op *Op, _ int) { ops = append(ops, *op) })
	return ops
}

// StageParams is a stage's parameters in registration order: Pre, then Layers copies of Layer
// (one transformer layer's; their names do not matter), then Post.
type StageParams struct {
	Pre, Layer, Post []Param
	Layers           int
}

// each calls f on every parameter of sp in registration order, Layer once (times Layers).
func (sp *StageParams) each(f func(q *Param, times int64)) {
	for i := range sp.Pre {
		f(&sp.Pre[i], 1)
	}
	if sp.Layers > 0 {
		for i := range sp.Layer {
			f(&sp.Layer[i], int64(sp.Layers))
		}
	}
	for i := range sp.Post {
		f(&sp.Post[i], 1)
	}
}

// OptimizerPhase is OptimizerOps for a stage whose parameters are sp: it calls emit with each op
// in OptimizerOps' order. With names false the ops name no parameters (Op.Params nil), and
// identical layers are not walked one by one: once a layer leaves DDP's open bucket as it found
// it, every later layer fills the same buckets, and emit gets each of that layer's buckets once
// with times, the number of layers that fill it alike (the order of the buckets within one layer
// is kept, so the last bucket emitted is the last one reduced). Otherwise times is 1. The op
// emit gets is valid during the call only.
func (p *Program) OptimizerPhase(index, nv int, sp StageParams, names bool, emit func(op *Op, times int)) {
	st := p.Strategy
	tp := st.Mesh.TP
	// One op at a time, in one variable (emit must not keep the pointer).
	var cur Op
	one := func(op Op, times int) {
		cur = op
		cur.Phase, cur.Fwd = Optimizer, -1
		emit(&cur, times)
	}
	g := st.Mesh.DP * st.Mesh.CP
	var partial, all []string
	var partialElems, total, embed int64
	sp.each(func(q *Param, times int64) {
		n := q.Elems()
		total += times * n
		if q.Name == "embed.weight" {
			embed = n
		}
		if names {
			for range times {
				all = append(all, q.Name)
			}
		}
		if !q.PartialTP || tp <= 1 {
			return
		}
		if names {
			for range times {
				partial = append(partial, q.Name)
			}
		}
		if st.ZeRO == 3 {
			// ZeRO-3 reduce-scattered the gradient over dp in backward: the rank all-reduces
			// its chunk (the first ranks' chunks are one element longer when g does not
			// divide the tensor: exec's comm.ChunkBounds).
			n = ceilDiv(n, int64(g))
		}
		partialElems += times * n
	})
	if partialElems > 0 {
		// Korthikanti et al. 2022 §4.2.2: parameters applied to sequence-parallel activations have
		// their gradients all-reduced over the tensor-parallel group.
		n := units.Bytes(partialElems * int64(p.GradBytes))
		op := collectiveOp(OpAllReduce, strategies.DimTP, tp, n)
		op.Module, op.Params = "grads", partial
		one(op, 1)
	}
	if g > 1 && st.ZeRO < 3 {
		p.buckets(&sp, names, func(elems int64, bucket []string, times int) {
			kind := OpAllReduce
			if st.ZeRO > 0 {
				kind = OpReduceScatter
			}
			op := collectiveOp(kind, strategies.DimDP, g, units.Bytes(elems*int64(p.GradBytes)))
			op.Module, op.Params = "grads", bucket
			one(op, times)
		})
	}
	if last := nv - 1; p.TiedHead() && st.Mesh.PP > 1 && (index == 0 || index == last) {
		// Tied embeddings over a pipeline: the first stage's embedding and the last stage's copy
		// for the output head are one parameter, so their gradients are summed before the update
		// by an all-reduce over the two pipeline ranks holding them (Shoeybi et al. 2019;
		// Megatron-LM's embedding group, _allreduce_embedding_grads in finalize_model_grads,
		// after the data-parallel reduction). It runs in place on the tp-local gradient, a ring
		// of two: each rank sends the whole gradient (SentBytes).
		peer := last
		if index == last {
			peer = 0
		}
		op := collectiveOp(OpAllReduce, strategies.DimPP, 2, units.Bytes(embed*int64(p.GradBytes)))
		op.Module, op.Peer = "embed", peer
		if names {
			op.Params = []string{"embed.weight"}
		}
		one(op, 1)
	}
	local := total
	if st.ZeRO >= 1 {
		local = ceilDiv(total, int64(g))
	}
	// Adam: about 10 FLOPs per parameter (two moment updates, bias corrections, sqrt, divide);
	// memory traffic reads and writes parameters, gradients and optimizer state.
	if names && all == nil {
		all = []string{}
	}
	one(Op{Kind: OpStep, Module: "optimizer", Params: all, FLOPs: units.FLOPs(10 * local), Elems: local,
		MemBytes: units.Bytes(local * int64(2*(p.ParamBytes+p.OptBytes)+p.GradBytes))}, 1)
	if st.ZeRO == 1 || st.ZeRO == 2 {
		op := collectiveOp(OpAllGather, strategies.DimDP, g, units.Bytes(total*int64(p.ParamBytes)))
		op.Module, op.Params = "params", slices.Clone(all)
		one(op, 1)
	}
}

// buckets calls emit with the elements of each DDP gradient bucket of sp (and their names when
// names is true), in the order DDP fills them during backward: parameters in reverse
// registration order join the open bucket until it holds at least Strategy.BucketBytes
// (torch.nn.parallel.DistributedDataParallel, bucket_cap_mb). Without names, the layers after
// one that leaves the open bucket as it found it fill the same buckets: emit gets those once,
// with how many layers fill them (OptimizerPhase).
func (p *Program) buckets(sp *StageParams, names bool, emit func(elems int64, bucket []string, times int)) {
	var bucket []string
	var be int64
	limit, gb := p.Strategy.BucketBytes, int64(p.GradBytes)
	// A layer's buckets while they are recorded: their elements, from the second layer that
	// found the open bucket as the first did.
	var rec []int64
	recording := false
	add := func(q *Param) {
		if names {
			bucket = append(bucket, q.Name)
		}
		be += q.Elems()
		if be*gb >= limit {
			if recording {
				rec = append(rec, be)
			} else {
				emit(be, bucket, 1)
			}
			bucket, be = nil, 0
		}
	}
	run := func(ps []Param) {
		for i := len(ps) - 1; i >= 0; i-- {
			add(&ps[i])
		}
	}
	run(sp.Post)
	for l := 0; l < sp.Layers; l++ {
		if names {
			run(sp.Layer)
			continue
		}
		// Walk one layer, recording its buckets; when it leaves the open bucket as it found it
		// and closed some, every remaining layer closes the same ones.
		from := be
		recording, rec = true, rec[:0]
		run(sp.Layer)
		recording = false
		if be == from && len(rec) > 0 {
			for _, e := range rec {
				emit(e, nil, sp.Layers-l)
			}
			break
		}
		for _, e := range rec {
			emit(e, nil, 1)
		}
	}
	run(sp.Pre)
	if be > 0 {
		emit(be, bucket, 1)
	}
}

// TiedHead reports whether the output head reads the embedding's weight (a transformer without
// a head module of its own).
func (p *Program) TiedHead() bool {
	return p.Model.Transformer != nil && p.Model.Root.Child("head") == nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// dropout is the model's dropout probability (0 for models without dropout).
func (b *builder) dropout() float64 {
	if t := b.p.Model.Transformer; t != nil {
		return t.Dropout
	}
	return 0
}

// hiddenDropout applies dropout to x when the model has it; the 1-byte mask is kept for backward
// (Korthikanti et al. 2022 §4.1 counts sbh for each).
func (b *builder) hiddenDropout(fqn string, x ValueID) ValueID {
	pd := b.dropout()
	if pd == 0 {
		return x
	}
	xv := b.v(x)
	if xv.Place.Kind == Partial {
		x = b.redistribute(x, Placement{Kind: Replicate}, fqn)
		xv = b.v(x)
	}
	y := b.val(b.name(fqn, ".out"), xv.Shape, xv.Place)
	mask := b.val(b.name(fqn, ".mask"), xv.Shape, xv.Place)
	b.v(mask).Elem = 1
	n := elems(xv.Shape)
	b.emit(Op{Kind: OpDropout, Module: fqn, P: pd, In: b.ids(x), Out: b.ids(y, mask),
		FLOPs: units.FLOPs(n), MemBytes: units.Bytes(n * int64(2*b.p.ActBytes+1))})
	return y
}

// StageLayers assigns each of layers transformer layers to one of stages pipeline stages, in
// order. When stages does not divide layers, every stage gets the rounded-up count except that
// the first and last stages, which also hold the embedding and the output head, give up a layer
// first (then the second and second-to-last, and so on), as Llama 3 §3.3.2 balances 126 layers
// over 16 stages: 7 on the first and last, 8 on the others.
func StageLayers(layers, stages int) []int {
	out := make([]int, 0, layers)
	for s, n := range StageCounts(layers, stages) {
		for range n {
			out = append(out, s)
		}
	}
	return out
}

// StageCounts is the number of layers of each of stages pipeline stages (StageLayers).
func StageCounts(layers, stages int) []int {
	c := (layers + stages - 1) / stages
	count := make([]int, stages)
	for i := range count {
		count[i] = c
	}
	surplus := c*stages - layers
	for lo, hi := 0, stages-1; surplus > 0; lo, hi = lo+1, hi-1 {
		count[lo]--
		surplus--
		if surplus > 0 && hi != lo {
			count[hi]--
			surplus--
		}
	}
	return count
}
