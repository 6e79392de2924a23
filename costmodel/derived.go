package costmodel

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Derived is the closed form derived from the Program: it prices a strategy as Predict prices
// program.Lower's Program, without lowering all the layers. A transformer's price is affine in
// the layers of each pipeline stage (every layer lowers to the same ops), so Derived lowers the
// model shortened (one layer, and two, without a pipeline; five layers on four stages with one:
// Derived.lower), prices those stages' forward and backward with the same Coster as Predict,
// extrapolates each stage kind to its layer count (uneven stages included, program.StageCounts),
// prices each stage's optimizer phase with program.OptimizerPhase from one layer's parameters
// (DDP buckets span layers, so that phase is not affine: OptimizerPhase walks the buckets until
// they repeat) and composes the step with Predict's compose. The pieces are memoized across
// calls by exactly what changes them: the forward and backward by the lowering's inputs and the
// device count (not the pipeline depth, the interleaving, the schedule, the overlap, the global
// batch, and the data-parallel degree and ZeRO stage but under ZeRO-3), the optimizer phase by
// the stage's parameters and the groups that reduce them (not the microbatch, the sequence's
// activations, recompute or attention). So a search lowers once per distinct per-layer
// configuration. Models it cannot shorten (MLPs, transformers of few layers, plans other than the
// default Megatron plan, which may name single layers) are lowered whole.
//
// A Derived is safe for concurrent use.
type Derived struct {
	m  *model.Model
	hw *hardware.Hardware

	pieces onceMap[lowKey, *kindPieces]
	params onceMap[paramKey, *stageParams]

	mu     sync.Mutex
	opt    map[optKey]*Piece
	flops  map[[2]int]units.FLOPs
	counts map[int][]int
	// lowerers lowers the model shortened to k layers (the whole model at its layer count).
	lowerers map[int]*program.Lowerer
}

// NewDerived returns the derived closed form of m on hw.
func NewDerived(m *model.Model, hw *hardware.Hardware) (*Derived, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &Derived{m: m, hw: hw, opt: map[optKey]*Piece{},
		flops: map[[2]int]units.FLOPs{}, counts: map[int][]int{}, lowerers: map[int]*program.Lowerer{}}, nil
}

// lowerer returns the Lowerer of the model shortened to its first k transformer layers (the
// whole model when k is 0), memoized.
func (d *Derived) lowerer(k int) *program.Lowerer {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.lowerers[k]
	if !ok {
		m := d.m
		if k > 0 {
			m = shorten(m, k)
		}
		l = program.NewLowerer(m)
		d.lowerers[k] = l
	}
	return l
}

// lowKey is everything of a strategy that changes the forward and backward Derived lowers and
// their prices per microbatch: the mesh's tensor- and context-parallel degrees (the strides of
// every group follow from them), the device count (the pipeline sends' level, shared cores), the
// data-parallel degree under ZeRO-3 only (whose gathers and reductions are in the forward and
// backward), whether there is a pipeline (kinds: 1, or 3 for first, middle and last stages),
// and the options the ops depend on.
type lowKey struct {
	dp, cp, tp, kinds, mbs, seq, devices int
	zero3, sp                            bool
	tpOverlap, tensorLists, fusion       bool // the stack's options: one search shares them, a Derived may not
	compile, tpOverlapForward            bool
	kernels                              strategies.Kernels
	recompute                            strategies.Recompute
	attention                            strategies.Attention
	precision                            strategies.Precision
	opt                                  strategies.Optimizer
	bucket                               int64
}

// optKey is everything a stage's optimizer phase depends on: its parameters (the stage kind and
// its layers, the tensor-parallel split and sequence parallel's partial gradients), the groups
// that reduce them and their levels (g = dp x cp, the ZeRO stage, the tied embedding's level
// between the first and last pipeline ranks, -1 for none), the bytes per element and the
// buckets.
type optKey struct {
	kinds, kind, n, tp, cp, g, zero, seq, devices, tied int
	sp                                                  bool
	precision                                           strategies.Precision
	opt                                                 strategies.Optimizer
	bucket                                              int64
}

// kindPieces is each stage kind's forward and backward priced with one and two layers, per
// microbatch (Piece.CommTime and Piece.Sent of one microbatch: stagePiece scales them).
type kindPieces struct {
	one, two [3]Piece
	peak     units.FLOPsPerSecond
	// The bytes per element of parameters, gradients and optimizer state (program.Program's);
	// the lowered Programs themselves are not kept (a search holds thousands of these).
	pb, gb, ob int
	// link is ZeRO-3's forward and backward of two layers for the link's walk (nil without
	// ZeRO-3).
	link *linkTemplate
}

