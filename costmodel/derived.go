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
// model with one layer per stage and with two (first, middle and last stage kinds: at most six
// layers), prices those stages with the same Coster as Predict, extrapolates each stage kind to
// its layer count (uneven stages included, program.StageCounts), rebuilds each stage's optimizer
// phase from its parameters with program.OptimizerOps (DDP buckets span layers, so they are not
// affine) and composes the step with Predict's compose. The pieces are memoized across calls by
// everything that changes their lowering or price, so a search lowers once per distinct
// per-layer configuration. Models it cannot shorten (MLPs, transformers of few layers, plans
// other than the default Megatron plan, which may name single layers) are lowered whole.
//
// A Derived is safe for concurrent use.
type Derived struct {
	m  *model.Model
	hw *hardware.Hardware

	mu     sync.Mutex
	low    map[lowKey]*lowered
	pieces map[pieceKey]*kindPieces
	opt    map[optKey]Piece
	flops  map[[2]int]units.FLOPs
}

// NewDerived returns the derived closed form of m on hw.
func NewDerived(m *model.Model, hw *hardware.Hardware) (*Derived, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &Derived{m: m, hw: hw, low: map[lowKey]*lowered{}, pieces: map[pieceKey]*kindPieces{},
		opt: map[optKey]Piece{}, flops: map[[2]int]units.FLOPs{}}, nil
}

// lowKey is everything of a strategy that changes the forward and backward Derived lowers: not
// the pipeline depth beyond the number of stage kinds, the interleaving, the schedule, the
// overlap, the global batch, and the data-parallel degree and ZeRO stage but under ZeRO-3 (whose
// gathers and reductions are in the forward and backward); the optimizer phase is rebuilt for
// the real strategy (OptimizerOps).
type lowKey struct {
	dp, cp, tp, kinds, mbs, seq int
	zero3                       bool
	recompute                   strategies.Recompute
	attention                   strategies.Attention
	precision                   strategies.Precision
	opt                         strategies.Optimizer
	sp                          bool
	bucket                      int64
}

// pieceKey adds what changes the prices of the ops and the per-step sums: the mesh (strides,
// levels, the pipeline sends' level), the ZeRO stage and the microbatches.
type pieceKey struct {
	lowKey
	pp, dp, zero, gbs int
}

type optKey struct {
	pieceKey
	kind, n, nv int
}

// lowered is the model lowered with one and with two layers per stage kind.
type lowered struct {
	one, two *program.Program
	// per stage kind: the parameters before the layers, one layer's and those after
	pre, layer, post [3][]program.Param
}

// kindPieces is each stage kind's forward and backward priced with one and two layers.
type kindPieces struct {
	one, two [3]Piece
	coster   *Coster
	low      *lowered
}

// Totals prices st (Resolve'd against the model first) without the Result's strings.
func (d *Derived) Totals(st strategies.Strategy) (Totals, error) {
	t, _, _, err := d.totals(st, composeOpts{})
	return t, err
}

// Quick is Totals for a search: the time stays zero when st does not fit in device memory, and
// a pipeline's step is a lower bound (Totals.Bound) that Totals makes exact where it matters.
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
	if t == nil || t.Layers < 2*min(st.Mesh.PP*st.VPP, 3) {
		return true
	}
	p := st.Plan
	return p != nil && (p.Name != "megatron" || len(p.Rules) != 0 || p.Whole != "")
}

