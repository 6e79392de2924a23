package costmodel

import (
	"fmt"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Totals is the numeric content of a Result: what a search compares, without the strings and maps
// (CommBytes and CommTime are indexed like strategies.DimOrder: pp, dp, cp, tp; see DimIndex).
type Totals struct {
	Devices  int
	Feasible bool
	// Bound is true when Time.Step is a lower bound of a pipeline's step, not its timeline
	// (Quick); the memory and bytes are exact either way.
	Bound bool

	Memory    Memory
	CommBytes [NumDims]units.Bytes
	CommTime  [NumDims]units.Seconds
	Time      Time
	FLOPs     FLOPs

	MFU, HFU                                float64
	ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU float64
	TokensPerS                              float64
}

// Estimator is the search's fast path: it prices the forward and backward of strategies for one
// model on one hardware in closed form, one formula per layer type, without building the Program
// (each stage's optimizer phase, its parameters, the bytes per element and the peak are
// Derived's, from the Program: program.OptimizerPhase): a transformer's layers
// are identical, so one layer is priced once and multiplied, for the c and c-1 layers of
// (uneven) stages, and the stages compose with Predict's compose. It returns what
// Derived and Predict(program.Lower(m, st), hw) return (search's
// TestFastPathEqualsDerivedOnWholeSpaces keeps every total equal on whole search spaces, for
// every strategy family; it is several times faster than Derived there), for transformers built
// by model.Transformer.Build under the default Megatron plan (st.Plan nil or "megatron"). It reads
// m.Transformer, the configuration the transformer's tree was built from. MLPs, whose search
// spaces are a few hundred candidates, Derived lowers whole. An Estimator is read-only once
// made (its Derived's memo is safe for concurrent use); Totals and Estimate may run concurrently.
type Estimator struct {
	m  *model.Model
	hw *hardware.Hardware
	// d prices each stage's optimizer phase (Derived.optimizer: program.OptimizerPhase).
	d *Derived
}

// NewEstimator checks m and returns its Estimator on hw. It returns an error for an invalid model
// or one Estimate does not cover (use Predict for those).
func NewEstimator(m *model.Model, hw *hardware.Hardware) (*Estimator, error) {
	if len(hw.Efficiency.KernelRates) > 0 || hw.GEMMParallelMACs > 0 {
		return nil, fmt.Errorf("costmodel: hardware %q has per-kernel rates or a CPU's matrix products (a calibrated host profile), which Estimate does not price; use Predict(program.Lower(m, st), hw)", hw.Name)
	}
	if m.Transformer == nil {
		return nil, fmt.Errorf("costmodel: the fast path prices transformers built by model.Transformer.Build; model %q is not one, use Derived", m.Name)
	}
	if err := m.Transformer.Validate(); err != nil {
		return nil, err
	}
	if m.Batch <= 0 {
		return nil, fmt.Errorf("model: %q batch = %d; it must be positive", m.Name, m.Batch)
	}
	d, err := NewDerived(m, hw)
	if err != nil {
		return nil, err
	}
	return &Estimator{m: m, hw: hw, d: d}, nil
}

// Estimate returns the Result Predict(program.Lower(m, st), hw) returns, strings included.
func (e *Estimator) Estimate(st strategies.Strategy) (*Result, error) {
	var t Totals
	st, peak, err := e.totals(st, &t, composeOpts{})
	if err != nil {
		return nil, err
	}
	plan := "none"
	if st.Mesh.TP > 1 {
		plan = "megatron"
	}
	return t.result(e.m.Name, st, plan, e.hw, peak, st.Microbatches(), e.m.Transformer != nil), nil
}

// Totals is Estimate without the Result's strings and maps, for search loops (its buffers are
// reused across calls).
func (e *Estimator) Totals(st strategies.Strategy) (Totals, error) {
	var t Totals
	_, _, err := e.totals(st, &t, composeOpts{})
	return t, err
}

// Quick is Totals for a search: the time stays zero when st does not fit in device memory, and
// a pipeline's step is a lower bound (Totals.Bound) that Totals makes exact where it matters.
func (e *Estimator) Quick(st strategies.Strategy) (Totals, error) {
	var t Totals
	_, _, err := e.totals(st, &t, composeOpts{limit: e.hw.Device.Memory, bound: true})
	return t, err
}

// stageSum is one pipeline stage: per microbatch forward and backward costs, and once per step
// the gradient reductions and the optimizer (as Coster.stage splits them).
type stageSum struct {
	tally
	work units.Bytes // StageWorkspace: most transient bytes live at once
	live units.Bytes // StageLive: most bytes live at once, saved and transient
	// opt is the optimizer phase, its parameters and gradient buffers (Derived's).
	opt *Piece
}

// stage kinds of a pipeline.
const (
	kOnly = iota // the whole model (no pipeline)
	kFirst
	kMiddle
	kLast
	nKinds
)

// derivedKind is Derived's stage kind of each.
var derivedKind = [nKinds]int{kOnly: 0, kFirst: 0, kMiddle: 1, kLast: 2}

func (e *Estimator) totals(st strategies.Strategy, out *Totals, o composeOpts) (strategies.Strategy, units.FLOPsPerSecond, error) {
	m, hw := e.m, e.hw
	if p := st.Plan; p != nil && (p.Name != "megatron" || len(p.Rules) != 0 || p.Whole != "") {
		return st, 0, fmt.Errorf("costmodel: Estimate prices the default Megatron plan only, not plan %q; use Predict(program.Lower(m, st), hw)", p.String())
	}
	st = st.Resolve(m)
	if err := st.Validate(m); err != nil {
		return st, 0, err
	}
	nv := st.Mesh.PP * st.VPP
	nk := 1
	if nv > 1 {
		nk = 3
	}
	// The bytes per element (Rajbhandari et al. 2020 §3.1) and the peak at the precision are
	// the Program's and the Coster's.
	ps, err := e.d.stageParams(st, nk)
	if err != nil {
		return st, 0, err
	}
	q := *ps.p
	q.Strategy = st
	c, err := NewCoster(&q, hw)
	if err != nil {
		return st, 0, err
	}
	peak := c.peak
	eb, pb, gb, ob := int64(q.ActBytes), int64(q.ParamBytes), int64(q.GradBytes), int64(q.OptBytes)
	p := newPricer(hw, peak, st)

	// Stage kinds priced for ns[j] layers; counts[i] is stage i's layers.
	var sums [2][nKinds]stageSum
	var haves [2][nKinds]bool
	var ns [2]int64
	// Stages hold c or c - 1 layers (program.StageCounts): price each stage kind for both.
	x := newXF(&p, m, st, eb, pb, gb)
	counts := program.StageCounts(m.Transformer.Layers, nv)
	ns[0] = int64(counts[0])
	for _, c := range counts {
		if int64(c) != ns[0] {
			ns[1] = int64(c)
		}
	}
	for j, n := range ns {
		if n == 0 {
			continue
		}
		x.stages(n, nv, &sums[j], &haves[j])
		for k := range nKinds {
			if haves[j][k] {
				o, err := e.d.optimizer(st, derivedKind[k], int(n), nv)
				if err != nil {
					return st, 0, err
				}
				sums[j][k].opt = o
			}
		}
	}
	modelFLOPs := transformerModelFLOPs(m.Transformer, st.GBS, st.Seq)
	return st, peak, assemble(&p, st, hw, pb, gb, ob, &sums, &haves, ns, counts, modelFLOPs, out, o)
}

// stages prices the stage kinds of a pipeline of nv virtual stages of n layers each. Each stretch
// of ops is priced once; the stages add them up, n identical layers as n times one.
func (x *xf) stages(n int64, nv int, stages *[nKinds]stageSum, have *[nKinds]bool) {
	p := x.p
	r := x.r
	// One layer, forward.
	var layer, joinT tally
	m := newEmitter(p, &layer, false)
	atOut := x.blockForward(&m)
	layerF := m.seg()
	// The last layer of a stage that sends its output on: the output is transient, not saved, and
	// the send frees it.
	layerFSend := seg{pc: max(layerF.pc, atOut+r), pa: layerF.pa, dc: layerF.dc, da: layerF.da - r}
	fwd := layer // the forward's costs alone

	// Backward as the last layer of a stage: the gradient of its output arrives whole. Under full
	// recompute the layer's forward is replayed first, at the forward's cost.
	m = newEmitter(p, nil, true)
	if x.recompute == strategies.RecomputeFull {
		x.recomputeLayer(&m)
	}
	rec := m.seg()
	m.pc, m.pa, m.t = noPeak, noPeak, &layer
	x.blockBackward(&m)
	body := m.seg()
	layerBLast := seg{pc: max(rec.pc, body.pc), pa: max(rec.pa, body.pa), dc: body.dc, da: body.da}
	if x.recompute == strategies.RecomputeFull {
		layer.bCompute += fwd.fCompute
		layer.bComm += fwd.fComm
		layer.bOverlap += fwd.fOverlap
		layer.flops += fwd.flops
		for d := range NumDims {
			layer.commTime[d] += fwd.commTime[d]
			layer.sent[d] += fwd.sent[d]
		}
	}
	// Every other layer starts with the two parts of its output's gradient, summed (join) after
	// any recompute; from there on it is the last layer's backward with one part fewer live.
	m = newEmitter(p, &joinT, true)
	x.join(&m)
	layerB := seg{pc: max(rec.pc, rec.dc+r, body.pc-r), pa: max(rec.pa, rec.da+r, body.pa-r), dc: body.dc - r, da: body.da - r}

	// The embedding (first stage), the head and loss (last stage), and the pipeline's sends and
	// receives of the residual stream and its gradient (Narayanan et al. 2021 §2.2: b s h between
	// consecutive stages, b s h / t under sequence parallel).
	var pre, post, recv, send tally
	m = newEmitter(p, &pre, false)
	x.embedForward(&m)
	preF := m.seg()
	m = newEmitter(p, &pre, true)
	x.embedBackward(&m)
	preB := m.seg()
	m = newEmitter(p, &post, false)
	x.headForward(&m)
	postF := m.seg()
	m = newEmitter(p, &post, true)
	x.headBackward(&m)
	postB := m.seg()
	var recvF, recvB, sendB seg
	if nv > 1 {
		m = newEmitter(p, &recv, false)
		m.save(x.r)
		m.pp(0, 0, 0) // receive the previous stage's output, the first layer's input
		recvF = m.seg()
		m = newEmitter(p, &recv, true)
		x.join(&m)
		m.pp(x.r, 0, x.r) // send its gradient back
		recvB = m.seg()
		m = newEmitter(p, &send, false)
		m.pp(x.r, 0, 0) // send the last layer's output on (layerFSend frees it)
		m = newEmitter(p, &send, true)
		m.pp(0, x.r, 0) // receive its gradient
		sendB = m.seg()
		send.saved = -x.r // the output is sent, not saved
	}

	kinds := [3]int{kOnly}
	nk := 1
	if nv > 1 {
		kinds, nk = [3]int{kFirst, kLast}, 2
		if nv > 2 {
			kinds, nk = [3]int{kFirst, kMiddle, kLast}, 3
		}
	}
	var layers tally // n layers, and the n - 1 joins between them
	layers.addScaled(&layer, float64(n))
	layers.addScaled(&joinT, float64(n-1))
	for _, k := range kinds[:nk] {
		have[k] = true
		s := &stages[k]
		first, last := k == kOnly || k == kFirst, k == kOnly || k == kLast
		s.tally = layers
		var w walker
		if first {
			s.addScaled(&pre, 1)
			w.run(preF, 1)
		} else {
			s.addScaled(&recv, 1)
			w.run(recvF, 1)
		}
		if last {
			s.addScaled(&post, 1)
			w.run(layerF, n)
			w.run(postF, 1)
			w.run(postB, 1)
		} else {
			s.addScaled(&send, 1)
			w.run(layerF, n-1)
			w.run(layerFSend, 1)
			w.run(sendB, 1)
		}
		w.run(layerBLast, 1)
		w.run(layerB, n-1)
		if first {
			w.run(preB, 1)
		} else {
			w.run(recvB, 1)
		}
		s.work, s.live = w.pc, w.pa
	}
}

// transformerModelFLOPs is ModelFLOPs for a transformer: each matrix product once forward and
// twice backward. For a GPT with a 4h MLP this is Narayanan et al. 2021 Eq. 3 without recompute,
// 72 B L s h^2 (1 + s/(6h) + V/(12 h L)).
func transformerModelFLOPs(c *model.Transformer, batch, seq int) units.FLOPs {
	layers, head := TransformerForwardFLOPs(c, batch, seq)
	return 3 * (layers + head)
}

// TransformerForwardFLOPs is one forward pass of batch sequences of seq tokens through a
// transformer's matrix products: its layers (2 tokens x the Linear weights + 4 B s^2 a d for
// attention, the full s x s product, each) and its output head (2 tokens h V), apart, so that a
// FLOP count can weigh them differently (Megatron-LM's Eq. 3 counts the layers' recompute).
func TransformerForwardFLOPs(c *model.Transformer, batch, seq int) (layers, head units.FLOPs) {
	tokens := float64(batch) * float64(max(seq, 1))
	h, q := float64(c.Hidden), float64(c.Heads*c.HeadDim)
	qkv := float64((c.Heads + 2*c.KVHeads) * c.HeadDim)
	mlp := 2.0
	if c.Gated {
		mlp = 3
	}
	layer := 2*tokens*(h*qkv+q*h+mlp*h*float64(c.FFN)) + 4*float64(batch)*float64(seq)*float64(seq)*q
	return units.FLOPs(float64(c.Layers) * layer), units.FLOPs(2 * tokens * h * float64(c.Vocab))
}

// assemble turns the stage kinds into one Piece per virtual stage (stage i of counts[i] layers)
// and composes them with Predict's compose.
func assemble(p *pricer, st strategies.Strategy, hw *hardware.Hardware, pb, gb, ob int64, sums *[2][nKinds]stageSum, haves *[2][nKinds]bool, ns [2]int64, counts []int, modelFLOPs units.FLOPs, out *Totals, o composeOpts) error {
	mb := st.Microbatches()
	nv := st.Mesh.PP * st.VPP
	var kinds [2][nKinds]Piece
	for j := range sums {
		for k := range nKinds {
			if !haves[j][k] {
				continue
			}
			s := &sums[j][k]
			q := &kinds[j][k]
			q.FCompute, q.BCompute, q.FComm, q.BComm, q.FOverlap, q.BOverlap = s.fCompute, s.bCompute, s.fComm, s.bComm, s.fOverlap, s.bOverlap
			o := s.opt
			q.OptCompute, q.OptComm, q.DPComm, q.LastBucket = o.OptCompute, o.OptComm, o.DPComm, o.LastBucket
			for d := range NumDims {
				q.CommTime[d] = units.Seconds(mb)*s.commTime[d] + o.CommTime[d]
				q.Sent[d] = units.Bytes(mb)*s.sent[d] + o.Sent[d]
			}
			q.FLOPs, q.Params = s.flops, o.Params
			q.Act, q.Live, q.Work, q.Buckets, q.Gathers = s.saved, s.live, s.work, o.Buckets, 2*s.gather
		}
	}
	sc := composePool.Get().(*composeScratch)
	defer composePool.Put(sc)
	if cap(sc.pieces) < nv {
		sc.pieces = make([]Piece, nv)
	}
	pieces := sc.pieces[:nv]
	for i := range pieces {
		j := 0
		if counts != nil && int64(counts[i]) != ns[0] {
			j = 1
		}
		switch {
		case nv == 1:
			pieces[i] = kinds[j][kOnly]
		case i == 0:
			pieces[i] = kinds[j][kFirst]
		case i == nv-1:
			pieces[i] = kinds[j][kLast]
		default:
			pieces[i] = kinds[j][kMiddle]
		}
	}
	if _, err := compose(st, mb, int(pb), int(gb), int(ob), pieces, out, o); err != nil {
		return err
	}
	out.FLOPs.Model = modelFLOPs
	out.finish(st, hw, p.peak)
	return nil
}