// paramKey is what the parameters of each stage kind depend on.
type paramKey struct {
	tp, kinds, seq int
	sp             bool
	precision      strategies.Precision
	opt            strategies.Optimizer
}

// stageParams is each stage kind's parameters split around its layers, from a Program of the
// model shortened to one layer per stage.
type stageParams struct {
	p *program.Program
	// per stage kind: the parameters before the layers, one layer's and those after
	pre, layer, post [3][]program.Param
	// per stage kind: the elements of pre and post together, and of one layer
	fixed, perLayer [3]int64
}

// onceMap memoizes a value per key, computed once however many callers ask for it at a time (the
// others wait for the first); a computation that fails is not kept, so the next caller of the key
// computes again and gets the error its own input gives. The zero onceMap is ready to use.
type onceMap[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*onceEntry[V]
}

type onceEntry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// get returns the value of k, computing it with f if no caller has.
func (o *onceMap[K, V]) get(k K, f func() (V, error)) (V, error) {
	o.mu.Lock()
	e, ok := o.m[k]
	if !ok {
		if o.m == nil {
			o.m = map[K]*onceEntry[V]{}
		}
		e = &onceEntry[V]{}
		o.m[k] = e
	}
	o.mu.Unlock()
	e.once.Do(func() { e.v, e.err = f() })
	if e.err != nil {
		o.mu.Lock()
		if o.m[k] == e {
			delete(o.m, k)
		}
		o.mu.Unlock()
	}
	return e.v, e.err
}

// Totals prices st (Resolve'd against the model first) without the Result's strings.
func (d *Derived) Totals(st strategies.Strategy) (Totals, error) {
	t, _, _, err := d.totals(st, composeOpts{})
	return t, err
}

// Quick is Totals for a search: the time stays zero when st does not fit in device memory, and
// a pipeline's step is a lower bound (Totals.Bound) that Totals makes exact where it matters.
// When the parameters, gradients and optimizer state alone exceed the device, Quick neither
// lowers nor prices the forward and backward: the peak is theirs, a lower bound (PeakBound).
func (d *Derived) Quick(st strategies.Strategy) (Totals, error) {
	t, _, _, err := d.totals(st, composeOpts{limit: d.hw.Device.Memory, bound: true})
	return t, err
}

// Estimate returns the Result Predict(program.Lower(m, st), hw) returns.
func (d *Derived) Estimate(st strategies.Strategy) (*Result, error) {
	t, st, peak, err := d.totals(st, composeOpts{})
	if err != nil {
		return nil, err
	}
	plan := "none"
	if st.Mesh.TP > 1 {
		plan = "megatron"
		if st.Plan != nil {
			plan = st.Plan.String()
		}
	}
	return t.result(d.m.Name, st, plan, d.hw, peak, st.Microbatches(), d.m.Transformer != nil), nil
}

// whole reports whether st on the model must be lowered whole.
func (d *Derived) whole(st strategies.Strategy) bool {
	t := d.m.Transformer
	// The shortened pipeline has five layers (Derived.lower).
	if t == nil || t.Layers < 2 || st.Mesh.PP*st.VPP > 1 && t.Layers < 5 {
		return true
	}
	p := st.Plan
	return p != nil && (p.Name != "megatron" || len(p.Rules) != 0 || p.Whole != "")
}