func (d *Derived) totals(st strategies.Strategy, o composeOpts) (Totals, strategies.Strategy, units.FLOPsPerSecond, error) {
	var t Totals
	st = st.Resolve(d.m)
	if err := st.Validate(d.m); err != nil {
		return t, st, 0, err
	}
	if d.whole(st) {
		p, err := program.Lower(d.m, st)
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
	kp, err := d.kindPieces(st)
	if err != nil {
		return t, st, 0, err
	}
	nv := st.Mesh.PP * st.VPP
	nk := min(nv, 3)
	counts := program.StageCounts(d.m.Transformer.Layers, nv)
	pieces := make([]Piece, nv)
	for i, n := range counts {
		k := kindOf(i, nv)
		pieces[i] = d.stagePiece(st, kp, k, n, nk, nv)
	}
	p := kp.low.one
	if _, err := compose(st, st.Microbatches(), p.ParamBytes, p.GradBytes, p.OptBytes, pieces, &t, o); err != nil {
		return t, st, 0, err
	}
	t.FLOPs.Model = d.modelFLOPs(st)
	t.finish(st, d.hw, kp.coster.peak)
	return t, st, kp.coster.peak, nil
}

// kindOf is the stage kind of virtual stage i of nv: 0 the first (or only), 2 the last (1 when
// there are two stages), 1 the stages between.
func kindOf(i, nv int) int {
	switch {
	case i == 0:
		return 0
	case i == nv-1:
		return min(nv, 3) - 1
	}
	return 1
}

func (d *Derived) modelFLOPs(st strategies.Strategy) units.FLOPs {
	k := [2]int{st.GBS, st.Seq}
	d.mu.Lock()
	f, ok := d.flops[k]
	d.mu.Unlock()
	if !ok {
		f = ModelFLOPs(d.m, st.GBS, st.Seq)
		d.mu.Lock()
		d.flops[k] = f
		d.mu.Unlock()
	}
	return f
}

// kindPieces returns the priced stage kinds of st, lowering them when no strategy with the same
// lowering came before.
func (d *Derived) kindPieces(st strategies.Strategy) (*kindPieces, error) {
	nk := min(st.Mesh.PP*st.VPP, 3)
	pk := keyOf(st, nk)
	lk := pk.lowKey
	d.mu.Lock()
	defer d.mu.Unlock()
	if kp, ok := d.pieces[pk]; ok {
		return kp, nil
	}
	low, ok := d.low[lk]
	if !ok {
		var err error
		if low, err = d.lower(st, nk); err != nil {
			return nil, err
		}
		d.low[lk] = low
	}
	// Price the shortened Programs' ops as the real strategy's: the Coster reads the strategy's
	// mesh (strides, pipeline level), precision, attention kernel and optimizer.
	real := func(p *program.Program) *program.Program {
		q := *p
		q.Strategy, q.Microbatches, q.Tokens = st, st.Microbatches(), int64(st.GBS)*int64(max(st.Seq, 1))
		return &q
	}
	c1, err := NewCoster(real(low.one), d.hw)
	if err != nil {
		return nil, err
	}
	c2, err := NewCoster(real(low.two), d.hw)
	if err != nil {
		return nil, err
	}
	kp := &kindPieces{coster: c1, low: low}
	for k := 0; k < nk; k++ {
		kp.one[k] = c1.fbPiece(low.one.Stages[k])
		kp.two[k] = c2.fbPiece(low.two.Stages[k])
	}
	d.pieces[pk] = kp
	return kp, nil
}

// keyOf is st's pieceKey with nk stage kinds.
func keyOf(st strategies.Strategy, nk int) pieceKey {
	ms := st.Mesh
	lk := lowKey{cp: ms.CP, tp: ms.TP, kinds: nk, mbs: st.MBS, seq: st.Seq, zero3: st.ZeRO == 3,
		recompute: st.Recompute, attention: st.Attention, precision: st.Precision, opt: st.Optimizer, sp: st.SP, bucket: st.BucketBytes}
	if lk.zero3 {
		lk.dp = ms.DP
	}
	return pieceKey{lk, ms.PP, ms.DP, st.ZeRO, st.GBS}
}

// lower lowers the model shortened to nk and 2 nk layers on a pipeline of nk stages (one of
// each kind), and splits each stage's parameters around its layers.
func (d *Derived) lower(st strategies.Strategy, nk int) (*lowered, error) {
	short := st
	short.Mesh.PP, short.VPP = nk, 1
	if st.ZeRO < 3 {
		// The data-parallel degree and ZeRO-1/2 change only the optimizer phase: lower one
		// representative (ZeRO needs dp > 1), one microbatch per pipeline.
		short.Mesh.DP, short.ZeRO = 1, 0
	}
	short.GBS = short.Mesh.DP * short.MBS
	if short.Schedule == strategies.ScheduleInterleaved {
		short.Schedule = strategies.Schedule1F1B
	}
	low := &lowered{}
	var err error
	if low.one, err = program.Lower(shorten(d.m, nk), short); err != nil {
		return nil, err
	}
	if low.two, err = program.Lower(shorten(d.m, 2*nk), short); err != nil {
		return nil, err
	}
	for k, s := range low.one.Stages {
		for _, q := range s.Params {
			switch {
			case strings.HasPrefix(q.Module, "layers."):
				low.layer[k] = append(low.layer[k], q)
			case len(low.layer[k]) == 0:
				low.pre[k] = append(low.pre[k], q)
			default:
				low.post[k] = append(low.post[k], q)
			}
		}
	}
	return low, nil
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

// stagePiece is stage kind k with n layers: its forward and backward extrapolated from one and
// two layers, its optimizer phase built for its parameters.
func (d *Derived) stagePiece(st strategies.Strategy, kp *kindPieces, k, n, nk, nv int) Piece {
	p := extrapolate(&kp.one[k], &kp.two[k], n)
	ok := optKey{keyOf(st, nk), k, n, 0}
	// Only the first and last stages' optimizer phase depends on the number of stages (the tied
	// embedding's all-reduce); the index of a middle stage does not matter.
	if k != 1 {
		ok.nv = nv
	}
	d.mu.Lock()
	o, hit := d.opt[ok]
	d.mu.Unlock()
	if !hit {
		low := kp.low
		params := append([]program.Param(nil), low.pre[k]...)
		for range n {
			params = append(params, low.layer[k]...)
		}
		params = append(params, low.post[k]...)
		index := k
		if k == nk-1 && nk > 1 {
			index = nv - 1
		}
		q := *low.one
		q.Strategy = st
		kp.coster.optimizerPiece(q.OptimizerOps(index, nv, params), &o)
		for i := range params {
			o.Params += params[i].Elems()
		}
		d.mu.Lock()
		d.opt[ok] = o
		d.mu.Unlock()
	}
	p.OptCompute, p.OptComm, p.DPComm, p.LastBucket, p.Buckets, p.Params = o.OptCompute, o.OptComm, o.DPComm, o.LastBucket, o.Buckets, o.Params
	for i := range nDims {
		p.CommTime[i] += o.CommTime[i]
		p.Sent[i] += o.Sent[i]
	}
	return p
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
		// The most transient bytes at once and ZeRO-3's gather buffers are maxima over one
		// layer's ops and its neighbours': the same for any number of layers from two on.
		Work: b.Work, Gathers: b.Gathers,
	}
	if n == 1 {
		p.Work, p.Gathers = a.Work, a.Gathers
	}
	for i := range nDims {
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
