package costmodel

import (
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// This file prices single ops for Estimate the way Coster prices the Program's ops: the same
// roofline (Coster.Compute), the same alpha-beta collectives (CollectiveTime) and the same bytes
// sent (DESIGN.md table), so that a closed form built from them adds up to Predict's totals.

// Mesh dimension indices of the fixed-size arrays below, in strategies.DimOrder.
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

// pricer holds what pricing an op needs: the hardware, the peak at the strategy's precision and
// the strides of the mesh's groups.
type pricer struct {
	hw       *hardware.Hardware
	st       strategies.Strategy
	peak     units.FLOPsPerSecond
	slowdown units.Seconds // Coster.shared: ranks sharing cores, and a fixed time per op
	overhead units.Seconds
	invMem   float64 // seconds per byte of memory traffic at the achieved bandwidth
	invPeak  float64 // seconds per FLOP at peak
	invGEMM  float64 // seconds per FLOP at the GEMM efficiency's limit, GEMMLimit x peak
	halfGEMM float64 // GEMMHalfFLOPs
	invFlash float64 // seconds per FLOP of the FlashAttention kernel at its fraction of peak; 0 for eager attention
	tp       int     // tensor-parallel group
	cp       int     // context-parallel group, stride tp
	g        int     // data-parallel group (dp x cp), stride tp
	stride   int     // stride of the cp and dp groups
	ppEnds   int     // the level joining the first and the last pipeline ranks
}

func newPricer(hw *hardware.Hardware, peak units.FLOPsPerSecond, st strategies.Strategy) pricer {
	e := hw.Efficiency
	mesh := st.Mesh
	var invFlash float64
	if f := flashFraction(st, hw); f > 0 {
		invFlash = 1 / (float64(peak) * f)
	}
	return pricer{invFlash: invFlash, hw: hw, st: st, peak: peak, slowdown: units.Seconds(RankSlowdown(hw, mesh)), overhead: e.OpOverhead,
		invMem: 1 / (float64(hw.Device.MemBandwidth) * e.MemMax), invPeak: 1 / float64(peak),
		invGEMM: 1 / (float64(peak) * e.GEMMLimit()), halfGEMM: float64(e.GEMMHalfFLOPs),
		tp: mesh.TP, cp: mesh.CP, g: mesh.DP * mesh.CP, stride: mesh.TP,
		ppEnds: hw.LevelFor((mesh.PP-1)*mesh.DP*mesh.CP*mesh.TP + 1)}
}

// collective is CollectiveTime(hw, kind, g, stride, n): the same price as Coster.Comm's, which
// is not affine in n (NCCL's protocol changes with the size), so it is not linearized.
func (p *pricer) collective(kind program.OpKind, g, stride int, n units.Bytes) units.Seconds {
	return CollectiveTime(p.hw, kind, g, stride, n)
}

// The roofline of Coster.Compute: max(FLOPs / (peak x eff), bytes / achieved bandwidth), times
// the slowdown of shared cores, plus a fixed time per op.

// gemmTime is an op of k GEMMs of f FLOPs each touching mem bytes: with the efficiency
// eff(f) = GEMMLimit f/(f + f_half) (package hardware), k f/(peak eff(f)) = k (f + f_half)/(GEMMLimit peak).
func (p *pricer) gemmTime(k, f, mem float64) units.Seconds {
	return p.slowdown * (units.Seconds(max(k*(f+p.halfGEMM)*p.invGEMM, mem*p.invMem)) + p.overhead)
}

// attnTime is the attention core of Coster.Compute. Eager: its products at the GEMM efficiency
// and its passes over the scores at the memory bandwidth, one after the other. FlashAttention:
// one fused kernel, products at its own efficiency or bound by its bytes.
func (p *pricer) attnTime(f, mem float64) units.Seconds {
	if p.invFlash > 0 {
		return p.slowdown * (units.Seconds(max(f*p.invFlash, mem*p.invMem)) + p.overhead)
	}
	return p.slowdown * (units.Seconds((f+p.halfGEMM)*p.invGEMM+mem*p.invMem) + p.overhead)
}

// ewTime is an op that is not a matrix product: at peak, or memory-bound.
func (p *pricer) ewTime(f, mem float64) units.Seconds {
	return p.slowdown * (units.Seconds(max(f*p.invPeak, mem*p.invMem)) + p.overhead)
}

// tally is what one stretch of a stage's program costs for one microbatch (forward and backward),
// and the activation bytes it keeps for backward.
type tally struct {
	fCompute, bCompute units.Seconds
	fComm, bComm       units.Seconds // tensor, context and pipeline parallel: on the critical path
	fOverlap, bOverlap units.Seconds // data parallel (ZeRO-3 gathers and reductions)
	commTime           [NumDims]units.Seconds
	sent               [NumDims]units.Bytes
	flops              units.FLOPs // matrix-product FLOPs (linear and attention), recompute included
	saved              units.Bytes // activations kept from forward to backward
	gather             units.Bytes // the largest ZeRO-3 parameter gather (StageComm)
}

// addScaled adds k copies of o to t.
func (t *tally) addScaled(o *tally, k float64) {
	ks := units.Seconds(k)
	kb := units.Bytes(k)
	t.fCompute += ks * o.fCompute
	t.bCompute += ks * o.bCompute
	t.fComm += ks * o.fComm
	t.bComm += ks * o.bComm
	t.fOverlap += ks * o.fOverlap
	t.bOverlap += ks * o.bOverlap
	for d := range NumDims {
		t.commTime[d] += ks * o.commTime[d]
		t.sent[d] += kb * o.sent[d]
	}
	t.flops += units.FLOPs(k) * o.flops
	t.saved += kb * o.saved
	if k > 0 {
		t.gather = max(t.gather, o.gather)
	}
}

// emitter walks one stretch of ops in Program order. With t set it prices them into t; it always
// follows two counts of live bytes from the stretch's start: transient values (neither saved for
// backward nor data), as StageWorkspace does, and all values, as StageLive does. An op's outputs
// are live from the op on, the values whose last use is the op are freed after it. Callers record
// a value saved for backward with save just before the op that writes it, and its release with
// drop just after the backward op that reads it last.
type emitter struct {
	p        *pricer
	t        *tally // nil: follow bytes only
	backward bool
	replay   bool // forward ops rerun in backward (full recompute): forward costs, backward time
	cur, all units.Bytes
	pc, pa   units.Bytes // peaks of cur and all
}

// noPeak starts a stretch's peaks below any count, so that they record the stretch's own ops.
const noPeak = units.Bytes(-1 << 62)

func newEmitter(p *pricer, t *tally, backward bool) emitter {
	return emitter{p: p, t: t, backward: backward, pc: noPeak, pa: noPeak}
}

// seg is a stretch's effect on the live bytes: peaks relative to its start, and net change.
type seg struct{ pc, pa, dc, da units.Bytes }

func (m *emitter) seg() seg { return seg{m.pc, m.pa, m.cur, m.all} }

// live allocates an op's transient outputs and frees the transient values it used last.
func (m *emitter) live(out, free units.Bytes) {
	m.cur += out
	m.all += out
	if m.cur > m.pc {
		m.pc = m.cur
	}
	if m.all > m.pa {
		m.pa = m.all
	}
	m.cur -= free
	m.all -= free
}

// bmax is max for byte counts, which are never NaN.
func bmax(a, b units.Bytes) units.Bytes {
	if a > b {
		return a
	}
	return b
}

// drop releases saved values after the backward op that read them last.
func (m *emitter) drop(b units.Bytes) { m.all -= b }

// walker composes stretches: the live counts at the current point of a stage and their peaks.
type walker struct{ cur, all, pc, pa units.Bytes }

// run applies k copies of stretch s in a row. The copies are identical, so their peaks lie on a
// line: the largest is the first or the last.
func (w *walker) run(s seg, k int64) {
	if k <= 0 {
		return
	}
	kk := units.Bytes(k - 1)
	w.pc = bmax(w.pc, w.cur+s.pc+bmax(0, kk*s.dc))
	w.pa = bmax(w.pa, w.all+s.pa+bmax(0, kk*s.da))
	w.cur += units.Bytes(k) * s.dc
	w.all += units.Bytes(k) * s.da
}

func (m *emitter) addCompute(s units.Seconds) {
	if m.backward {
		m.t.bCompute += s
	} else {
		m.t.fCompute += s
	}
}

// save counts activation bytes kept for backward, written by the next op.
func (m *emitter) save(b units.Bytes) {
	m.all += b
	if m.t != nil {
		m.t.saved += b
	}
}

// linear is a Linear of rows x in -> rows x out: 2 rows in out FLOPs forward; backward computes
// the weight gradient and, when gradInput, the input gradient, each a GEMM of the forward's size
// (Narayanan et al. 2021 §5.1: backward = 2 x forward).
func (m *emitter) linear(rows, in, out, e int64, gradInput bool, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	f := float64(2 * rows * in * out)
	mem := float64((rows*in + in*out + rows*out) * e)
	k := 1.0
	if m.backward && !m.replay && gradInput {
		k = 2
	}
	m.t.flops += units.FLOPs(k * f)
	m.addCompute(m.p.gemmTime(k, f, k*mem))
}

// attention is the core of attention, a GEMM-like op of f FLOPs touching mem bytes.
func (m *emitter) attention(f units.FLOPs, mem units.Bytes, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	m.t.flops += f
	m.addCompute(m.p.attnTime(float64(f), float64(mem)))
}

// elementwise is an op that is not a matrix product (norm, activation, add, bias, embedding,
// loss, slice).
func (m *emitter) elementwise(f units.FLOPs, mem units.Bytes, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	m.addCompute(m.p.ewTime(float64(f), float64(mem)))
}

// comm records a blocking (tp, cp, pp) or overlappable (dp) communication op.
func (m *emitter) comm(dim int, d units.Seconds, sent units.Bytes) {
	t := m.t
	t.commTime[dim] += d
	t.sent[dim] += sent
	switch {
	case dim == IndexDP && m.backward:
		t.bOverlap += d
	case dim == IndexDP:
		t.fOverlap += d
	case m.backward:
		t.bComm += d
	default:
		t.fComm += d
	}
}

// tpColl is a collective over the tensor-parallel group on a full tensor of n bytes; it sends the
// bytes of the DESIGN.md table: 2(p-1)/p n for an all-reduce, (p-1)/p n otherwise.
func (m *emitter) tpColl(kind program.OpKind, n units.Bytes, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	p := m.p.tp
	frac := units.Bytes(float64(p-1) / float64(p))
	sent := frac * n
	if kind == program.OpAllReduce {
		sent = 2 * frac * n
	}
	m.comm(IndexTP, m.p.collective(kind, p, 1, n), sent)
}

// cpColl is a collective over the context-parallel group (key/value gathers and their gradients).
func (m *emitter) cpColl(kind program.OpKind, n units.Bytes, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	p := m.p.cp
	m.comm(IndexCP, m.p.collective(kind, p, m.p.stride, n), n*units.Bytes(p-1)/units.Bytes(p))
}

// zero is a ZeRO-3 gather of a module's parameters or reduction of its gradients over the
// data-parallel group, n bytes in all (Rajbhandari et al. 2020 §5.3).
func (m *emitter) zero(kind program.OpKind, n units.Bytes) {
	if m.t == nil || n == 0 {
		return
	}
	g := m.p.g
	m.comm(IndexDP, m.p.collective(kind, g, m.p.stride, n), n*units.Bytes(g-1)/units.Bytes(g))
	if kind == program.OpAllGather && g > 1 {
		m.t.gather = max(m.t.gather, n)
	}
}

// pp is a send (bytes > 0) or receive between pipeline stages: one hop on the link joining them.
func (m *emitter) pp(sent units.Bytes, outB, freeB units.Bytes) {
	m.live(outB, freeB)
	if m.t == nil {
		return
	}
	var d units.Seconds
	if sent > 0 {
		// A receive costs nothing: the send carries the transfer (Coster.Comm's price).
		d = PipelineSendTime(m.p.hw, m.p.st, sent)
	}
	m.comm(IndexPP, d, sent)
}

// ppAllReduce is Coster.Comm of the tied embedding's all-reduce over pp: a ring of the first and
// the last pipeline ranks, two steps on the level joining them, sending sent bytes.
func (p *pricer) ppAllReduce(sent units.Bytes) units.Seconds {
	l := p.hw.Levels[p.ppEnds]
	return 2*l.Latency + units.Seconds(float64(sent)/(float64(l.Bandwidth)*l.Efficiency))
}