func (d *Derived) totals(st strategies.Strategy, o composeOpts) (Totals, strategies.Strategy, units.FLOPsPerSecond, error) {
	var t Totals
	o.sigma = d.hw.Efficiency.OverlapSlowdown
	st = st.Resolve(d.m)
	if err := st.Validate(d.m); err != nil {
		return t, st, 0, err
	}
	if d.whole(st) {
		p, err := d.lowerer(0).Lower(st)
		if err != nil {
			return t, st, 0, err
		}
		c, err := NewCoster(p, d.hw)
		if err != nil {
			return t, st, 0, err
		}
		pieces := make([]Piece, len(p.Stages))
		for i, s := range p.Stages {
			pieces[i] = c.Piece(s)
		}
		if _, err := compose(st, p.Microbatches, p.ParamBytes, p.GradBytes, p.OptBytes, pieces, &t, o); err != nil {
			return t, st, 0, err
		}
		t.FLOPs.Model = d.modelFLOPs(st)
		t.finish(st, d.hw, c.peak)
		return t, st, c.peak, nil
	}
	nv := st.Mesh.PP * st.VPP
	counts := d.stageCounts(nv)
	if o.limit > 0 {
		over, err := d.staticOver(st, counts, nv, o.limit, &t)
		if err != nil || over {
			return t, st, 0, err
		}
	}
	kp, err := d.kindPieces(st, nv)
	if err != nil {
		return t, st, 0, err
	}
	sc := derivedPool.Get().(*derivedScratch)
	defer derivedPool.Put(sc)
	sc.pieces = grow(sc.pieces, nv)
	pieces := sc.pieces
	// At most six distinct stages: three kinds of c or c - 1 layers (program.StageCounts).
	var made [3][2]bool
	c := counts[0]
	for _, n := range counts {
		c = max(c, n)
	}
	for i, n := range counts {
		k, j := kindOf(i, nv), c-n
		if !made[k][j] {
			if err := d.stagePiece(st, kp, k, n, nv, &sc.kinds[k][j]); err != nil {
				return t, st, 0, err
			}
			made[k][j] = true
		}
		pieces[i] = sc.kinds[k][j]
	}
	if _, err := compose(st, st.Microbatches(), kp.pb, kp.gb, kp.ob, pieces, &t, o); err != nil {
		return t, st, 0, err
	}
	t.FLOPs.Model = d.modelFLOPs(st)
	t.finish(st, d.hw, kp.peak)
	return t, st, kp.peak, nil
}

// derivedScratch holds totals' buffers, reused across calls.
type derivedScratch struct {
	pieces []Piece
	kinds  [3][2]Piece
}

var derivedPool = sync.Pool{New: func() any { return new(derivedScratch) }}

// kindsOf is the number of stage kinds of nv virtual stages: 1 without a pipeline, else 3
// (first, middle and last; kindOf).
func kindsOf(nv int) int {
	if nv > 1 {
		return 3
	}
	return 1
}

// kindOf is the stage kind of virtual stage i of nv: 0 the first (or only), 2 the last, 1 the
// stages between.
func kindOf(i, nv int) int {
	switch {
	case i == 0:
		return 0
	case i == nv-1:
		return 2
	}
	return 1
}

// stageCounts is program.StageCounts of the model's layers over nv stages, memoized.
func (d *Derived) stageCounts(nv int) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.counts[nv]
	if !ok {
		c = program.StageCounts(d.m.Transformer.Layers, nv)
		d.counts[nv] = c
	}
	return c
}

func (d *Derived) modelFLOPs(st strategies.Strategy) units.FLOPs {
	k := [2]int{st.GBS, st.Seq}
	d.mu.Lock()
	f, ok := d.flops[k]
	d.mu.Unlock()
	if !ok {
		f = program.ModelFLOPs(d.m, st.GBS, st.Seq)
		d.mu.Lock()
		d.flops[k] = f
		d.mu.Unlock()
	}
	return f
}

// kindPieces returns the priced stage kinds of st on nv virtual stages, lowering them when no
// strategy with the same lowering came before.
func (d *Derived) kindPieces(st strategies.Strategy, nv int) (*kindPieces, error) {
	nk := kindsOf(nv)
	ms := st.Mesh
	k := lowKey{cp: ms.CP, tp: ms.TP, kinds: nk, mbs: st.MBS, seq: st.Seq, devices: ms.Devices(), zero3: st.ZeRO == 3, sp: st.SP,
		tpOverlap: st.TPOverlap, tpOverlapForward: st.TPOverlapForward, tensorLists: st.TensorLists, fusion: st.Fusion, compile: st.Compile, kernels: st.Kernels, recompute: st.Recompute, attention: st.Attention, precision: st.Precision, opt: st.Optimizer, bucket: st.BucketBytes}
	if k.zero3 {
		k.dp = ms.DP
	}
	// The first caller lowers; concurrent callers with the same key wait for it rather than
	// lowering again (the pieces do not depend on which strategy of the key came first).
	return d.pieces.get(k, func() (*kindPieces, error) { return d.lower(st, nk) })
}

