package costmodel

import (
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// This file is the closed form of a decoder-only transformer under the Megatron plan, one function
// per layer type, each listing its ops in the order program.Lower emits them, with their costs
// and the bytes they keep alive. Sizes are per rank:
//
//	b  microbatch (sequences)          s  local sequence (seq / cp)      S  full sequence
//	h  hidden                          t  tensor-parallel size           e  bytes per activation
//	a  heads, a/t local                k  key/value heads, k/t local     d  head dim
//	f  MLP width, f/t local            V  vocabulary
//
// The transformer layer is Megatron-LM's (Shoeybi et al. 2019 §3; Narayanan et al. 2021 §3.1):
// qkv and the MLP up-projections column-parallel, the attention output and the MLP
// down-projection row-parallel, so the forward has two all-reduces of b s h per layer and the
// backward two more (Narayanan et al. 2021 §3.3); with sequence parallelism (Korthikanti et al.
// 2022 §4.2.2) each all-reduce becomes a reduce-scatter and an all-gather of the same bytes, the
// norms, dropouts, residual adds and row-parallel biases work on s/t tokens, and the column-
// parallel Linears' input is saved as its [b, s/t, h] shard and all-gathered again in backward.
//
// What one layer adds up to, per rank and microbatch, for a GPT layer (a d = h, f = 4h):
//
//	matrix-product FLOPs  forward 24bsh^2/t + 4bs^2h/t (Narayanan et al. 2021 §5.1), backward
//	                      twice that; full recompute adds the forward again (Eq. 3: 96 for 72),
//	                      selective recompute the attention core, 4bs^2h/t (Korthikanti et al. §5);
//	                      FlashAttention's core is 2bs^2h/t forward and 5bs^2h/t backward (Dao
//	                      2023 §4.1: the causal half, backward 2.5x)
//	bytes sent over tp    8bsh (t-1)/t e: four all-reduces of b s h (Narayanan et al. §3.3), or
//	                      four reduce-scatter + all-gather pairs under sequence parallelism, plus
//	                      the backward's two re-gathers of the Linears' input, 2bsh (t-1)/t e
//	                      (Korthikanti et al. §4.2.2); full recompute repeats the forward's
//	                      collectives, and then the replayed gathers stand for the re-gathers
//	activations           Korthikanti et al. 2022 Table 2 (KorthikantiActivationBytes) plus the
//	                      norms' fp32 statistics; TestProgramActivationsKorthikanti says where
//	                      the Program differs; FlashAttention keeps what selective recompute
//	                      keeps plus an fp32 log-sum-exp per query row and local head
//	parameters            12h^2 + 13h, sharded over tp but for the norms and row-parallel biases
//	                      (Narayanan et al. 2021 §5.1: P = 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)))
//	ZeRO-3                each parameter all-gathered before its forward and its backward, its
//	                      gradient reduce-scattered after (Rajbhandari et al. 2020 §5.3, 1.5x the
//	                      data-parallel volume), and gathered again for full recompute
//
// The functions below list the ops in Program order because the memory peaks (StageWorkspace,
// StageLive) depend on the order; the totals above are their sums.

// xf is one rank's view of a transformer under a strategy.
type xf struct {
	p *pricer

	b, s, S, h, t, cp  int64
	heads, kv, hd      int64 // local heads and key/value heads (a/t, k/t), head dim
	qkvOut, ffn, vocab int64 // local qkv width (a + 2k) d / t, local MLP width f/t, local vocabulary V/t
	positions          int64
	e                  int64 // bytes per activation
	pb, gb             int64 // bytes per parameter and per gradient element

	sp, gated, rms, bias, qkvBias, learned, tied, dropout, flash bool
	recompute                                                    strategies.Recompute
	zero3                                                        bool

	// Derived sizes in bytes.
	bsh   units.Bytes // one [b, s, h] activation
	r     units.Bytes // the residual stream: [b, s/t, h] under sequence parallel, else bsh
	mask  units.Bytes // a dropout mask on the residual stream: one byte per element
	stats units.Bytes // a norm's fp32 mean and rstd (LayerNorm) or rstd (RMSNorm) per token
}

func newXF(p *pricer, m *model.Model, st strategies.Strategy, e, pb, gb int64) xf {
	c := m.Transformer
	t := int64(st.Mesh.TP)
	x := xf{p: p, b: int64(st.MBS), s: int64(st.Seq / st.Mesh.CP), S: int64(st.Seq), h: int64(c.Hidden), t: t, cp: int64(st.Mesh.CP),
		heads: int64(c.Heads) / t, kv: int64(c.KVHeads) / t, hd: int64(c.HeadDim),
		qkvOut: int64(c.Heads+2*c.KVHeads) * int64(c.HeadDim) / t, ffn: int64(c.FFN) / t, vocab: int64(c.Vocab) / t,
		positions: int64(c.Seq), e: e, pb: pb, gb: gb,
		sp: st.SP && t > 1, gated: c.Gated, rms: c.RMSNorm, bias: c.Bias, qkvBias: c.Bias || c.QKVBias, learned: c.Learned,
		tied: c.Tied, dropout: c.Dropout > 0, flash: st.FusedAttention(), recompute: st.Recompute, zero3: st.ZeRO == 3}
	x.bsh = units.Bytes(x.b * x.s * x.h * e)
	x.r = x.bsh
	rows := x.b * x.s
	if x.sp {
		x.r /= units.Bytes(t)
		rows /= t
	}
	x.mask = x.r / units.Bytes(e)
	nstat := int64(2)
	if x.rms {
		nstat = 1
	}
	x.stats = units.Bytes(rows * nstat * 4)
	return x
}

func ifB(c bool, b units.Bytes) units.Bytes {
	if c {
		return b
	}
	return 0
}

func ifI(c bool, v int64) int64 {
	if c {
		return v
	}
	return 0
}

// Parameters held by one rank.

func (x *xf) normParams() int64 {
	if x.rms {
		return x.h
	}
	return 2 * x.h // LayerNorm weight and bias
}

// Local parameter elements of each op that reads parameters (ZeRO-3 gathers them before the op
// and reduce-scatters their gradients after its backward). A row-parallel bias is its own op
// when t > 1, else the Linear adds it.
func (x *xf) qkvW() int64  { return x.qkvOut*x.h + ifI(x.qkvBias, x.qkvOut) }
func (x *xf) projW() int64 { return x.h*x.heads*x.hd + ifI(x.bias && x.t == 1, x.h) }
func (x *xf) upW() int64   { return x.ffn*x.h + ifI(x.bias, x.ffn) }
func (x *xf) downW() int64 { return x.h*x.ffn + ifI(x.bias && x.t == 1, x.h) }

func (x *xf) zg(m *emitter, n int64) {
	if x.zero3 {
		m.zero(program.OpAllGather, units.Bytes(n*x.pb))
	}
}

func (x *xf) zr(m *emitter, n int64) {
	if x.zero3 {
		m.zero(program.OpReduceScatter, units.Bytes(n*x.gb))
	}
}

// Ops. The backward of an elementwise op (norm, activation, product, dropout) and of attention
// costs twice its forward (Narayanan et al. 2021 §5.1).

func (x *xf) twice(m *emitter) int64 {
	if m.backward && !m.replay {
		return 2
	}
	return 1
}

// norm is LayerNorm or RMSNorm over n elements: 5n FLOPs, reading and writing 2n activations.
func (x *xf) norm(m *emitter, n int64, outB, freeB units.Bytes) {
	k := x.twice(m)
	m.elementwise(units.FLOPs(k*5*n), units.Bytes(k*2*n*x.e), outB, freeB)
}

// ew is an elementwise op reading `reads` tensors and writing one, n elements each.
func (x *xf) ew(m *emitter, n, reads int64, outB, freeB units.Bytes) {
	k := x.twice(m)
	m.elementwise(units.FLOPs(k*n), units.Bytes(k*(reads+1)*n*x.e), outB, freeB)
}

// dropoutOp is hidden dropout on the residual stream (Srivastava et al. 2014): it reads x and
// writes the output and a one-byte mask.
func (x *xf) dropoutOp(m *emitter, outB, freeB units.Bytes) {
	k := x.twice(m)
	n := int64(x.r) / x.e
	m.elementwise(units.FLOPs(k*n), units.Bytes(k*n*(2*x.e+1)), outB, freeB)
}

// add is a residual add or a sum of two gradients of n elements: n FLOPs, 3n activations touched.
func (x *xf) add(m *emitter, n int64, outB, freeB units.Bytes) {
	m.elementwise(units.FLOPs(n), units.Bytes(3*n*x.e), outB, freeB)
}

// join sums the two gradients of a layer's input (through the residual and through norm1).
func (x *xf) join(m *emitter) { x.add(m, int64(x.r)/x.e, x.r, 2*x.r) }

// attentionCost is the forward cost of the attention core over the local heads: QK^T and the
// product with V, 2 x 2 b s S (a/t) d FLOPs (Narayanan et al. 2021 §5.1, the full s x S product),
// reading qkv and writing the output and the s x S probabilities twice; attention dropout reads
// and writes them again and writes a one-byte mask. FlashAttention (attn=flash or flash1)
// computes the causal half of the products (Dao 2023 §4.1), reading qkv (and the gathered keys
// and values) and writing the output and the log-sum-exp.
func (x *xf) attentionCost() (units.FLOPs, units.Bytes) {
	if x.flash {
		f := units.FLOPs(2 * float64(x.b) * float64(x.s) * float64(x.S) * float64(x.heads*x.hd))
		return f, x.qkvB() + x.kvB() + x.coreB() + x.lseB()
	}
	rows := x.b * x.s
	f := units.FLOPs(4 * float64(x.b) * float64(x.s) * float64(x.S) * float64(x.heads*x.hd))
	probs := x.b * x.heads * x.s * x.S * x.e
	mem := units.Bytes(rows*x.qkvOut*x.e + rows*x.heads*x.hd*x.e + 2*probs)
	if x.dropout {
		mem += units.Bytes(2*probs + probs/x.e)
	}
	return f, mem
}

// Sizes of a layer's values in bytes.
func (x *xf) qkvB() units.Bytes  { return units.Bytes(x.b * x.s * x.qkvOut * x.e) }
func (x *xf) coreB() units.Bytes { return units.Bytes(x.b * x.s * x.heads * x.hd * x.e) }
func (x *xf) ffB() units.Bytes   { return units.Bytes(x.b * x.s * x.ffn * x.e) }
func (x *xf) lseB() units.Bytes  { return units.Bytes(x.b * x.heads * x.s * 4) } // fp32 per query row and head
func (x *xf) kvB() units.Bytes {
	if x.cp == 1 {
		return 0
	}
	// Context parallel (Llama 3 §3.3.2): keys and values of the whole sequence gathered over cp.
	return units.Bytes(x.b * x.S * 2 * x.kv * x.hd * x.e)
}

// scoresB is what attention writes of its s x S scores for its backward: the softmax output
// (2as^2b), and with dropout its mask and output (as^2b + 2as^2b): Korthikanti et al. 2022 §4.1.
// Selective recompute writes none (the backward recomputes them). FlashAttention writes only its
// log-sum-exp, whatever the recompute mode.
func (x *xf) scoresB() units.Bytes {
	if x.flash {
		return x.lseB()
	}
	if x.recompute == strategies.RecomputeSelective {
		return 0
	}
	p := units.Bytes(x.b * x.heads * x.s * x.S * x.e)
	if x.dropout {
		p += p + p/units.Bytes(x.e)
	}
	return p
}

// probsB is the part of scoresB saved for backward: all of it without recompute, none under full
// recompute, where the forward's copy is transient and the backward reads the replayed one.
func (x *xf) probsB() units.Bytes {
	if x.recompute == strategies.RecomputeFull || x.recompute == strategies.RecomputeSelective && !x.flash {
		return 0
	}
	return x.scoresB()
}

// scoresT is the transient part of scoresB: under full recompute, the forward's copy, freed by
// the attention op that writes it, and the replayed copy, freed by the attention's backward.
func (x *xf) scoresT() units.Bytes {
	if x.recompute != strategies.RecomputeFull {
		return 0
	}
	return x.scoresB()
}

// rowReduce is the collective after a row-parallel Linear (Partial [b, s, h] -> Replicate by
// all-reduce, or -> Shard(seq) by reduce-scatter under sequence parallel) and its bias, added once
// after the reduction. It returns the bytes of its transient result, the residual branch (r).
// With t = 1 there is neither: the Linear adds its own bias.
func (x *xf) rowReduce(m *emitter) {
	if x.t == 1 {
		return
	}
	kind := program.OpAllReduce
	if x.sp {
		kind = program.OpReduceScatter
	}
	m.tpColl(kind, x.bsh, x.r, x.bsh)
	if x.bias {
		x.zg(m, x.h)
		n := int64(x.r) / x.e
		m.elementwise(units.FLOPs(n), units.Bytes(2*n*x.e), x.r, x.r)
	}
}

// branchEnd is the end of the attention or MLP branch: the row-parallel reduction, hidden dropout
// (its mask saved, or recomputed), and the residual add, whose output is kept when keepOut.
// freeIn is what the add frees besides the branch (under full recompute, the attention's residual
// add output is last read by the MLP's).
// It returns the transient bytes live when the add runs, besides its output.
func (x *xf) branchEnd(m *emitter, keepMask, keepOut bool, freeIn units.Bytes) units.Bytes {
	x.rowReduce(m)
	if x.dropout {
		m.save(ifB(keepMask, x.mask))
		x.dropoutOp(m, x.r+ifB(!keepMask, x.mask), x.r+ifB(!keepMask, x.mask))
	}
	m.save(ifB(keepOut, x.r))
	at := m.cur
	x.add(m, int64(x.r)/x.e, ifB(!keepOut, x.r), x.r+freeIn)
	return at
}

// colInput is a norm and, under sequence parallel, the all-gather of its output before the
// column-parallel Linears (Korthikanti et al. 2022 §4.2.2, g in Fig. 5). keep says whether the
// norm's output is saved for backward (else it is recomputed). Under sequence parallel the
// gathered [b, s, h] input is transient: the forward saves the [b, s/t, h] shard and the backward
// gathers it again (regather). It returns the bytes of the Linears' input and the part of them that the
// last Linear to read it frees (the transient part).
func (x *xf) colInput(m *emitter, keep bool) (in, inT units.Bytes) {
	n := int64(x.r) / x.e
	x.zg(m, x.normParams())
	m.save(ifB(keep, x.r+x.stats))
	x.norm(m, n, ifB(!keep, x.r+x.stats), ifB(!keep, x.stats))
	if !x.sp {
		return x.r, ifB(!keep, x.r)
	}
	m.tpColl(program.OpAllGather, x.bsh, x.bsh, ifB(!keep, x.r))
	return x.bsh, x.bsh
}

// regather is, under sequence parallel, the backward's all-gather of the column-parallel
// Linears' saved [b, s/t, h] input shard, just before the first of their backward ops
// (Korthikanti et al. 2022 §4.2.2: the backward all-gathers the input again for the weight
// gradient). Under full recompute the recomputed forward has gathered it already. It returns the
// bytes of the Linears' input that the last of their backward ops frees, and the saved bytes
// released after it.
func (x *xf) regather(m *emitter, keep bool) (free, drop units.Bytes) {
	switch {
	case !keep && x.sp:
		return x.bsh, 0 // the recomputed gather
	case !keep:
		return x.r, 0 // the recomputed norm output
	case x.sp:
		m.tpColl(program.OpAllGather, x.bsh, x.bsh, 0)
		m.drop(x.r) // the saved shard, read last by the gather
		return x.bsh, 0
	}
	return 0, x.r
}

// blockForward is a transformer layer's forward: norm1, attention, residual add, norm2, MLP,
// residual add. Without recompute it saves Korthikanti et al. 2022's activations (Eq. 1-2);
// under selective recompute all but the attention scores (Eq. 4-5); under full recompute only the
// layer's output (2sbh, Eq. 6), which the layer's last op writes. It returns the transient bytes
// live when that op runs, besides the output.
func (x *xf) blockForward(m *emitter) units.Bytes {
	keep := x.recompute != strategies.RecomputeFull // values saved for backward (else recomputed)
	rows := x.b * x.s
	qkv, core, kv, ff := x.qkvB(), x.coreB(), x.kvB(), x.ffB()

	// Attention (Narayanan et al. 2021 §3.1: qkv column-parallel over heads, so a rank holds a/t
	// query and k/t key/value heads).
	_, inT := x.colInput(m, keep)
	x.zg(m, x.qkvW())
	m.save(ifB(keep, qkv))
	m.linear(rows, x.h, x.qkvOut, x.e, true, ifB(!keep, qkv), inT)
	if x.cp > 1 {
		m.save(ifB(keep, kv))
		m.cpColl(program.OpAllGather, kv, ifB(!keep, kv), 0)
	}
	fa, ma := x.attentionCost()
	m.save(ifB(keep, core) + x.probsB())
	m.attention(fa, ma, ifB(!keep, core)+x.scoresT(), ifB(!keep, qkv+kv)+x.scoresT())
	x.zg(m, x.projW())
	m.linear(rows, x.heads*x.hd, x.h, x.e, true, x.bsh, ifB(!keep, core))
	_ = x.branchEnd(m, keep, keep, 0)

	// MLP.
	_, inT = x.colInput(m, keep)
	ffT, ffS := ifB(!keep, ff), ifB(keep, ff) // an MLP activation: transient or saved
	if x.gated {
		// SwiGLU (Shazeer 2020): down(silu(gate x) * up x).
		x.zg(m, x.upW())
		m.save(ffS)
		m.linear(rows, x.h, x.ffn, x.e, true, ffT, 0)
		x.zg(m, x.upW())
		m.save(ffS)
		m.linear(rows, x.h, x.ffn, x.e, true, ffT, inT)
		m.save(ffS)
		x.ew(m, rows*x.ffn, 1, ffT, ffT)
		m.save(ffS)
		x.ew(m, rows*x.ffn, 2, ffT, 2*ffT)
	} else {
		x.zg(m, x.upW())
		m.save(ffS)
		m.linear(rows, x.h, x.ffn, x.e, true, ffT, inT)
		m.save(ffS)
		x.ew(m, rows*x.ffn, 1, ffT, ffT)
	}
	x.zg(m, x.downW())
	m.linear(rows, x.ffn, x.h, x.e, true, x.bsh, ifB(!keep, ff))
	return x.branchEnd(m, keep, true, ifB(!keep, x.r))
}

// recomputeLayer is full recompute's replay of a layer's forward just before its backward
// (Korthikanti et al. 2022 §5: one extra forward per layer). Its outputs are transient; the ones
// that only fed the forward are freed as in the forward, the others live until the backward op
// that reads them.
func (x *xf) recomputeLayer(m *emitter) {
	m.replay = true
	defer func() { m.replay = false }()
	rows := x.b * x.s
	n := int64(x.r) / x.e
	qkv, core, kv, ff := x.qkvB(), x.coreB(), x.kvB(), x.ffB()
	norm := func() {
		x.zg(m, x.normParams())
		x.norm(m, n, x.r+x.stats, 0)
		if x.sp {
			m.tpColl(program.OpAllGather, x.bsh, x.bsh, x.r)
		}
	}
	end := func() {
		x.rowReduce(m)
		if x.dropout {
			x.dropoutOp(m, x.r+x.mask, x.r)
		}
		x.add(m, n, x.r, x.r)
	}
	norm()
	x.zg(m, x.qkvW())
	m.linear(rows, x.h, x.qkvOut, x.e, true, qkv, 0)
	if x.cp > 1 {
		m.cpColl(program.OpAllGather, kv, kv, 0)
	}
	fa, ma := x.attentionCost()
	m.attention(fa, ma, core+x.scoresT(), 0) // the scores live until the attention's backward
	x.zg(m, x.projW())
	m.linear(rows, x.heads*x.hd, x.h, x.e, true, x.bsh, 0)
	end()
	norm()
	if x.gated {
		x.zg(m, x.upW())
		m.linear(rows, x.h, x.ffn, x.e, true, ff, 0)
		x.zg(m, x.upW())
		m.linear(rows, x.h, x.ffn, x.e, true, ff, 0)
		x.ew(m, rows*x.ffn, 1, ff, 0)
		x.ew(m, rows*x.ffn, 2, ff, 0)
	} else {
		x.zg(m, x.upW())
		m.linear(rows, x.h, x.ffn, x.e, true, ff, 0)
		x.ew(m, rows*x.ffn, 1, ff, 0)
	}
	x.zg(m, x.downW())
	m.linear(rows, x.ffn, x.h, x.e, true, x.bsh, 0)
	end()
	m.live(0, x.r) // the recomputed output is read by nothing
}

// branchGrad is the backward of branchEnd's dropout and of the row-parallel reduction and bias:
// the dropout's input gradient (the output gradient stays live for the residual's join), the bias
// gradient, and under sequence parallel the all-gather of the gradient (the backward of the
// reduce-scatter). It returns the bytes of the gradient the row-parallel Linear's backward frees.
func (x *xf) branchGrad(m *emitter, keep bool) units.Bytes {
	var g units.Bytes
	if x.dropout {
		x.dropoutOp(m, x.r, ifB(!keep, x.mask))
		m.drop(ifB(keep, x.mask))
		g = x.r
	}
	if x.t > 1 && x.bias {
		x.zg(m, x.h)
		n := int64(x.r) / x.e
		m.elementwise(units.FLOPs(n), units.Bytes(2*n*x.e), 0, 0)
		x.zr(m, x.h)
	}
	if x.sp {
		m.tpColl(program.OpAllGather, x.bsh, x.bsh, g)
		return x.bsh
	}
	return g
}

// colGrad is the reduction of the Partial input gradient of the column-parallel Linears:
// all-reduce (f in Shoeybi et al. 2019 Fig. 3), or reduce-scatter under sequence parallel. It
// returns the bytes of the reduced gradient.
func (x *xf) colGrad(m *emitter) units.Bytes {
	switch {
	case x.t == 1:
		return x.bsh
	case x.sp:
		m.tpColl(program.OpReduceScatter, x.bsh, x.r, x.bsh)
		return x.r
	default:
		m.tpColl(program.OpAllReduce, x.bsh, x.bsh, x.bsh)
		return x.bsh
	}
}

// blockBackward is a layer's backward after any recompute. It starts with the gradient of the
// layer's output live and ends with the two parts of its input's gradient live.
func (x *xf) blockBackward(m *emitter) {
	keep := x.recompute != strategies.RecomputeFull
	rows := x.b * x.s
	n := int64(x.r) / x.e
	re := func(b units.Bytes) units.Bytes { return ifB(!keep, b) } // recomputed values read last here
	sv := func(b units.Bytes) units.Bytes { return ifB(keep, b) }  // saved values read last here
	qkv, core, kv, ff := x.qkvB(), x.coreB(), x.kvB(), x.ffB()

	// MLP.
	g := x.branchGrad(m, keep)
	x.zg(m, x.downW())
	m.linear(rows, x.ffn, x.h, x.e, true, ff, g+re(ff))
	m.drop(sv(ff))
	x.zr(m, x.downW())
	if x.gated {
		x.ew(m, rows*x.ffn, 2, 2*ff, ff+re(2*ff))
		m.drop(sv(2 * ff))
		x.ew(m, rows*x.ffn, 1, ff, ff+re(ff))
		m.drop(sv(ff))
		x.zg(m, x.upW())
		free, drop := x.regather(m, keep) // once for up and gate
		m.linear(rows, x.h, x.ffn, x.e, true, x.bsh, ff)
		x.zr(m, x.upW())
		x.zg(m, x.upW())
		m.linear(rows, x.h, x.ffn, x.e, true, x.bsh, ff+free)
		m.drop(drop)
		x.zr(m, x.upW())
		x.add(m, rows*x.h, x.bsh, 2*x.bsh)
	} else {
		x.ew(m, rows*x.ffn, 1, ff, ff+re(ff))
		m.drop(sv(ff))
		x.zg(m, x.upW())
		free, drop := x.regather(m, keep)
		m.linear(rows, x.h, x.ffn, x.e, true, x.bsh, ff+free)
		m.drop(drop)
		x.zr(m, x.upW())
	}
	gn := x.colGrad(m)
	x.zg(m, x.normParams())
	x.norm(m, n, x.r, gn+re(x.r+x.stats))
	m.drop(sv(x.r + x.stats))
	x.zr(m, x.normParams())
	x.join(m)

	// Attention.
	g = x.branchGrad(m, keep)
	x.zg(m, x.projW())
	m.linear(rows, x.heads*x.hd, x.h, x.e, true, core, g+re(core))
	m.drop(sv(core))
	x.zr(m, x.projW())
	// The attention core's backward, plus its forward again under selective recompute
	// (Korthikanti et al. 2022 §4.2: QK^T, softmax, dropout and the product with V are recomputed).
	fa, ma := x.attentionCost()
	fb := 2 * fa
	switch {
	case x.flash:
		fb = fa * 5 / 2 // FlashAttention recomputes the scores: 5 products for 2 (Dao 2023 §4.1)
	case x.recompute == strategies.RecomputeSelective:
		fb += fa
	}
	m.attention(fb, 2*ma, qkv, core+re(qkv+kv)+x.scoresT())
	m.drop(sv(qkv+kv) + x.probsB())
	if x.cp > 1 {
		m.cpColl(program.OpReduceScatter, kv, 0, 0)
	}
	x.zg(m, x.qkvW())
	free, drop := x.regather(m, keep)
	m.linear(rows, x.h, x.qkvOut, x.e, true, x.bsh, qkv+free)
	m.drop(drop)
	x.zr(m, x.qkvW())
	gn = x.colGrad(m)
	x.zg(m, x.normParams())
	x.norm(m, n, x.r, gn+re(x.stats))
	m.drop(x.r + sv(x.stats)) // the layer's input, saved by the layer below, read last here
	x.zr(m, x.normParams())
}

// embedForward is the token embedding (vocabulary-parallel: Shoeybi et al. 2019 §3, its Partial
// output all-reduced, or reduce-scattered over the sequence under sequence parallel), for GPT the
// learned position embedding added to it, and embedding dropout. The result is the first layer's
// input, saved.
func (x *xf) embedForward(m *emitter) {
	last := func(isLast bool, b units.Bytes) units.Bytes { // the first layer's input is saved
		if isLast {
			m.save(b)
			return 0
		}
		return b
	}
	hasPos, hasDrop := x.learned, x.dropout
	x.zg(m, x.vocab*x.h)
	m.save(units.Bytes(x.b * x.s * 4)) // token ids, read by the embedding's backward
	out := x.bsh
	if x.t > 1 {
		m.elementwise(0, x.bsh, x.bsh, 0) // vocabulary-parallel: Partial
		kind := program.OpAllReduce
		if x.sp {
			kind = program.OpReduceScatter
		}
		out = x.r
		m.tpColl(kind, x.bsh, last(!hasPos && !hasDrop, x.r), x.bsh)
	} else {
		m.elementwise(0, x.bsh, last(!hasPos && !hasDrop, x.bsh), 0)
	}
	if hasPos {
		x.zg(m, x.positions*x.h)
		m.elementwise(0, x.bsh, x.bsh, 0)
		pos := x.bsh
		if x.sp {
			m.elementwise(0, x.bsh, x.r, x.bsh) // slice: Replicate -> Shard(seq), no communication
			pos = x.r
		}
		x.add(m, int64(x.r)/x.e, last(!hasDrop, x.r), out+pos)
		out = x.r
	}
	if hasDrop {
		m.save(x.r + x.mask)
		x.dropoutOp(m, 0, out)
	}
}

// embedBackward starts with the two gradients of the first layer's input live.
func (x *xf) embedBackward(m *emitter) {
	x.join(m)
	if x.dropout {
		x.dropoutOp(m, x.r, x.r)
		m.drop(x.mask)
	}
	bsh := x.b * x.s * x.h
	if x.learned {
		if x.sp {
			m.tpColl(program.OpAllGather, x.bsh, x.bsh, 0)
		}
		x.zg(m, x.positions*x.h)
		m.elementwise(units.FLOPs(bsh), x.bsh, 0, ifB(x.sp, x.bsh))
		x.zr(m, x.positions*x.h)
	}
	if x.sp {
		m.tpColl(program.OpAllGather, x.bsh, x.bsh, x.r)
	}
	x.zg(m, x.vocab*x.h)
	m.elementwise(units.FLOPs(bsh), x.bsh, 0, ifB(x.sp, x.bsh)+ifB(!x.sp, x.r))
	m.drop(units.Bytes(x.b * x.s * 4))
	x.zr(m, x.vocab*x.h)
}

// headForward is the final norm, the output head (column-parallel over the vocabulary, tied or
// not) and the cross-entropy loss: vocabulary-parallel when t > 1.
func (x *xf) headForward(m *emitter) {
	rows := x.b * x.s
	n := int64(x.r) / x.e
	x.zg(m, x.normParams())
	m.save(x.r + x.stats) // not in a layer: never recomputed
	x.norm(m, n, 0, 0)
	if x.sp {
		m.tpColl(program.OpAllGather, x.bsh, x.bsh, 0)
	}
	// The logits of this rank's vocabulary: all of it when t = 1, a shard for the
	// vocabulary-parallel loss.
	nl := rows * x.vocab
	logits := units.Bytes(nl * x.e)
	// Without the fp32 loss the backward reads the logits; with it, the log-probabilities (or,
	// vocabulary-parallel, the fp32 copy).
	keep := !x.fp32Loss()
	x.zg(m, x.vocab*x.h)
	m.save(ifB(keep, logits))
	m.linear(rows, x.h, x.vocab, x.e, true, ifB(!keep, logits), ifB(x.sp, x.bsh))
	m.save(units.Bytes(rows * 4)) // targets
	switch {
	case x.t > 1:
		x.vocabParallelLoss(m, keep, logits)
	case keep:
		m.elementwise(units.FLOPs(5*nl), units.Bytes(2*nl*x.e), 4, 4)
	default:
		// The fp32 loss (strategies' loss): an upcast copy during the op, fp32 log-probabilities
		// saved. Writes the loss (4 bytes) and the transient fp32 copy (lp bytes: as large as the
		// log-probabilities); frees both and the logits after.
		lp := units.Bytes(nl * 4)
		m.save(lp)
		m.elementwise(units.FLOPs(5*nl), units.Bytes(nl*(x.e+16)), 4+lp, 4+lp+logits)
	}
}

// vocabParallelLoss is the cross-entropy on the output head's vocabulary shard (strategies'
// vocabParallelLoss), after the head's Linear: per-row statistics of the shard, their all-gather
// over tp, and the combine that writes the loss and the lse. The backward reads the shard (its
// fp32 copy under mixed precision), the targets and the lse.
func (x *xf) vocabParallelLoss(m *emitter, keep bool, logits units.Bytes) {
	rows := x.b * x.s
	nl := rows * x.vocab
	stats := units.Bytes(rows * 3 * 4)
	all := stats * units.Bytes(x.t)
	lse := units.Bytes(rows * 4)
	mem := units.Bytes(8 * nl)
	if !keep {
		m.save(units.Bytes(nl * 4)) // the fp32 copy, read by the backward
		mem = units.Bytes(nl * (x.e + 12))
	}
	m.elementwise(units.FLOPs(5*nl), mem, stats, 0)
	m.tpColl(program.OpAllGather, all, all, stats)
	m.save(lse)
	m.elementwise(units.FLOPs(5*rows*x.t), all+lse, 4, 4+all+ifB(!keep, logits))
}

// fp32Loss reports whether the cross-entropy runs in fp32 on an upcast copy of the logits: under
// mixed precision (PyTorch autocast, Megatron-LM's output.float()).
func (x *xf) fp32Loss() bool { return x.e < 4 }

// headBackward ends with the gradient of the last layer's output live.
func (x *xf) headBackward(m *emitter) {
	rows := x.b * x.s
	n := int64(x.r) / x.e
	nl := rows * x.vocab // local logits: the whole vocabulary when t = 1
	g := units.Bytes(nl * x.e)
	switch {
	case x.t > 1 && x.fp32Loss(): // vocabulary-parallel, from the fp32 copy
		m.elementwise(units.FLOPs(5*nl), units.Bytes(nl*(12+x.e)), g, 0)
		m.drop(units.Bytes(nl*4 + rows*4 + rows*4)) // the copy, the targets, the lse
	case x.t > 1:
		m.elementwise(units.FLOPs(5*nl), units.Bytes(8*nl), g, 0)
		m.drop(g + units.Bytes(rows*4+rows*4)) // the shard, the targets, the lse
	case x.fp32Loss():
		// Beside the gradient, the two fp32 gradient buffers of PyTorch's nll_loss and
		// log_softmax backward, transient (program's loss backward).
		bufs := units.Bytes(2 * nl * 4)
		m.elementwise(units.FLOPs(5*nl), units.Bytes(nl*(20+x.e)), g+bufs, bufs)
		m.drop(units.Bytes(nl*4 + rows*4)) // the log-probabilities and the targets
	default:
		m.elementwise(units.FLOPs(5*nl), units.Bytes(2*nl*x.e), g, 0)
		m.drop(g + units.Bytes(rows*4))
	}
	x.zg(m, x.vocab*x.h)
	free, drop := x.regather(m, true)
	m.linear(rows, x.h, x.vocab, x.e, true, x.bsh, g+free)
	m.drop(drop)
	x.zr(m, x.vocab*x.h)
	gn := x.colGrad(m)
	x.zg(m, x.normParams())
	x.norm(m, n, x.r, gn)
	m.drop(x.r + x.stats) // the last layer's output
	x.zr(m, x.normParams())
}
