package program

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Lower turns model m and strategy st into the per-rank Program. st is resolved against m and
// validated first; a plan that does not fit the model is an error.
func Lower(m *model.Model, st strategies.Strategy) (*Program, error) {
	return NewLowerer(m).Lower(st)
}

// A Lowerer lowers one model for many strategies (a search): it validates the model once and
// resolves the default Megatron plan once per sequence-parallel setting, where Lower does both
// for every strategy. Its Programs are those Lower returns; they share the resolved styles
// (Program.Styles), which nothing writes. A Lowerer is safe for concurrent use.
type Lowerer struct {
	m   *model.Model
	err error // m.Validate's
	mu  sync.Mutex
	// megatron is the default Megatron plan's styles without and with sequence parallel.
	megatron [2]map[string]strategies.Style
}

// NewLowerer returns a Lowerer of m.
func NewLowerer(m *model.Model) *Lowerer {
	return &Lowerer{m: m, err: m.Validate()}
}

// noStyles is the styles of a strategy without tensor parallelism: a plan on one rank shards
// nothing.
var noStyles = map[string]strategies.Style{}

// styles is plan's styles on the model under sequence parallel sp, the default Megatron plan's
// resolved once.
func (l *Lowerer) styles(plan *strategies.Plan, sp bool) (map[string]strategies.Style, error) {
	if plan == nil || plan.Name != "megatron" || len(plan.Rules) != 0 || plan.Whole != "" {
		return plan.Resolve(l.m, sp)
	}
	i := 0
	if sp {
		i = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.megatron[i] == nil {
		s, err := plan.Resolve(l.m, sp)
		if err != nil {
			return nil, err // not kept: the next strategy says the same
		}
		l.megatron[i] = s
	}
	return l.megatron[i], nil
}

// Lower is Lower(m, st) of the Lowerer's model m.
func (l *Lowerer) Lower(st strategies.Strategy) (*Program, error) {
	return l.lower(st, true)
}

// LowerPasses is Lower without the optimizer phase and the names of derived values: every
// Stage's Optimizer is nil and only the values the model names (inputs, parameters' modules'
// outputs' roots) keep a Name, the rest is Lower's. For callers that price the forward and backward alone (costmodel.Derived prices the
// optimizer phase with OptimizerPhase).
func (l *Lowerer) LowerPasses(st strategies.Strategy) (*Program, error) {
	return l.lower(st, false)
}

func (l *Lowerer) lower(st strategies.Strategy, optimizer bool) (*Program, error) {
	if l.err != nil {
		return nil, l.err
	}
	m := l.m
	st = st.Resolve(m)
	if err := st.Validate(m); err != nil {
		return nil, err
	}
	plan := st.Plan
	if plan == nil && st.Mesh.TP > 1 {
		plan = &strategies.Plan{Name: "megatron"}
	}
	styles, err := l.styles(plan, st.SP)
	if err != nil {
		return nil, err
	}
	if st.Mesh.TP == 1 {
		styles = noStyles
	}
	p := &Program{Model: m, Strategy: st, Styles: styles, MicroBatch: st.MBS, Microbatches: st.Microbatches()}
	switch st.Precision {
	case strategies.PrecisionFP32:
		p.ParamBytes, p.GradBytes, p.ActBytes = 4, 4, 4
		if st.Optimizer == strategies.OptimizerAdam {
			p.OptBytes = 8 // exp_avg and exp_avg_sq in fp32
		}
	default:
		// Rajbhandari et al. 2020 §3.1: fp16 parameters and gradients (2 + 2 bytes), fp32 master
		// weights, momentum and variance (12 bytes) for Adam; SGD keeps the fp32 master copy only.
		p.ParamBytes, p.GradBytes, p.ActBytes = 2, 2, 2
		p.OptBytes = 4
		if st.Optimizer == strategies.OptimizerAdam {
			p.OptBytes = 12
		}
	}
	seq := max(st.Seq, 1)
	p.Tokens = int64(st.GBS) * int64(seq)
	b := &builder{p: p, st: st, tp: st.Mesh.TP, styles: styles, noOptimizer: !optimizer, anonymous: !optimizer}
	if err := b.build(); err != nil {
		return nil, err
	}
	for _, s := range p.Stages {
		if st.Compile {
			s.compileFusion()
		}
		s.computeFree()
	}
	return p, nil
}

type builder struct {
	p      *Program
	st     strategies.Strategy
	tp     int
	styles map[string]strategies.Style
	stage  *Stage
	// tape records forward ops in order across stages, for differentiation.
	tape      []tapeEntry
	needsGrad perStage[bool]
	memo      map[memoKey]ValueID
	layerOps  []layerRange
	sends     []sendPair
	tiedHead  bool
	// tiedColwise makes the tied head column-parallel over the vocabulary, as the
	// vocabulary-parallel embedding whose weight it reads.
	tiedColwise bool
	// noOptimizer leaves the optimizer phase out, anonymous the names of the values the
	// lowering derives from others (Lowerer.LowerPasses).
	noOptimizer, anonymous bool
	arena                  []int     // builder.ints
	idArena                []ValueID // builder.ids
	// seqGather maps the output of a sequence-parallel all-gather that only Linears read to the
	// index of that all-gather in its stage's Forward; regathered to its all-gather in backward.
	seqGather  map[vkey]int
	regathered map[vkey]ValueID
	// recomputeGathered marks the parameters whose ZeRO-3 gather a recomputed forward reran in
	// backward: their backward ops gather nothing more (differentiate).
	recomputeGathered map[paramLoc]bool
	// paramAt is the index of each parameter in its stage's Params (builder.param).
	paramAt map[paramLoc]int
}

// paramLoc is a parameter's name on a stage (a tied weight is on two).
type paramLoc struct {
	stage int
	name  string
}

func (b *builder) hasParam(name string) bool { return b.paramByName(name) != nil }

// paramByName is the current stage's parameter called name, nil if it has none.
func (b *builder) paramByName(name string) *Param {
	if i, ok := b.paramAt[paramLoc{b.stage.Index, name}]; ok {
		return &b.stage.Params[i]
	}
	return nil
}

type vkey struct {
	stage int
	id    ValueID
}

// perStage is a table of T by value: [stage][id], the zero T where nothing was set (a map by
// vkey, without the hashing).
type perStage[T any] [][]T

func (t perStage[T]) get(k vkey) T {
	var zero T
	if s := t[k.stage]; k.id >= 0 && int(k.id) < len(s) {
		return s[k.id]
	}
	return zero
}

func (t perStage[T]) set(k vkey, v T) {
	s := t[k.stage]
	if n := int(k.id) + 1; n > len(s) {
		s = append(s, make([]T, n-len(s))...)
		t[k.stage] = s
	}
	s[k.id] = v
}

type tapeEntry struct {
	stage int
	op    int
}

func (b *builder) val(name string, shape []int, pl Placement) ValueID {
	s := b.stage
	id := ValueID(len(s.Values))
	s.Values = append(s.Values, Value{ID: id, Name: name, Shape: b.ints(shape), Elem: b.p.ActBytes, Place: pl})
	return id
}

// ints is a copy of x carved out of an array shared by the Program's values (capped, so that
// appending to one copies it), which spares every value's shape an allocation of its own.
func (b *builder) ints(x []int) []int {
	if cap(b.arena)-len(b.arena) < len(x) {
		b.arena = make([]int, 0, max(512, len(x)))
	}
	i := len(b.arena)
	b.arena = append(b.arena, x...)
	return b.arena[i:len(b.arena):len(b.arena)]
}

// ids is a copy of x carved out of an array shared by the Program's ops (capped, as ints'), which
// spares every op's inputs, outputs and saved values an allocation of their own.
func (b *builder) ids(x ...ValueID) []ValueID {
	if cap(b.idArena)-len(b.idArena) < len(x) {
		b.idArena = make([]ValueID, 0, max(min(2*cap(b.idArena)+64, 4096), len(x)))
	}
	i := len(b.idArena)
	b.idArena = append(b.idArena, x...)
	return b.idArena[i:len(b.idArena):len(b.idArena)]
}

// name is the name of a value made of parts, empty when the builder is anonymous: building
// names is a tenth of a lowering that only its prices are wanted from.
func (b *builder) name(parts ...string) string {
	if b.anonymous {
		return ""
	}
	return strings.Join(parts, "")
}

func (b *builder) v(id ValueID) *Value { return &b.stage.Values[id] }

func (b *builder) emit(op Op) int {
	s := b.stage
	if b.st.ZeRO == 3 && op.Param != "" {
		// ZeRO-3 (Rajbhandari et al. 2020 §5.3): gather the module's parameters over dp just before
		// its forward; not on the tape, as it has no gradient.
		b.zeroGather(op, func(g Op) { g.Phase, g.Fwd = Forward, -1; s.Forward = append(s.Forward, g) })
	}
	op.Phase = Forward
	op.Fwd = -1
	if op.Elems == 0 && op.Kind != OpLinear && !op.Kind.IsCollective() && op.Kind != OpSlice && op.Kind != OpSend && op.Kind != OpRecv {
		switch {
		case op.Kind == OpLoss:
			op.Elems = s.Values[op.In[0]].Elems()
		case len(op.Out) > 0:
			op.Elems = s.Values[op.Out[0]].Elems()
		}
	}
	s.Forward = append(s.Forward, op)
	i := len(s.Forward) - 1
	b.tape = append(b.tape, tapeEntry{s.Index, i})
	ng := op.Param != ""
	for _, in := range op.In {
		if b.needsGrad.get(vkey{s.Index, in}) {
			ng = true
		}
	}
	if ng {
		for _, out := range op.Out {
			b.needsGrad.set(vkey{s.Index, out}, true)
		}
	}
	return i
}

func (b *builder) param(module, name string, full []int, shardDim int) string {
	fqn := name
	if module != "" {
		fqn = module + "." + name
	}
	local := b.ints(full)
	if shardDim >= 0 {
		local[shardDim] /= b.tp
	}
	if b.paramAt == nil {
		b.paramAt = map[paramLoc]int{}
	}
	b.paramAt[paramLoc{b.stage.Index, fqn}] = len(b.stage.Params)
	b.stage.Params = append(b.stage.Params, Param{Name: fqn, Module: module, Full: b.ints(full), Local: local, ShardDim: shardDim})
	return fqn
}

func (b *builder) markPartialTP(name string) {
	if q := b.paramByName(name); q != nil {
		q.PartialTP = true
	}
}

// elems is the number of elements of a tensor of shape.
func elems(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

func axisOf(shape []int, d int) int {
	if d < 0 {
		return len(shape) + d
	}
	return d
}

func (b *builder) checkShardable(fqn string, size int, what string) error {
	if size%b.tp != 0 {
		return fmt.Errorf("program: tp=%d does not divide %s %d of module %q; choose tp among %s or leave the module out of the plan",
			b.tp, what, size, fqn, strategies.DivisorList(size))
	}
	return nil
}

// linear lowers module fqn (a Linear) applied to x.
func (b *builder) linear(fqn string, mod *model.Module, x ValueID) (ValueID, error) {
	style := b.styles[fqn]
	if fqn == "head" && b.tiedColwise {
		style = strategies.Colwise
	}
	if style == "" {
		style = b.inherited(fqn)
	}
	op := Op{Kind: OpLinear, Module: fqn}
	var outPl Placement
	wShard, bShard := -1, -1
	rowBias := false
	switch style {
	case strategies.Colwise:
		if err := b.checkShardable(fqn, mod.Out, "out_features"); err != nil {
			return 0, err
		}
		x = b.redistribute(x, Placement{Kind: Replicate}, fqn)
		wShard, bShard = 0, 0
		outPl = Placement{Kind: Shard, Dim: -1}
	case strategies.Rowwise:
		if err := b.checkShardable(fqn, mod.In, "in_features"); err != nil {
			return 0, err
		}
		x = b.redistribute(x, Placement{Kind: Shard, Dim: -1}, fqn)
		wShard = 1
		outPl = Placement{Kind: Partial}
		rowBias = mod.Bias
	default:
		// NoParallel, or no plan: the whole weight on every rank, input made Replicate first.
		x = b.redistribute(x, b.replicatedInput(x), fqn)
		outPl = b.v(x).Place
	}
	xs := b.v(x).Shape
	rows := elems(xs[:len(xs)-1])
	var ob [8]int // on the stack: val copies it
	outShape := append(append(ob[:0], xs[:len(xs)-1]...), mod.Out)
	if wShard == 0 {
		outShape[len(outShape)-1] /= b.tp
	}
	in := mod.In
	if wShard == 1 {
		in /= b.tp
	}
	if fqn == "head" && b.tiedHead {
		// The tied head reads the embedding's weight [vocab, hidden]; a stage holding both keeps
		// one copy (Megatron-LM keeps a second copy on the last pipeline stage, whose gradient the
		// optimizer phase all-reduces with the first stage's over pp: builder.optimizer).
		op.Param = "embed.weight"
		if !b.hasParam(op.Param) {
			b.param("embed", "weight", []int{mod.Out, mod.In}, wShard)
		}
	} else {
		op.Param = b.param(fqn, "weight", []int{mod.Out, mod.In}, wShard)
	}
	if mod.Bias && !rowBias {
		op.Bias = b.param(fqn, "bias", []int{mod.Out}, bShard)
	}
	out := outShape[len(outShape)-1]
	op.In = b.ids(x)
	op.FLOPs = MatmulFLOPs(float64(rows), float64(in), float64(out))
	op.M, op.N, op.K = int(rows), out, in
	op.MemBytes = units.Bytes((rows*int64(in) + int64(in)*int64(out) + rows*int64(out)) * int64(b.p.ActBytes))
	if pl := b.v(x).Place; pl.Kind == Shard && axisOf(xs, pl.Dim) != len(xs)-1 && wShard < 0 {
		b.markPartialTP(op.Param)
		if op.Bias != "" {
			b.markPartialTP(op.Bias)
		}
	}
	y := b.val(b.name(fqn, ".out"), outShape, outPl)
	op.Out = b.ids(y)
	b.emit(op)
	if style == strategies.Rowwise {
		y = b.redistribute(y, b.rowwiseOutput(outShape), fqn)
		if rowBias {
			bias := b.param(fqn, "bias", []int{mod.Out}, -1)
			y2 := b.val(b.name(fqn, ".biased"), b.v(y).Shape, b.v(y).Place)
			if pl := b.v(y).Place; pl.Kind == Shard {
				b.markPartialTP(bias)
			}
			n := elems(b.v(y).Shape)
			b.emit(Op{Kind: OpBias, Module: fqn, Param: bias, In: b.ids(y), Out: b.ids(y2),
				FLOPs: units.FLOPs(n), MemBytes: units.Bytes(2 * n * int64(b.p.ActBytes))})
			y = y2
		}
	}
	return y, nil
}

// inherited returns the style a module takes from a planned ancestor (a style on the root applies
// to the root's Linear children, as parallelize_module(model, mesh, style) does on a Linear root).
func (b *builder) inherited(fqn string) strategies.Style {
	if st, ok := b.styles[""]; ok && !strings.Contains(fqn, ".") {
		return st
	}
	return ""
}

// replicatedInput is the placement a replicated module needs: Replicate, or the sequence shard it
// already has under sequence parallel when the module is elementwise over tokens.
func (b *builder) replicatedInput(x ValueID) Placement {
	return Placement{Kind: Replicate}
}

// rowwiseOutput is the output placement of RowwiseParallel: Replicate (all-reduce), or Shard(1)
// (reduce-scatter over the sequence) under sequence parallel.
func (b *builder) rowwiseOutput(shape []int) Placement {
	if b.st.SP && len(shape) == 3 {
		return Placement{Kind: Shard, Dim: 1}
	}
	return Placement{Kind: Replicate}
}

func (b *builder) elementwise(fqn, act string, x ValueID) ValueID {
	xv := b.v(x)
	if xv.Place.Kind == Partial {
		x = b.redistribute(x, Placement{Kind: Replicate}, fqn)
		xv = b.v(x)
	}
	n := elems(xv.Shape)
	y := b.val(b.name(fqn, ".out"), xv.Shape, xv.Place)
	b.emit(Op{Kind: OpAct, Act: act, Module: fqn, In: b.ids(x), Out: b.ids(y),
		FLOPs: units.FLOPs(n), MemBytes: units.Bytes(2 * n * int64(b.p.ActBytes))})
	return y
}

func (b *builder) norm(fqn string, mod *model.Module, x ValueID) (ValueID, error) {
	style := b.styles[fqn]
	var want Placement
	switch style {
	case strategies.SequenceStyle:
		if len(b.v(x).Shape) != 3 {
			return 0, fmt.Errorf("program: SequenceParallel on %q needs a [batch, seq, feature] input", fqn)
		}
		if err := b.checkShardable(fqn, b.v(x).Shape[1]*b.tpIfSharded(x, 1), "sequence length"); err != nil {
			return 0, err
		}
		want = Placement{Kind: Shard, Dim: 1}
	default:
		want = Placement{Kind: Replicate}
	}
	x = b.redistribute(x, want, fqn)
	xv := b.v(x)
	op := Op{Kind: OpNorm, Norm: mod.Kind, Module: fqn, In: b.ids(x)}
	op.Param = b.param(fqn, "weight", []int{mod.Dim}, -1)
	if mod.Kind == model.KindLayerNorm && mod.Bias {
		op.Bias = b.param(fqn, "bias", []int{mod.Dim}, -1)
	}
	if want.Kind == Shard {
		b.markPartialTP(op.Param)
		if op.Bias != "" {
			b.markPartialTP(op.Bias)
		}
	}
	rows := elems(xv.Shape[:len(xv.Shape)-1])
	n := elems(xv.Shape)
	y := b.val(b.name(fqn, ".out"), xv.Shape, xv.Place)
	nstat := 2
	if mod.Kind == model.KindRMSNorm {
		nstat = 1
	}
	stats := b.val(b.name(fqn, ".stats"), []int{int(rows), nstat}, xv.Place)
	b.v(stats).Elem = 4 // mean and reciprocal standard deviation are kept in fp32
	op.Out = b.ids(y, stats)
	op.FLOPs = units.FLOPs(5 * n)
	op.MemBytes = units.Bytes(2 * n * int64(b.p.ActBytes))
	if b.eagerNorm(mod.Kind) {
		op.MemBytes = eagerRMSNormBytes(n, int64(b.p.ActBytes))
	}
	b.emit(op)
	return y, nil
}

// eagerNorm reports whether a norm of kind k runs as eager PyTorch ops (an RMSNorm under
// strategies.Strategy.EagerKernels; LayerNorm is PyTorch's one native kernel): priced by
// eagerRMSNormBytes forward and eagerRMSNormBackwardBytes backward.
func (b *builder) eagerNorm(k model.Kind) bool { return k == model.KindRMSNorm && b.st.EagerKernels() }

// eagerRMSNormBytes is the forward traffic of an RMSNorm over n elements of a bytes written as
// PyTorch ops (strategies.KernelsEager; torchtitan's RMSNorm, Hugging Face's LlamaRMSNorm), one
// kernel each, counted from the tensors each reads and writes (the per-row statistics are
// negligible): x.float() reads n·a and writes 4n; pow(2) reads and writes 4n; mean reads 4n;
// the product by rsqrt reads and writes 4n; type_as reads 4n and writes n·a; the product by
// the weight reads and writes n·a. That is 4a + 28 bytes per element (36 in bf16) where the
// fused kernel reads x and writes y, 2a.
func eagerRMSNormBytes(n, a int64) units.Bytes { return units.Bytes(n * (4*a + 28)) }

// eagerRMSNormBackwardBytes is the backward traffic of eagerRMSNormBytes's ops, each op's
// autograd formula a kernel (reductions over the feature dimension are one kernel each): the
// product by the weight, its input gradient (reads and writes n·a) and its weight gradient (the
// product dy·t and its sum over rows: reads 2n·a, writes and reads back n·a); type_as's, a cast
// to fp32 (reads n·a, writes 4n); the product by rsqrt's, the input gradient (reads and writes
// 4n) and rsqrt's gradient (the product dy·x, reads 8n and writes 4n, and its row sum, reads
// 4n); pow's, 2x·dy (reads and writes 4n, the expanded mean gradient a broadcast); the sum of the
// two gradients of x.float() (reads 8n, writes 4n); float()'s, a cast back (reads 4n, writes
// n·a). That is 8a + 52 bytes per element (68 in bf16) where the fused backward moves 5a.
func eagerRMSNormBackwardBytes(n, a int64) units.Bytes { return units.Bytes(n * (8*a + 52)) }

// eagerRotaryBytes is the traffic of the rotary position embedding applied to q and k (elems
// elements of a bytes in all) as eager PyTorch ops, forward or backward (strategies.KernelsEager):
// Hugging Face's apply_rotary_pos_emb (q·cos, rotate_half's negation and concatenation, ·sin,
// the sum: 10 passes of n·a) and torchtitan's apply_rotary_emb (x.float(), the complex product
// by freqs_cis in fp32, type_as: 2n·a + 16n) move the same 20 bytes per element in bf16; the
// backward runs the same kinds of kernels (the gradients' products by cos and sin, or by the
// conjugate frequencies, and the casts). tpsim counts 10a. A fused rotary kernel (Transformer
// Engine's, or Inductor's under torch.compile) reads and writes q and k once, which tpsim leaves
// inside the attention kernel's reads, as the fused stacks' rows were fitted with it. The
// attention op carries these bytes (builder.rotaryBytes), so they are recomputed where attention
// is: under per-op checkpointing (recompute=op), which keeps attention's output but replays the
// rotary ops, tpsim leaves their replay out, 20 bytes an element of q and k.
func eagerRotaryBytes(elems, a int64) units.Bytes { return units.Bytes(10 * elems * a) }

// rotaryBytes is what the eager rotary embedding of attention op fop in stage s moves, forward
// or backward (eagerRotaryBytes over the local q and k: fop.In[0] is the qkv projection's output,
// [batch, seq, (heads + 2 kv heads) x head dim]): zero for a model with learned positions or
// a stack whose rotary kernel is fused (strategies.Strategy.EagerKernels).
func (b *builder) rotaryBytes(s *Stage, fop Op) units.Bytes {
	if !b.st.EagerKernels() || !rotary(b.p.Model) {
		return 0
	}
	sh := s.Values[fop.In[0]].Shape
	elems := int64(sh[0]) * int64(sh[1]) * int64(fop.Heads+fop.KVHeads) * int64(fop.HeadDim)
	return eagerRotaryBytes(elems, int64(b.p.ActBytes))
}

// rotary reports whether transformer m has rotary positions (no learned position embedding).
func rotary(m *model.Model) bool { return m.Transformer != nil && !m.Transformer.Learned }

func (b *builder) tpIfSharded(x ValueID, dim int) int {
	if pl := b.v(x).Place; pl.Kind == Shard && axisOf(b.v(x).Shape, pl.Dim) == dim {
		return b.tp
	}
	return 1
}

func (b *builder) add(fqn string, x, y ValueID) ValueID {
	px, py := b.v(x).Place, b.v(y).Place
	if px != py {
		// Bring both to the cheaper common placement: a replicated operand is sliced for free.
		switch {
		case px.Kind == Replicate && py.Kind == Shard:
			x = b.redistribute(x, py, fqn)
		case py.Kind == Replicate && px.Kind == Shard:
			y = b.redistribute(y, px, fqn)
		default:
			x = b.redistribute(x, Placement{Kind: Replicate}, fqn)
			y = b.redistribute(y, Placement{Kind: Replicate}, fqn)
		}
	}
	xv := b.v(x)
	n := elems(xv.Shape)
	out := b.val(b.name(fqn, ".add"), xv.Shape, xv.Place)
	b.emit(Op{Kind: OpAdd, Module: fqn, In: b.ids(x, y), Out: b.ids(out),
		FLOPs: units.FLOPs(n), MemBytes: units.Bytes(3 * n * int64(b.p.ActBytes))})
	return out
}