// lower lowers the model shortened for st with nk stage kinds, prices each kind's forward and
// backward with one and two layers, and splits each kind's parameters around its layers. One
// stage kind (no pipeline): one layer, then two. A pipeline: five layers on four stages, which
// program.StageCounts splits 1, 1, 2, 1: the first, middle and last stages with one layer, and a
// middle stage with two, whose difference to the one-layer middle stage is one layer's price in
// any stage (every layer lowers to the same ops; TestDerivedAffineInLayers); the maxima of
// memory of a first or last stage of two layers are those of its one layer and of a layer after
// a layer (the middle stage of two).
func (d *Derived) lower(st strategies.Strategy, nk int) (*kindPieces, error) {
	short := shortStrategy(st, nk)
	layers := 1
	if nk > 1 {
		layers = 5
	}
	kp := &kindPieces{}
	// Price the shortened Programs' ops as the real strategy's, per microbatch: the Coster reads
	// the strategy's mesh (strides, pipeline level), precision and attention kernel.
	price := func(layers int) (*program.Program, []Piece, error) {
		p, err := d.lowerer(layers).LowerPasses(short) // fbPiece prices no optimizer phase
		if err != nil {
			return nil, nil, err
		}
		q := *p
		q.Strategy, q.Microbatches, q.Tokens = st, 1, int64(st.GBS)*int64(max(st.Seq, 1))
		c, err := NewCoster(&q, d.hw)
		if err != nil {
			return nil, nil, err
		}
		kp.peak = c.peak
		pieces := make([]Piece, len(p.Stages))
		for i, s := range p.Stages {
			if layers == 2 && nk == 1 && st.ZeRO == 3 {
				var links [2][]linkItem
				pieces[i] = c.fbPieceLinks(s, &links)
				if kp.link, err = newLinkTemplate(links, c.OverlapSlowdown()); err != nil {
					return nil, nil, err
				}
				continue
			}
			pieces[i] = c.fbPiece(s)
		}
		program.Recycle(p) // only its prices and bytes per element are kept
		return p, pieces, nil
	}
	p, one, err := price(layers)
	if err != nil {
		return nil, err
	}
	kp.pb, kp.gb, kp.ob = p.ParamBytes, p.GradBytes, p.OptBytes
	if nk == 1 {
		_, two, err := price(2)
		if err != nil {
			return nil, err
		}
		kp.one[0], kp.two[0] = one[0], two[0]
		return kp, nil
	}
	mid1, mid2 := &one[1], &one[2]
	for k, i := range [3]int{0, 1, 3} {
		kp.one[k] = one[i]
		kp.two[k] = addLayer(&one[i], mid1, mid2)
	}
	kp.two[1] = *mid2
	return kp, nil
}

// shortStrategy is st on the shortened model of nk stage kinds: one stage, or four (Derived.lower),
// one microbatch, no interleaving; the data-parallel degree and ZeRO-1/2 change only the
// optimizer phase, so one representative is lowered (ZeRO needs dp > 1) but under ZeRO-3.
func shortStrategy(st strategies.Strategy, nk int) strategies.Strategy {
	short := st
	short.Mesh.PP, short.VPP = 1, 1
	if nk > 1 {
		short.Mesh.PP = 4
	}
	if st.ZeRO < 3 {
		short.Mesh.DP, short.ZeRO = 1, 0
	}
	short.GBS = short.Mesh.DP * short.MBS
	if short.Schedule == strategies.ScheduleInterleaved {
		short.Schedule = strategies.Schedule1F1B
	}
	return short
}

// stageParams returns each stage kind's parameters of st with nk stage kinds, from the model
// shortened and lowered once per paramKey: the smallest strategy with the same parameters (one
// sample, one sequence per context-parallel group, no recompute, no data parallel).
func (d *Derived) stageParams(st strategies.Strategy, nk int) (*stageParams, error) {
	k := paramKey{tp: st.Mesh.TP, kinds: nk, seq: st.Seq, sp: st.SP, precision: st.Precision, opt: st.Optimizer}
	return d.params.get(k, func() (*stageParams, error) {
		// One layer on each of the first, middle and last stages (the first and last only, of
		// a model of two layers).
		short := st
		short.Mesh.CP, short.MBS, short.Recompute, short.ZeRO = 1, 1, strategies.RecomputeNone, 0
		short = shortStrategy(short, 1)
		if nk > 1 {
			short.Mesh.PP = min(3, d.m.Transformer.Layers)
		}
		p, err := d.lowerer(short.Mesh.PP).Lower(short)
		if err != nil {
			return nil, err
		}
		sp := &stageParams{p: p}
		for i, s := range p.Stages {
			k := kindOf(i, len(p.Stages))
			for _, q := range s.Params {
				switch {
				case strings.HasPrefix(q.Module, "layers."):
					sp.layer[k] = append(sp.layer[k], q)
					sp.perLayer[k] += q.Elems()
				case len(sp.layer[k]) == 0:
					sp.pre[k] = append(sp.pre[k], q)
					sp.fixed[k] += q.Elems()
				default:
					sp.post[k] = append(sp.post[k], q)
					sp.fixed[k] += q.Elems()
				}
			}
		}
		return sp, nil
	})
}

