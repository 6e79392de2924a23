package costmodel

import (
	"fmt"
	"sync"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Piece is what a step's price needs of one (virtual) pipeline stage: its times per microbatch
// by what the critical path does with them, its once-per-step optimizer phase, what it sends,
// and the memory quantities of Coster.Memory. Predict takes the pieces of every stage of a
// Program (Coster.Piece); the derived closed form (Derived) takes them from a Program lowered
// with one and two layers per stage and extrapolates in the layers. Both compose them into the
// step with one function (compose), so the pipeline, overlap and memory rules exist once.
type Piece struct {
	// Per microbatch: compute, blocking communication (tensor and context parallel, pipeline
	// sends) and data-parallel communication that ZeRO-3 prefetch may hide (its gathers and
	// reduce-scatters), forward and backward.
	FCompute, BCompute, FComm, BComm, FOverlap, BOverlap units.Seconds
	// Of that data-parallel time, per microbatch, what the main sequence does not hide when
	// it overlaps (linkWalk, with Strategy.Prefetch units of prefetch).
	FLink, BLink units.Seconds
	// Once per step: the update, blocking optimizer-phase communication (tp gradient all-reduce,
	// tied embedding over pp, ZeRO-1/2 gathers), the data-parallel gradient reduction and its
	// last bucket (DDP overlap never hides that one).
	OptCompute, OptComm, DPComm, LastBucket units.Seconds
	// CommTime and Sent per step by mesh dimension (strategies.DimOrder): every microbatch's
	// forward and backward and the optimizer phase once.
	CommTime [NumDims]units.Seconds
	Sent     [NumDims]units.Bytes
	// FLOPs is the matrix-product FLOPs (Linear, attention) of one microbatch's forward and
	// backward on one rank (HardwareFLOPs).
	FLOPs units.FLOPs
	// Params is the local parameter elements; Act the bytes saved for backward per microbatch
	// (StageActivations); Live and Work the most bytes of one microbatch alive at once, all and
	// transient (stageLiveness); Buckets the largest gradient bucket (gradBuffer);
	// Gathers ZeRO-3's parameter buffers (unitGathers.held).
	Params                            int64
	Act, Live, Work, Buckets, Gathers units.Bytes
}

// Piece prices stage s of the Coster's Program.
func (c *Coster) Piece(s *program.Stage) Piece {
	t := c.fbPiece(s)
	c.optimizerPiece(s.Optimizer, &t)
	for i := range s.Params {
		t.Params += s.Params[i].Elems()
	}
	return t
}

// fbPiece prices the forward and backward of stage s: all of Piece but the optimizer phase and
// the parameters.
func (c *Coster) fbPiece(s *program.Stage) Piece { return c.fbPieceLinks(s, nil) }

// fbPieceLinks is fbPiece, and on a ZeRO-3 stage it also leaves each phase's ops for the link's
// walk in links (forward, backward) when links is not nil.
func (c *Coster) fbPieceLinks(s *program.Stage, links *[2][]linkItem) Piece {
	var t Piece
	m := units.Seconds(c.P.Microbatches)
	mb := units.Bytes(c.P.Microbatches)
	st := c.P.Strategy
	phase := func(ph int, ops []program.Op, comp, comm, over, link *units.Seconds) {
		var items *linkItems
		if st.ZeRO == 3 {
			items = &linkItems{ids: map[string]int32{}, items: make([]linkItem, 0, len(ops))}
		}
		for i := range ops {
			op := &ops[i]
			if op.Kind == program.OpLinear || op.Kind == program.OpAttention {
				t.FLOPs += op.FLOPs
			}
			if d := DimIndex(op.Dim); d >= 0 {
				t.Sent[d] += mb * op.SentBytes
			}
			var d units.Seconds
			if op.Kind.IsComm() {
				d = c.Comm(op)
				t.CommTime[DimIndex(op.Dim)] += m * d
				if op.Dim == strategies.DimDP {
					*over += d
				} else {
					d -= c.Hidden(ops, i, d)
					*comm += d
				}
			} else {
				d = c.Compute(op)
				*comp += d
			}
			if items != nil {
				items.add(op, d)
			}
		}
		if items != nil && *over > 0 {
			// ZeRO-3: the link's walk, and the gathered parameters held.
			g := gatherUnits(items.items)
			if st.Overlap {
				*link = linkWalk(items.items, &g, st.Prefetch, c.OverlapSlowdown())
			}
			t.Gathers = max(t.Gathers, g.held(prefetchAhead(st)))
			if links != nil {
				links[ph] = items.items
			}
		}
	}
	phase(0, s.Forward, &t.FCompute, &t.FComm, &t.FOverlap, &t.FLink)
	phase(1, s.Backward, &t.BCompute, &t.BComm, &t.BOverlap, &t.BLink)
	t.Act = StageActivations(s)
	t.Work, t.Live = stageLiveness(s)
	return t
}

// optimizerPiece adds the optimizer phase ops to t (their times, bytes and gradient buffers).
func (c *Coster) optimizerPiece(ops []program.Op, t *Piece) {
	for i := range ops {
		c.optimizerOp(&ops[i], 1, t)
	}
}

// optimizerOp adds times identical optimizer phase ops op to t (program.OptimizerPhase).
func (c *Coster) optimizerOp(op *program.Op, times int, t *Piece) {
	k := units.Seconds(times)
	if d := DimIndex(op.Dim); d >= 0 {
		t.Sent[d] += units.Bytes(times) * op.SentBytes
	}
	t.Buckets = max(t.Buckets, gradBuffer(op))
	if !op.Kind.IsComm() {
		t.OptCompute += k * c.Compute(op)
		return
	}
	d := c.Comm(op)
	t.CommTime[DimIndex(op.Dim)] += k * d
	if op.Dim == strategies.DimDP && (op.Kind == program.OpAllReduce || op.Kind == program.OpReduceScatter) {
		t.DPComm += k * d
		t.LastBucket = d
	} else {
		t.OptComm += k * d
	}
}

// composeOpts: see compose. ranks asks for every rank's memory.
type composeOpts struct {
	limit units.Bytes
	bound bool
	ranks bool
	sigma float64 // Coster.OverlapSlowdown
}

// composeScratch holds compose's buffers, reused across calls.
type composeScratch struct {
	ranks  []pipeRank
	f, b   []units.Seconds
	pieces []Piece
}

var composePool = sync.Pool{New: func() any { return new(composeScratch) }}

// pipeRank is one pipeline rank: the sum over its virtual stages.
type pipeRank struct {
	perMicro, compute, comm, opt, optComm, dp, last, bwd units.Seconds
	elems                                                int64
	dynamic, buckets, gathers                            units.Bytes
	mem                                                  Memory
	sent                                                 [NumDims]units.Bytes
	commTime                                             [NumDims]units.Seconds
}

// compose turns the pieces of the nv = pp x vpp virtual stages of strategy st, in stage order
// (stage i on pipeline rank i mod pp), into the step's Totals and every rank's memory. With a
// positive o.limit, a strategy whose peak memory exceeds it gets no time (what a search keeps of
// one that does not fit); with o.bound a pipeline's step is pipelineBound's lower bound instead
// of the timeline (Totals.Bound).
// Totals is the numeric content of a Result: what a search compares, without the strings and maps
// (CommBytes and CommTime are indexed like strategies.DimOrder: pp, dp, cp, tp; see DimIndex).
type Totals struct {
	Devices  int
	Feasible bool
	// Bound is true when Time.Step is a lower bound of a pipeline's step, not its timeline
	// (Quick); the memory and bytes are exact either way.
	Bound bool
	// PeakBound is true when Memory.Peak is a lower bound (Quick): the parameters, gradients
	// and optimizer state alone exceed the device, so the activations were not priced.
	PeakBound bool

	Memory    Memory
	CommBytes [NumDims]units.Bytes
	CommTime  [NumDims]units.Seconds
	Time      Time
	FLOPs     FLOPs

	MFU, HFU                                float64
	ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU float64
	TokensPerS                              float64
}

// IndexPP, IndexDP, IndexCP and IndexTP are the mesh dimensions' places in Totals.CommBytes,
// Totals.CommTime and every per-dimension array of the cost model and the search: the order of
// strategies.DimOrder (DimIndex finds one by name). NumDims is their number.
const (
	IndexPP = iota
	IndexDP
	IndexCP
	IndexTP
	NumDims
)

// DimIndex returns the index of mesh dimension name in Totals.CommBytes and Totals.CommTime
// (the order of strategies.DimOrder), or -1 for an unknown name.
func DimIndex(name strategies.Dim) int {
	for i, d := range strategies.DimOrder {
		if d == name {
			return i
		}
	}
	return -1
}

// staticMemory is the parameters, gradients and optimizer state of a rank holding elems
// parameters of st, at pb, gb and ob bytes per element; Peak is their sum. ZeRO (Rajbhandari et
// al. 2020 §5): stage 1 shards optimizer state, 2 also gradients, 3 also parameters, each over
// the data-parallel group (dp x cp).
func staticMemory(st strategies.Strategy, elems int64, pb, gb, ob int) Memory {
	g := int64(st.Mesh.DP * st.Mesh.CP)
	shard := func(on bool) units.Bytes {
		if on && g > 1 {
			return units.Bytes((elems + g - 1) / g)
		}
		return units.Bytes(elems)
	}
	m := Memory{Params: shard(st.ZeRO >= 3) * units.Bytes(pb), Grads: shard(st.ZeRO >= 2) * units.Bytes(gb),
		Optimizer: shard(st.ZeRO >= 1) * units.Bytes(ob)}
	m.Peak = m.Params + m.Grads + m.Optimizer
	return m
}

func compose(st strategies.Strategy, microbatches int, pb, gb, ob int, pieces []Piece, out *Totals, o composeOpts) ([]Memory, error) {
	mesh := st.Mesh
	pp := mesh.PP
	m := units.Seconds(microbatches)
	sc := composePool.Get().(*composeScratch)
	defer composePool.Put(sc)
	if cap(sc.ranks) < pp {
		sc.ranks = make([]pipeRank, pp)
	}
	ranks := sc.ranks[:pp]
	clear(ranks)
	var flops units.FLOPs
	for i := range pieces {
		s := &pieces[i]
		r := i % pp
		rt := &ranks[r]
		fe, be := overlapExposed(st, s)
		rt.compute += s.FCompute + s.BCompute
		rt.comm += s.FComm + s.BComm + fe + be
		rt.perMicro += s.FCompute + s.BCompute + s.FComm + s.BComm + fe + be
		rt.bwd += s.BCompute + s.BComm
		rt.opt += s.OptCompute
		rt.optComm += s.OptComm
		rt.dp += s.DPComm
		rt.last = max(rt.last, s.LastBucket)
		for d := range NumDims {
			rt.commTime[d] += s.CommTime[d]
			rt.sent[d] += s.Sent[d]
		}
		flops += s.FLOPs * units.FLOPs(microbatches) * units.FLOPs(mesh.DP*mesh.CP*mesh.TP)
		// Memory (Coster.Memory): the saved values of the microbatches in flight, and of the one
		// running every value alive at once.
		inflight := InFlight(st, microbatches, r)
		rt.elems += s.Params
		rt.mem.Activations += units.Bytes(inflight * float64(s.Act))
		rt.mem.Workspace = max(rt.mem.Workspace, s.Work)
		rt.buckets = max(rt.buckets, s.Buckets)
		rt.gathers = max(rt.gathers, s.Gathers)
		rt.mem.Comm = max(rt.buckets, rt.gathers)
		rt.dynamic += units.Bytes((inflight-1)*float64(s.Act)) + s.Live
	}
	var perRank []Memory
	if o.ranks {
		perRank = make([]Memory, pp)
	}
	out.Memory = Memory{}
	out.CommBytes, out.CommTime = [NumDims]units.Bytes{}, [NumDims]units.Seconds{}
	for r := range ranks {
		rt := &ranks[r]
		mem := &rt.mem
		s := staticMemory(st, rt.elems, pb, gb, ob)
		mem.Params, mem.Grads, mem.Optimizer = s.Params, s.Grads, s.Optimizer
		// Gradient buckets live in the optimizer phase, when no activations do; ZeRO-3's gather
		// buffers live beside them.
		mem.Peak = mem.Params + mem.Grads + mem.Optimizer + max(rt.dynamic+rt.gathers, rt.buckets)
		if o.ranks {
			perRank[r] = *mem
		}
		if mem.Peak > out.Memory.Peak {
			out.Memory = *mem
		}
		// A pipeline rank sends what all its model chunks send; report the busiest rank.
		for d := range NumDims {
			out.CommTime[d] = max(out.CommTime[d], rt.commTime[d])
			out.CommBytes[d] = max(out.CommBytes[d], rt.sent[d])
		}
	}
	// The optimizer phase after a rank's last backward: DDP reduces buckets during the last
	// microbatch's backward, and the last bucket is never hidden. The buckets before it slow
	// that backward while they run (slowedBy); what they add to it is exposed.
	tail := func(rt *pipeRank) (dpExposed, all units.Seconds) {
		dpExposed = rt.dp
		if st.Overlap && rt.dp > 0 {
			dpExposed = max(rt.dp, slowedBy(rt.bwd, rt.dp-rt.last, o.sigma)+rt.last) - rt.bwd
		}
		return dpExposed, dpExposed + rt.optComm + rt.opt
	}
	out.Devices = mesh.Devices()
	out.FLOPs.Hardware = flops
	out.Time, out.Bound = Time{}, false
	if o.limit > 0 && out.Memory.Peak > o.limit {
		return perRank, nil
	}
	if pp == 1 {
		rt := &ranks[0]
		dpExposed, _ := tail(rt)
		out.Time.Compute = m * rt.compute
		out.Time.CommExposed = m*rt.comm + dpExposed + rt.optComm
		out.Time.Bubble = 0
		out.Time.Optimizer = rt.opt
		out.Time.Step = out.Time.Compute + out.Time.CommExposed + out.Time.Bubble + out.Time.Optimizer
		return perRank, nil
	}
	// A pipeline: the step is the longest path through the schedule's tasks (pipelineEnds), the
	// same timeline the simulator lays out; the critical rank is the one that ends last.
	sc.f, sc.b = grow(sc.f, len(pieces)), grow(sc.b, len(pieces))
	f, b := sc.f, sc.b
	for i := range pieces {
		s := &pieces[i]
		fe, be := overlapExposed(st, s)
		f[i] = s.FCompute + s.FComm + fe
		b[i] = s.BCompute + s.BComm + be
	}
	crit, step := 0, units.Seconds(-1)
	if o.bound {
		out.Bound = true
		_, tail0 := tail(&ranks[0])
		var startF, drain units.Seconds // sum of the forwards and backwards of the stages before r
		for r := range ranks {
			rt := &ranks[r]
			_, t := tail(rt)
			end := startF + m*rt.perMicro
			if e := max(end+t, end+drain+tail0); e > step {
				crit, step = r, e
			}
			startF += f[r]
			drain += b[r]
		}
	} else {
		ends, err := pipelineEnds(st, microbatches, f, b)
		if err != nil {
			return perRank, err
		}
		for r := range ranks {
			_, t := tail(&ranks[r])
			if e := ends[r] + t; e > step {
				crit, step = r, e
			}
		}
	}
	rt := &ranks[crit]
	dpExposed, _ := tail(rt)
	out.Time.Step = step
	out.Time.Compute = m * rt.compute
	out.Time.CommExposed = m*rt.comm + dpExposed + rt.optComm
	out.Time.Optimizer = rt.opt
	// The rest is the critical rank waiting for its neighbours: the bubble (zero when it is only
	// floating-point noise, as the simulator rounds it).
	out.Time.Bubble = step - out.Time.Compute - out.Time.CommExposed - out.Time.Optimizer
	if out.Time.Bubble < 1e-9*step {
		out.Time.Bubble = 0
	}
	return perRank, nil
}

// overlapExposed is what of stage piece s's data-parallel link time (ZeRO-3's gathers and
// reduce-scatters) shows in its forward and backward of one microbatch: all of it without
// overlap; with it, what the main sequence (compute and the blocking tensor- and
// context-parallel collectives, which use links of their own) does not hide, as the simulator
// lays the phase out (linkWalk). What a backward leaves on the link delays the next forward's
// first gathers, and with them that forward's compute, so it shows in full: no carry between
// microbatches.
func overlapExposed(st strategies.Strategy, s *Piece) (fe, be units.Seconds) {
	if !st.Overlap {
		return s.FOverlap, s.BOverlap
	}
	return s.FLink, s.BLink
}

// finish fills the figures that follow from the step time and the memory: MFU, HFU, TFLOP/s per
// GPU, tokens per second and whether the strategy fits.
func (t *Totals) finish(st strategies.Strategy, hw *hardware.Hardware, peak units.FLOPsPerSecond) {
	var r Result
	r.Devices, r.FLOPs = t.Devices, t.FLOPs
	r.SetTime(t.Time, peak, int64(st.GBS)*int64(max(st.Seq, 1)))
	t.MFU, t.HFU, t.ModelTFLOPsPerGPU, t.HardwareTFLOPsPerGPU, t.TokensPerS = r.MFU, r.HFU, r.ModelTFLOPsPerGPU, r.HardwareTFLOPsPerGPU, r.TokensPerS
	t.Feasible = t.Memory.Peak <= hw.Device.Memory
}

// result is the Result of totals t for strategy st (resolved) of model name on hw.
func (t *Totals) result(model string, st strategies.Strategy, plan string, hw *hardware.Hardware, peak units.FLOPsPerSecond, microbatches int, attention bool) *Result {
	r := &Result{Model: model, Hardware: hw.Name, Strategy: st.String(), Plan: plan, Devices: t.Devices,
		Feasible: t.Feasible, Memory: t.Memory, Time: t.Time, FLOPs: t.FLOPs, MFU: t.MFU, HFU: t.HFU,
		ModelTFLOPsPerGPU: t.ModelTFLOPsPerGPU, HardwareTFLOPsPerGPU: t.HardwareTFLOPsPerGPU, TokensPerS: t.TokensPerS,
		CommBytes: map[strategies.Dim]units.Bytes{}, CommTime: map[strategies.Dim]units.Seconds{}}
	for i, d := range strategies.DimOrder {
		r.CommBytes[d] = t.CommBytes[i]
		r.CommTime[d] = t.CommTime[i]
	}
	if !t.Feasible {
		r.Reason = fmt.Sprintf("needs %v per device (params %v, grads %v, optimizer %v, activations %v), %s has %v",
			r.Memory.Peak, r.Memory.Params, r.Memory.Grads, r.Memory.Optimizer, r.Memory.Activations, hw.Name, hw.Device.Memory)
	}
	r.Assumptions = assumptions(st, hw, peak, microbatches, attention)
	return r
}
