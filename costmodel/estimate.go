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
	CommBytes [nDims]units.Bytes
	CommTime  [nDims]units.Seconds
	Time      Time
	FLOPs     FLOPs

	MFU, HFU                                float64
	ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU float64
	TokensPerS                              float64
}

// Estimator is the search's fast path: it prices strategies for one model on one hardware in
// closed form, one formula per layer type, without building the Program: a transformer's layers
// are identical, so one layer is priced once and multiplied, for the c and c-1 layers of
// (uneven) stages, and the stages compose with Predict's compose. It returns what
// Derived and Predict(program.Lower(m, st), hw) return (search's
// TestFastPathEqualsDerivedOnWholeSpaces keeps every total equal on whole search spaces, for
// every strategy family; it is several times faster than Derived there), for transformers built
// by model.Transformer.Build under the default Megatron plan (st.Plan nil or "megatron"). It reads
// m.Transformer, the configuration the transformer's tree was built from. MLPs, whose search
// spaces are a few hundred candidates, Derived lowers whole. An Estimator is read-only once
// made; Totals and Estimate may run concurrently.
type Estimator struct {
	m  *model.Model
	hw *hardware.Hardware
}

// NewEstimator checks m and returns its Estimator on hw. It returns an error for an invalid model
// or one Estimate does not cover (use Predict for those).
func NewEstimator(m *model.Model, hw *hardware.Hardware) (*Estimator, error) {
	if len(hw.Efficiency.KernelRates) > 0 {
		return nil, fmt.Errorf("costmodel: hardware %q has per-kernel rates (a calibrated host profile), which Estimate does not price; use Predict(program.Lower(m, st), hw)", hw.Name)
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
	return &Estimator{m: m, hw: hw}, nil
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
	work            units.Bytes // StageWorkspace: most transient bytes live at once
	live            units.Bytes // StageLive: most bytes live at once, saved and transient
	comm            units.Bytes // StageComm: the largest gradient bucket (tp or dp reduction)
	params, partial int64       // local parameter elements; those with tp-partial gradients
	partialLen      int64       // the elements of each tensor with a tp-partial gradient (h)
	optCompute      units.Seconds
	optComm         units.Seconds // blocking: tp gradient all-reduce, tied embedding over pp, ZeRO-1/2 parameter gather
	dpComm          units.Seconds // gradient reduction over dp
	lastBucket      units.Seconds
	optTime         [nDims]units.Seconds
	optSent         [nDims]units.Bytes
}

// stage kinds of a pipeline.
const (
	kOnly = iota // the whole model (no pipeline)
	kFirst
	kMiddle
	kLast
	nKinds
)

func (e *Estimator) totals(st strategies.Strategy, out *Totals, o composeOpts) (strategies.Strategy, units.FLOPsPerSecond, error) {
	m, hw := e.m, e.hw
	if p := st.Plan; p != nil && (p.Name != "megatron" || len(p.Rules) != 0 || p.Whole != "") {
		return st, 0, fmt.Errorf("costmodel: Estimate prices the default Megatron plan only, not plan %q; use Predict(program.Lower(m, st), hw)", p.String())
	}
	st = st.Resolve(m)
	if err := st.Validate(m); err != nil {
		return st, 0, err
	}
	dtype := "bf16"
	// Rajbhandari et al. 2020 §3.1: 2-byte parameters and gradients; fp32 master weights (SGD), and
	// momentum and variance (Adam) in the optimizer state. fp32: 4 + 4 bytes, Adam's two moments.
	eb, pb, gb, ob := int64(2), int64(2), int64(2), int64(4)
	if st.Optimizer == strategies.OptimizerAdam {
		ob = 12
	}
	if st.Precision == strategies.PrecisionFP32 {
		dtype = "fp32"
		eb, pb, gb, ob = 4, 4, 4, 0
		if st.Optimizer == strategies.OptimizerAdam {
			ob = 8
		}
	}
	peak, err := hw.PeakFor(dtype)
	if err != nil {
		return st, 0, fmt.Errorf("costmodel: %v", err)
	}
	if err := CheckFlash(st, hw); err != nil {
		return st, 0, err
	}
	mesh := st.Mesh
	p := newPricer(hw, peak, st)
	nv := mesh.PP * st.VPP
	g := int64(mesh.DP * mesh.CP)
	tp := int64(mesh.TP)

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
		var lay layerPack
		for k := range nKinds {
			if haves[j][k] {
				pk := packer{cap: st.BucketBytes, gb: gb, cost: bucketCost(&p, st, g)}
				if g > 1 && st.ZeRO < 3 {
					x.packStage(&pk, k, n, nv, &lay)
				}
				var tied units.Bytes
				if x.tied && nv > 1 && (k == kFirst || k == kLast) {
					// The embedding group's all-reduce of the tied embedding's gradient between the
					// first and last pipeline ranks (Shoeybi et al. 2019; Megatron-LM).
					tied = units.Bytes(x.vocab * x.h * gb)
				}
				optimizerCosts(&p, &sums[j][k], st, g, tp, pb, gb, ob, &pk, tied)
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
		for d := range nDims {
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

	layerElems := x.layerParamElems()
	layerPartial := x.layerPartialTP()
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
		s.params = n * layerElems
		s.partial, s.partialLen = n*layerPartial, x.h
		var w walker
		if first {
			s.addScaled(&pre, 1)
			w.run(preF, 1)
			s.params += x.vocab * x.h
			if x.learned {
				s.params += x.positions * x.h
			}
		} else {
			s.addScaled(&recv, 1)
			w.run(recvF, 1)
		}
		if last {
			s.addScaled(&post, 1)
			w.run(layerF, n)
			w.run(postF, 1)
			w.run(postB, 1)
			s.params += x.normParams()
			if x.sp {
				s.partial += x.normParams()
			}
			if !x.tiedSharesStage(nv) {
				s.params += x.vocab * x.h // the head's weight, or a tied copy of the embedding's
			}
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

// tiedSharesStage reports whether a tied head reuses the embedding's weight on the same stage
// (one stage holds both); with a pipeline the last stage keeps its own copy, as Megatron-LM does.
func (x *xf) tiedSharesStage(nv int) bool { return x.tied && nv == 1 }

// packStage feeds stage kind k's parameters to pk in reverse registration order, the order DDP
// fills its gradient buckets in during backward. lay caches the layers' part from an empty bucket.
func (x *xf) packStage(pk *packer, k int, n int64, nv int, lay *layerPack) {
	first, last := k == kOnly || k == kFirst, k == kOnly || k == kLast
	if last {
		if !x.tiedSharesStage(nv) {
			pk.add(x.vocab * x.h)
		}
		if !x.rms {
			pk.add(x.h)
		}
		pk.add(x.h)
	}
	if pk.be == 0 && lay.ok {
		lay.apply(pk)
	} else {
		from := *pk
		x.packLayers(pk, n)
		if from.be == 0 {
			*lay = layerPack{ok: true, be: pk.be, n: pk.n - from.n, maxB: pk.maxB, last: pk.last, t: pk.t - from.t}
		}
	}
	if first {
		if x.learned {
			pk.add(x.positions * x.h)
		}
		pk.add(x.vocab * x.h)
	}
}

// packLayers feeds n layers' parameters to pk, last layer first.
func (x *xf) packLayers(pk *packer, n int64) {
	var l [14]int64
	nl := x.layerParams(&l)
	lp := l[:nl]
	for i := int64(0); i < n; i++ {
		before := *pk
		for j := nl - 1; j >= 0; j-- {
			pk.add(lp[j])
		}
		if pk.be == before.be && pk.n > before.n {
			// The bucket state repeats: every remaining layer fills the same buckets.
			pk.n += int(n-i-1) * (pk.n - before.n)
			pk.t += units.Seconds(n-i-1) * (pk.t - before.t)
			return
		}
	}
}

// layerPack is packLayers' effect from an empty open bucket (the bucket state is all that
// matters: the buckets it closes do not depend on those closed before).
type layerPack struct {
	ok         bool
	be         int64
	n          int
	maxB, last int64
	t          units.Seconds
}

func (l *layerPack) apply(pk *packer) {
	if l.n > 0 {
		pk.maxB = max(pk.maxB, l.maxB)
		pk.last = l.last
	}
	pk.n += l.n
	pk.t += l.t
	pk.be = l.be
}

// packer is DDP's gradient bucketing (torch.nn.parallel.DistributedDataParallel, bucket_cap_mb):
// gradients join the current bucket until it holds at least cap bytes.
type packer struct {
	cap, gb int64
	be      int64 // elements in the open bucket
	n       int   // buckets closed
	maxB    int64 // elements of the largest
	last    int64 // elements of the last closed
	// cost prices one bucket of so many bytes (the data-parallel collective, as Coster.Comm
	// prices it); t sums it over the buckets closed. Nil cost: no reduction to price.
	cost func(units.Bytes) units.Seconds
	t    units.Seconds
}

func (pk *packer) add(elems int64) {
	pk.be += elems
	if pk.be*pk.gb >= pk.cap {
		pk.flush()
	}
}

func (pk *packer) flush() {
	if pk.be == 0 {
		return
	}
	pk.n++
	if pk.cost != nil {
		pk.t += pk.cost(units.Bytes(pk.be * pk.gb))
	}
	pk.maxB = max(pk.maxB, pk.be)
	pk.last = pk.be
	pk.be = 0
}

// bucketCost prices one gradient bucket's data-parallel reduction: an all-reduce, or a
// reduce-scatter under ZeRO-1/2; nil when there is none (one data-parallel rank, or ZeRO-3).
func bucketCost(p *pricer, st strategies.Strategy, g int64) func(units.Bytes) units.Seconds {
	if g <= 1 || st.ZeRO >= 3 {
		return nil
	}
	kind := program.OpReduceScatter
	if st.ZeRO == 0 {
		kind = program.OpAllReduce
	}
	return func(n units.Bytes) units.Seconds { return p.collective(kind, int(g), p.stride, n) }
}

// optimizerCosts adds a stage's once-per-step ops: the tensor-parallel all-reduce of gradients
// of sequence-parallel parameters, the data-parallel gradient reduction (all-reduce, or
// reduce-scatter under ZeRO-1/2, in buckets), the all-reduce over pp of a tied embedding's
// gradient of tied bytes (0: none; Megatron-LM's embedding group, in place, so no buffer), the
// optimizer step over the local shard, and the ZeRO-1/2 all-gather of the updated parameters
// (Rajbhandari et al. 2020 §5), which writes the parameters in place (no buffer: StageComm).
func optimizerCosts(p *pricer, s *stageSum, st strategies.Strategy, g, tp, pb, gb, ob int64, pk *packer, tied units.Bytes) {
	if s.partial > 0 && tp > 1 {
		elems := s.partial
		if st.ZeRO == 3 {
			// ZeRO-3 reduce-scattered these gradients over dp in backward: each rank
			// all-reduces its chunk of every tensor (program.OptimizerOps).
			elems = s.partial / s.partialLen * ((s.partialLen + g - 1) / g)
		}
		n := units.Bytes(elems * gb)
		d := p.collective(program.OpAllReduce, int(tp), 1, n)
		s.optComm += d
		s.optTime[dimTP] += d
		s.optSent[dimTP] += 2 * n * units.Bytes(tp-1) / units.Bytes(tp)
		s.comm = max(s.comm, n)
	}
	total := s.params
	if g > 1 && st.ZeRO < 3 {
		pk.flush()
		kind := program.OpReduceScatter
		if st.ZeRO == 0 {
			kind = program.OpAllReduce
		}
		// Each bucket is one collective, priced as Coster.Comm prices it (packer.cost).
		all := units.Bytes(total * gb)
		d := pk.t
		s.dpComm += d
		s.optTime[dimDP] += d
		s.lastBucket = p.collective(kind, int(g), p.stride, units.Bytes(pk.last*gb))
		sent := all * units.Bytes(g-1) / units.Bytes(g)
		if st.ZeRO == 0 {
			sent *= 2
		}
		s.optSent[dimDP] += sent
		s.comm = max(s.comm, units.Bytes(pk.maxB*gb))
	}
	if tied > 0 {
		d := p.ppAllReduce(tied)
		s.optComm += d
		s.optTime[dimPP] += d
		s.optSent[dimPP] += tied // 2(p-1)/p n with p = 2
	}
	local := total
	if st.ZeRO >= 1 {
		local = (total + g - 1) / g
	}
	// Adam: about 10 FLOPs per parameter; memory traffic reads and writes parameters, gradients
	// and optimizer state (as the Program's optimizer_step op).
	s.optCompute += p.ewTime(float64(10*local), float64(local*(2*(pb+ob)+gb)))
	if st.ZeRO == 1 || st.ZeRO == 2 {
		n := units.Bytes(total * pb)
		d := p.collective(program.OpAllGather, int(g), p.stride, n)
		s.optComm += d
		s.optTime[dimDP] += d
		s.optSent[dimDP] += n * units.Bytes(g-1) / units.Bytes(g)
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
			q.OptCompute, q.OptComm, q.DPComm, q.LastBucket = s.optCompute, s.optComm, s.dpComm, s.lastBucket
			for d := range nDims {
				q.CommTime[d] = units.Seconds(mb)*s.commTime[d] + s.optTime[d]
				q.Sent[d] = units.Bytes(mb)*s.sent[d] + s.optSent[d]
			}
			q.FLOPs, q.Params = s.flops, s.params
			q.Act, q.Live, q.Work, q.Buckets, q.Gathers = s.saved, s.live, s.work, s.comm, 2*s.gather
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