// addLayer is stage a with one more layer: a plus the difference between the middle stages of
// two layers (m2) and of one (m1), the maxima of memory those of a and of m2.
func addLayer(a, m1, m2 *Piece) Piece {
	sec := func(x, y, z units.Seconds) units.Seconds { return x + (z - y) }
	byt := func(x, y, z units.Bytes) units.Bytes { return x + (z - y) }
	p := Piece{
		FCompute: sec(a.FCompute, m1.FCompute, m2.FCompute), BCompute: sec(a.BCompute, m1.BCompute, m2.BCompute),
		FComm: sec(a.FComm, m1.FComm, m2.FComm), BComm: sec(a.BComm, m1.BComm, m2.BComm),
		FOverlap: sec(a.FOverlap, m1.FOverlap, m2.FOverlap), BOverlap: sec(a.BOverlap, m1.BOverlap, m2.BOverlap),
		FLOPs: a.FLOPs + (m2.FLOPs - m1.FLOPs),
		Act:   byt(a.Act, m1.Act, m2.Act), Live: byt(a.Live, m1.Live, m2.Live),
		Work: max(a.Work, m2.Work),
	}
	for i := range NumDims {
		p.CommTime[i] = sec(a.CommTime[i], m1.CommTime[i], m2.CommTime[i])
		p.Sent[i] = byt(a.Sent[i], m1.Sent[i], m2.Sent[i])
	}
	return p
}

// shorten returns m with its first k transformer layers only.
func shorten(m *model.Model, k int) *model.Model {
	s := *m
	root := *m.Root
	root.Children = append([]*model.Module(nil), m.Root.Children...)
	for i, c := range root.Children {
		if c.Name == "layers" {
			l := *c
			l.Children = c.Children[:k]
			root.Children[i] = &l
		}
	}
	t := *m.Transformer
	t.Layers = k
	s.Root, s.Transformer, s.Published = &root, &t, 0
	return &s
}

// stagePiece sets *p to stage kind k with n layers of st on nv virtual stages: its forward and
// backward extrapolated from one and two layers, its optimizer phase priced for its parameters.
func (d *Derived) stagePiece(st strategies.Strategy, kp *kindPieces, k, n, nv int, p *Piece) error {
	*p = extrapolate(&kp.one[k], &kp.two[k], n)
	if kp.link != nil {
		r := kp.link.walk(n, st)
		p.FLink, p.BLink, p.Gathers = r.f, r.b, r.held(st)
	}
	m := st.Microbatches()
	for i := range NumDims {
		p.CommTime[i] *= units.Seconds(m)
		p.Sent[i] *= units.Bytes(m)
	}
	o, err := d.optimizer(st, k, n, nv)
	if err != nil {
		return err
	}
	p.OptCompute, p.OptComm, p.DPComm, p.LastBucket, p.Buckets, p.Params = o.OptCompute, o.OptComm, o.DPComm, o.LastBucket, o.Buckets, o.Params
	for i := range NumDims {
		p.CommTime[i] += o.CommTime[i]
		p.Sent[i] += o.Sent[i]
	}
	return nil
}

