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

	Memory    Memory
	CommBytes [nDims]units.Bytes
	CommTime  [nDims]units.Seconds
	Time      Time
	FLOPs     FLOPs

	MFU, HFU                                float64
	ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU float64
	TokensPerS                              float64
}

// Estimator prices strategies for one model on one hardware in closed form, one formula per layer
// type, without building the Program: a transformer's layers are identical, so one layer is priced
// once and multiplied. It returns what Predict(program.Lower(m, st), hw) returns (tests keep
// every total equal, for every strategy family), for transformers built by model.Transformer.Build
// and MLPs built by model.MLP under the default Megatron plan (st.Plan nil or "megatron"). It reads
// m.Transformer, the configuration the transformer's tree was built from. An Estimator is
// read-only once made; Totals and Estimate may run concurrently.
type Estimator struct {
	m  *model.Model
	hw *hardware.Hardware
	c  chain // the MLP's Linear layers; empty for a transformer
}

// NewEstimator checks m and returns its Estimator on hw. It returns an error for an invalid model
// or one Estimate does not cover (use Predict for those).
func NewEstimator(m *model.Model, hw *hardware.Hardware) (*Estimator, error) {
	if len(hw.Efficiency.KernelRates) > 0 {
		return nil, fmt.Errorf("costmodel: hardware %q has per-kernel rates (a calibrated host profile), which Estimate does not price; use Predict(program.Lower(m, st), hw)", hw.Name)
	}
	e := &Estimator{m: m, hw: hw}
	if m.Transformer != nil {
		if err := m.Transformer.Validate(); err != nil {
			return nil, err
		}
		if m.Batch <= 0 {
			return nil, fmt.Errorf("model: %q batch = %d; it must be positive", m.Name, m.Batch)
		}
		return e, nil
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if !mlpChain(m, &e.c) {
		return nil, fmt.Errorf("costmodel: Estimate prices transformers built by model.Transformer.Build and Linear/activation chains built by model.MLP; model %q is neither, use Predict(program.Lower(m, st), hw)", m.Name)
	}
	return e, nil
}

// Estimate is NewEstimator(m, hw).Estimate(st).
func Estimate(m *model.Model, st strategies.Strategy, hw *hardware.Hardware) (*Result, error) {
	e, err := NewEstimator(m, hw)
	if err != nil {
		return nil, err
	}
	return e.Estimate(st)
}

// Estimate returns the Result Predict(program.Lower(m, st), hw) returns, strings included.
func (e *Estimator) Estimate(st strategies.Strategy) (*Result, error) {
	var t Totals
	st, peak, err := e.totals(st, &t)
	if err != nil {
		return nil, err
	}
	m, hw, mesh := e.m, e.hw, st.Mesh
	plan := "none"
	if mesh.TP > 1 {
		plan = "megatron"
	}
	r := &Result{Model: m.Name, Hardware: hw.Name, Strategy: st.String(), Plan: plan, Devices: t.Devices,
		Feasible: t.Feasible, Memory: t.Memory, Time: t.Time, FLOPs: t.FLOPs, MFU: t.MFU, HFU: t.HFU,
		ModelTFLOPsPerGPU: t.ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU: t.HardwareTFLOPsPerGPU, TokensPerS: t.TokensPerS,
		CommBytes: map[string]units.Bytes{}, CommTime: map[string]units.Seconds{}}
	for i, d := range strategies.DimOrder {
		r.CommBytes[d] = t.CommBytes[i]
		r.CommTime[d] = t.CommTime[i]
	}
	if !t.Feasible {
		r.Reason = fmt.Sprintf("needs %v per device (params %v, grads %v, optimizer %v, activations %v), %s has %v",
			r.Memory.Peak, r.Memory.Params, r.Memory.Grads, r.Memory.Optimizer, r.Memory.Activations, hw.Name, hw.Device.Memory)
	}
	r.Assumptions = assumptions(st, hw, peak, st.Microbatches(), m.Transformer != nil)
	return r, nil
}

// Totals is Estimate without the Result's strings and maps, for search loops; it allocates
// nothing.
func (e *Estimator) Totals(st strategies.Strategy) (Totals, error) {
	var t Totals
	_, _, err := e.totals(st, &t)
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

func (e *Estimator) totals(st strategies.Strategy, out *Totals) (strategies.Strategy, units.FLOPsPerSecond, error) {
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

	var stages [nKinds]stageSum
	var have [nKinds]bool
	var modelFLOPs units.FLOPs
	if m.Transformer != nil {
		if m.Transformer.Layers%nv != 0 {
			return st, 0, fmt.Errorf("costmodel: %d layers do not split evenly over %d pipeline stages; Estimate prices even stages, use Predict(program.Lower(m, st), hw)", m.Transformer.Layers, nv)
		}
		x := newXF(&p, m, st, eb, pb, gb)
		n := int64(m.Transformer.Layers / nv)
		x.stages(n, nv, &stages, &have)
		var lay layerPack
		for k := range nKinds {
			if have[k] {
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
				optimizerCosts(&p, &stages[k], st, g, tp, pb, gb, ob, &pk, tied)
			}
		}
		modelFLOPs = transformerModelFLOPs(m.Transformer, st.GBS, st.Seq)
	} else {
		c := &e.c
		if err := checkChain(m, c, tp); err != nil {
			return st, 0, err
		}
		s := &stages[kOnly]
		have[kOnly] = true
		mlpStage(&p, c, st, eb, pb, gb, s)
		var buf [64]int64
		params := mlpParams(c, tp, buf[:0])
		pk := packer{cap: st.BucketBytes, gb: gb, cost: bucketCost(&p, st, g)}
		for i := len(params) - 1; i >= 0; i-- {
			s.params += params[i]
			pk.add(params[i])
		}
		optimizerCosts(&p, s, st, g, tp, pb, gb, ob, &pk, 0)
		tokens := float64(st.GBS)
		var fwd float64
		for k := range c.in {
			fwd += 2 * tokens * float64(c.in[k]) * float64(c.out[k])
		}
		modelFLOPs = units.FLOPs(3 * fwd)
	}
	assemble(&p, st, hw, pb, gb, ob, &stages, &have, modelFLOPs, out)
	return st, peak, nil
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
		s.partial = n * layerPartial
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
		n := units.Bytes(s.partial * gb)
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

// rankSum is one pipeline rank: the sum over its virtual stages, as Predict's rankT.
type rankSum struct {
	perMicro, compute, comm, opt, optComm, dp, last, bwd units.Seconds
	mem                                                  Memory
	buckets, gathers                                     units.Bytes // StageComm, StageGathers
	// bytes sent and communication time per step, summed over the rank's stages
	sent     [nDims]units.Bytes
	commTime [nDims]units.Seconds
}

// assemble turns the stage kinds into the Totals, the way Predict and Coster.Memory do.
func assemble(p *pricer, st strategies.Strategy, hw *hardware.Hardware, pb, gb, ob int64, stages *[nKinds]stageSum, have *[nKinds]bool, modelFLOPs units.FLOPs, out *Totals) {
	mesh := st.Mesh
	mb := st.Microbatches()
	m := units.Seconds(mb)
	pp, v := mesh.PP, st.VPP
	g := int64(mesh.DP * mesh.CP)

	var flops units.FLOPs
	for k := range nKinds {
		if !have[k] {
			continue
		}
		s := &stages[k]
		count := 1.0
		if k == kMiddle {
			count = float64(pp*v - 2)
		}
		flops += units.FLOPs(count) * s.flops
	}

	// Pipeline ranks: rank 0 holds the first stage and v-1 middle ones, rank pp-1 v-1 middle ones
	// and the last, the ranks between v middle ones (Narayanan et al. 2021 §2.2.2). Ranks between
	// are identical but for the microbatches in flight, which fall with the rank, so rank 1 stands
	// for them.
	var ranks [3]rankSum
	nr := 0
	addRank := func(r int, parts ...[2]int) {
		rs := &ranks[nr]
		nr++
		var elems int64
		var dynamic units.Bytes
		inFlight := InFlight(st, mb, r)
		for _, pt := range parts {
			s, c := &stages[pt[0]], pt[1]
			if c == 0 {
				continue
			}
			fe, be := s.fOverlap, s.bOverlap
			if st.Overlap {
				fe = max(0, s.fOverlap-s.fCompute)
				be = max(0, s.bOverlap-s.bCompute)
			}
			k := units.Seconds(c)
			for d := range nDims {
				rs.sent[d] += units.Bytes(c) * (units.Bytes(mb)*s.sent[d] + s.optSent[d])
				rs.commTime[d] += k * (m*s.commTime[d] + s.optTime[d])
			}
			rs.compute += k * (s.fCompute + s.bCompute)
			rs.comm += k * (s.fComm + s.bComm + fe + be)
			rs.perMicro += k * (s.fCompute + s.bCompute + s.fComm + s.bComm + fe + be)
			rs.bwd += k * (s.bCompute + s.bComm)
			rs.opt += k * s.optCompute
			rs.optComm += k * s.optComm
			rs.dp += k * s.dpComm
			rs.last = max(rs.last, s.lastBucket)
			elems += int64(c) * s.params
			rs.mem.Activations += units.Bytes(c) * units.Bytes(inFlight*float64(s.saved))
			rs.mem.Workspace = max(rs.mem.Workspace, s.work)
			rs.buckets = max(rs.buckets, s.comm)
			rs.gathers = max(rs.gathers, 2*s.gather) // StageGathers
			rs.mem.Comm = max(rs.buckets, rs.gathers)
			// The saved values of the other microbatches in flight, and the live values of the one
			// running (Coster.Memory).
			dynamic += units.Bytes(c) * (units.Bytes((inFlight-1)*float64(s.saved)) + s.live)
		}
		shard := func(n int64, on bool) units.Bytes {
			if on && g > 1 {
				return units.Bytes((n + g - 1) / g)
			}
			return units.Bytes(n)
		}
		mem := &rs.mem
		mem.Params = shard(elems, st.ZeRO >= 3) * units.Bytes(pb)
		mem.Grads = shard(elems, st.ZeRO >= 2) * units.Bytes(gb)
		mem.Optimizer = shard(elems, st.ZeRO >= 1) * units.Bytes(ob)
		// Gradient buckets live in the optimizer phase, when no activations do; ZeRO-3's gather
		// buffers live beside them (Coster.Memory).
		mem.Peak = mem.Params + mem.Grads + mem.Optimizer + max(dynamic+rs.gathers, rs.buckets)
	}
	if pp*v == 1 {
		addRank(0, [2]int{kOnly, 1})
	} else { // pp > 1: interleaving needs a pipeline (Strategy.Validate)
		addRank(0, [2]int{kFirst, 1}, [2]int{kMiddle, v - 1})
		if pp > 2 {
			addRank(1, [2]int{kMiddle, v})
		}
		addRank(pp-1, [2]int{kMiddle, v - 1}, [2]int{kLast, 1})
	}
	slow, worst := 0, -1
	for i := range nr {
		ri := &ranks[i]
		rsl := &ranks[slow]
		if ri.perMicro+ri.opt+ri.dp > rsl.perMicro+rsl.opt+rsl.dp {
			slow = i
		}
		if worst < 0 && ri.mem.Peak > 0 || worst >= 0 && ri.mem.Peak > ranks[worst].mem.Peak {
			worst = i
		}
	}
	for i := range nr {
		for d := range nDims {
			out.CommBytes[d] = max(out.CommBytes[d], ranks[i].sent[d])
			out.CommTime[d] = max(out.CommTime[d], ranks[i].commTime[d])
		}
	}
	rt := &ranks[slow]
	bubble := units.Seconds(float64(pp-1) / float64(v) * float64(rt.perMicro))
	dpExposed := rt.dp
	if st.Overlap && rt.dp > 0 {
		dpExposed = max(rt.last, rt.dp-rt.bwd)
	}
	out.Time.Compute = m * rt.compute
	out.Time.CommExposed = m*rt.comm + dpExposed + rt.optComm
	out.Time.Bubble = bubble
	out.Time.Optimizer = rt.opt
	out.Time.Step = out.Time.Compute + out.Time.CommExposed + out.Time.Bubble + out.Time.Optimizer
	if worst >= 0 {
		out.Memory = ranks[worst].mem
	}

	out.Devices = mesh.Devices()
	out.FLOPs.Model = modelFLOPs
	out.FLOPs.Hardware = flops * units.FLOPs(mb) * units.FLOPs(mesh.DP*mesh.CP*mesh.TP)
	dev := float64(out.Devices)
	step := float64(out.Time.Step)
	if step > 0 {
		out.MFU = float64(out.FLOPs.Model) / (step * float64(p.peak) * dev)
		out.HFU = float64(out.FLOPs.Hardware) / (step * float64(p.peak) * dev)
		out.ModelTFLOPsPerGPU = float64(out.FLOPs.Model) / step / dev / 1e12
		out.HardwareTFLOPsPerGPU = float64(out.FLOPs.Hardware) / step / dev / 1e12
		out.TokensPerS = float64(int64(st.GBS)*int64(max(st.Seq, 1))) / step
	}
	out.Feasible = out.Memory.Peak <= hw.Device.Memory
}