// optimizer is the optimizer phase of stage kind k with n layers of st on nv virtual stages
// (program.OptimizerPhase), memoized.
func (d *Derived) optimizer(st strategies.Strategy, k, n, nv int) (*Piece, error) {
	ms := st.Mesh
	nk := kindsOf(nv)
	ps, err := d.stageParams(st, nk)
	if err != nil {
		return nil, err
	}
	key := optKey{kinds: nk, kind: k, n: n, tp: ms.TP, cp: ms.CP, g: ms.DP * ms.CP, zero: st.ZeRO, seq: st.Seq, devices: ms.Devices(), tied: -1,
		sp: st.SP, precision: st.Precision, opt: st.Optimizer, bucket: st.BucketBytes}
	// Only the first and last stages' optimizer phase depends on the pipeline (the tied
	// embedding's all-reduce between the first and last pipeline ranks, on their level).
	index := k
	if k == 2 {
		index = nv - 1
	}
	if ms.PP > 1 && k != 1 && ps.p.TiedHead() {
		key.tied = d.hw.LevelFor((ms.PP-1)*ms.Stride(strategies.DimPP) + 1)
	}
	d.mu.Lock()
	o, hit := d.opt[key]
	d.mu.Unlock()
	if hit {
		return o, nil
	}
	q := *ps.p
	q.Strategy = st
	c, err := NewCoster(&q, d.hw)
	if err != nil {
		return nil, err
	}
	o = &Piece{}
	sp := program.StageParams{Pre: ps.pre[k], Layer: ps.layer[k], Post: ps.post[k], Layers: n}
	q.OptimizerPhase(index, nv, sp, false, func(op *program.Op, times int) { c.optimizerOp(op, times, o) })
	o.Params = ps.elems(k, n)
	d.mu.Lock()
	d.opt[key] = o
	d.mu.Unlock()
	return o, nil
}

// extrapolate is a + (n-1)(b-a) for every forward and backward quantity of a stage of one layer
// (a) and two (b): the price of a stage of n layers, which is affine in n (the maxima of
// memory are constant from two layers on).
func extrapolate(a, b *Piece, n int) Piece {
	k := float64(n - 1)
	sec := func(x, y units.Seconds) units.Seconds { return x + units.Seconds(k)*(y-x) }
	byt := func(x, y units.Bytes) units.Bytes { return x + units.Bytes(k)*(y-x) }
	p := Piece{
		FCompute: sec(a.FCompute, b.FCompute), BCompute: sec(a.BCompute, b.BCompute),
		FComm: sec(a.FComm, b.FComm), BComm: sec(a.BComm, b.BComm),
		FOverlap: sec(a.FOverlap, b.FOverlap), BOverlap: sec(a.BOverlap, b.BOverlap),
		FLOPs: a.FLOPs + units.FLOPs(k)*(b.FLOPs-a.FLOPs),
		Act:   byt(a.Act, b.Act), Live: byt(a.Live, b.Live),
		// The most transient bytes at once are a maximum over one layer's ops and its
		// neighbours': the same for any number of layers from two on. (ZeRO-3's link and
		// gather buffers are not affine in the layers: stagePiece walks them.)
		Work: b.Work,
	}
	if n == 1 {
		p.Work = a.Work
	}
	for i := range NumDims {
		p.CommTime[i] = sec(a.CommTime[i], b.CommTime[i])
		p.Sent[i] = byt(a.Sent[i], b.Sent[i])
	}
	return p
}

// Estimate is the derived closed form of st for m on hw: what Predict(program.Lower(m, st), hw)
// returns. Searches keep one Derived (NewDerived) to reuse its pieces.
func Estimate(m *model.Model, st strategies.Strategy, hw *hardware.Hardware) (*Result, error) {
	d, err := NewDerived(m, hw)
	if err != nil {
		return nil, fmt.Errorf("costmodel: %w", err)
	}
	return d.Estimate(st)
}

// elems is the parameters of stage kind k with n layers.
func (sp *stageParams) elems(k, n int) int64 { return sp.fixed[k] + int64(n)*sp.perLayer[k] }

// staticOver reports whether the parameters, gradients and optimizer state of st's busiest
// pipeline rank alone exceed limit; if so it sets t to the infeasible totals with those bytes,
// whose peak is then a lower bound (Totals.PeakBound).
func (d *Derived) staticOver(st strategies.Strategy, counts []int, nv int, limit units.Bytes, t *Totals) (bool, error) {
	nk := kindsOf(nv)
	ps, err := d.stageParams(st, nk)
	if err != nil {
		return false, err
	}
	pp := st.Mesh.PP
	var worst Memory
	for r := range pp {
		var e int64
		for i := r; i < nv; i += pp {
			e += ps.elems(kindOf(i, nv), counts[i])
		}
		m := staticMemory(st, e, ps.p.ParamBytes, ps.p.GradBytes, ps.p.OptBytes)
		if m.Peak > worst.Peak {
			worst = m
		}
	}
	if worst.Peak <= limit {
		return false, nil
	}
	*t = Totals{Devices: st.Mesh.Devices(), Memory: worst, PeakBound: true}
	return true, nil
}
