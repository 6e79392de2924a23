package kernels

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

// AttnDims are the dimensions of a causal self-attention core on one rank. Under tensor
// parallelism they are the local ones: Heads/t query heads and KVHeads/t key/value heads.
//
// Tensors are token-major with heads contiguous in the columns: q and o are
// [Batch*Seq, Heads*HeadDim], k and v are [Batch*Seq, KVHeads*HeadDim]; row b*Seq+s is token s of
// sequence b, and columns h*HeadDim .. (h+1)*HeadDim-1 are head h. Query head h attends with
// key/value head h/(Heads/KVHeads) (grouped-query attention, Ainslie et al. 2023; KVHeads = Heads
// is multi-head attention, KVHeads = 1 multi-query attention).
type AttnDims struct {
	Batch, Seq, Heads, KVHeads, HeadDim int
}

// QLen is the length of q, o, dq and do: Batch*Seq*Heads*HeadDim.
func (d AttnDims) QLen() int { return d.Batch * d.Seq * d.Heads * d.HeadDim }

// KVLen is the length of each of k, v, dk and dv: Batch*Seq*KVHeads*HeadDim.
func (d AttnDims) KVLen() int { return d.Batch * d.Seq * d.KVHeads * d.HeadDim }

// QKVLen is the length of the fused qkv tensor: Batch*Seq*(Heads+2*KVHeads)*HeadDim.
func (d AttnDims) QKVLen() int { return d.Batch * d.Seq * (d.Heads + 2*d.KVHeads) * d.HeadDim }

// ProbsLen is the length of the saved probabilities [Batch, Heads, Seq, Seq].
func (d AttnDims) ProbsLen() int { return d.Batch * d.Heads * d.Seq * d.Seq }

// ScratchLen is the length of the scratch AttentionBackward and AttentionForwardLSE need: Seq*Seq.
func (d AttnDims) ScratchLen() int { return d.Seq * d.Seq }

// LSELen is the length of the log-sum-exp [Batch, Heads, Seq] AttentionForwardLSE saves.
func (d AttnDims) LSELen() int { return d.Batch * d.Heads * d.Seq }

// FlashScratchLen is the length of the scratch AttentionBackwardLSE needs: 2*Seq*Seq, one head's
// recomputed probabilities and their gradient.
func (d AttnDims) FlashScratchLen() int { return 2 * d.Seq * d.Seq }

func (d AttnDims) check(fn string) {
	if d.Batch < 0 || d.Seq < 0 || d.Heads < 0 || d.KVHeads < 0 || d.HeadDim < 0 {
		panicf("%s: negative dimension in %+v", fn, d)
	}
	if d.Heads > 0 && (d.KVHeads == 0 || d.Heads%d.KVHeads != 0) {
		panicf("%s: KVHeads = %d does not divide Heads = %d", fn, d.KVHeads, d.Heads)
	}
}

// empty reports whether there is nothing to compute.
func (d AttnDims) empty() bool {
	return d.Batch == 0 || d.Seq == 0 || d.Heads == 0
}

// headMat is the [Seq, HeadDim] matrix of one head of one sequence inside a token-major tensor
// with `heads` heads per row.
func headMat(t []float32, d AttnDims, b, h, heads int) blas32.General {
	ld := heads * d.HeadDim
	return blas32.General{Rows: d.Seq, Cols: d.HeadDim, Stride: ld, Data: t[b*d.Seq*ld+h*d.HeadDim:]}
}

// probsMat is the [Seq, Seq] block of probs (or of a scratch when b = h = 0) for sequence b, head h.
func probsMat(p []float32, d AttnDims, b, h int) blas32.General {
	off := (b*d.Heads + h) * d.Seq * d.Seq
	return blas32.General{Rows: d.Seq, Cols: d.Seq, Stride: d.Seq, Data: p[off : off+d.Seq*d.Seq]}
}

// AttentionForward computes causal scaled dot-product attention (Vaswani et al. 2017, "Attention Is
// All You Need", eq. 1) for every sequence b and query head h, with g = h/(Heads/KVHeads):
//
//	P = softmax(mask(Q_h K_gᵀ / sqrt(HeadDim)))   (row i attends to keys j <= i)
//	O_h = P V_g
//
// q is [Batch*Seq, Heads*HeadDim], k and v are [Batch*Seq, KVHeads*HeadDim]; o (overwritten) is
// [Batch*Seq, Heads*HeadDim]. probs [Batch, Heads, Seq, Seq] receives P, zero above the diagonal,
// and is what AttentionBackward needs besides q, k and v. o must not alias q, k or v.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func AttentionForward(o, probs, q, k, v []float32, d AttnDims) {
	d.checkInputs("AttentionForward", q, k, v)
	checkLen("AttentionForward", "o", o, d.QLen())
	checkLen("AttentionForward", "probs", probs, d.ProbsLen())
	if d.empty() {
		return
	}
	if d.HeadDim == 0 {
		clear(o)
		causalUniform(probs, d)
		return
	}
	group, scale := d.Heads/d.KVHeads, d.scale()
	for b := range d.Batch {
		for h := range d.Heads {
			attnForwardHead(o, nil, q, k, v, probsMat(probs, d, b, h), d, b, h, h/group, scale)
		}
	}
}

// checkInputs checks the dimensions and the q, k, v lengths of an attention kernel named fn.
func (d AttnDims) checkInputs(fn string, q, k, v []float32) {
	d.check(fn)
	checkLen(fn, "q", q, d.QLen())
	checkLen(fn, "k", k, d.KVLen())
	checkLen(fn, "v", v, d.KVLen())
}

// checkGrads checks the lengths of a backward attention kernel's output gradient and results.
func (d AttnDims) checkGrads(fn string, do, dq, dk, dv []float32) {
	checkLen(fn, "do", do, d.QLen())
	checkLen(fn, "dq", dq, d.QLen())
	checkLen(fn, "dk", dk, d.KVLen())
	checkLen(fn, "dv", dv, d.KVLen())
}

// scale is the scores' factor 1/sqrt(HeadDim).
func (d AttnDims) scale() float32 { return float32(1 / math.Sqrt(float64(d.HeadDim))) }

// headScores writes the scaled scores Q_h K_gᵀ / sqrt(HeadDim) of sequence b, query head h
// (key/value head g) into p [Seq, Seq], above the diagonal included.
func headScores(p blas32.General, q, k []float32, d AttnDims, b, h, g int, scale float32) {
	gemmGeneral(false, true, scale, headMat(q, d, b, h, d.Heads), headMat(k, d, b, g, d.KVHeads), 0, p)
}

// attnForwardHead computes sequence b, query head h (key/value head g): the causal softmax of the
// scores into p [Seq, Seq] (zero above the diagonal) and O_h = P V_g. With lse not nil it also
// writes each row's log-sum-exp of the scores there ([Seq]).
func attnForwardHead(o, lse, q, k, v []float32, p blas32.General, d AttnDims, b, h, g int, scale float32) {
	S := d.Seq
	headScores(p, q, k, d, b, h, g, scale)
	negInf := float32(math.Inf(-1))
	for i := range S {
		// The columns past the diagonal up to causalWidth get scores of -Inf: their exponential
		// is exp32's smallest, 2^-126, which a sum of at least 1 (the maximum's) does not hold,
		// and they are cleared after.
		row := p.Data[i*S : (i+1)*S]
		w := causalWidth(i, S)
		for j := i + 1; j < w; j++ {
			row[j] = negInf
		}
		mx, sum := softmaxRow(row[:w], row[:w])
		if lse != nil {
			lse[i] = float32(float64(mx) + math.Log(sum))
		}
		clear(row[i+1:])
	}
	gemmGeneral(false, false, 1, p, headMat(v, d, b, g, d.KVHeads), 0, headMat(o, d, b, h, d.Heads))
}

// causalWidth is how many columns of causal row i (of a Seq of S) the softmax and its gradient
// take: the i+1 on and below the diagonal, rounded up to whole 8-float vectors within the row
// where the rows are a vector or longer, so that none but the last rows of an S not a multiple of
// 8 takes the scalar tail of the vector kernels.
func causalWidth(i, S int) int {
	if S < 8 {
		return i + 1
	}
	return min(S, (i+1+7)&^7)
}

// causalUniform fills probs with the causal softmax of all-zero scores (HeadDim = 0).
func causalUniform(probs []float32, d AttnDims) {
	S := d.Seq
	for blk := range d.Batch * d.Heads {
		p := probs[blk*S*S : (blk+1)*S*S]
		for i := range S {
			row := p[i*S : (i+1)*S]
			for j := range row {
				if j <= i {
					row[j] = 1 / float32(i+1)
				} else {
					row[j] = 0
				}
			}
		}
	}
}

// AttentionBackward computes the gradients of AttentionForward from do [Batch*Seq, Heads*HeadDim],
// the forward inputs q, k, v and the saved probs. With dS = P ⊙ (dP − rowsum(P ⊙ dP)) the softmax
// backward of dP = dO_h V_gᵀ:
//
//	dQ_h = dS K_g / sqrt(HeadDim)
//	dK_g = Σ_{h in group g} dSᵀ Q_h / sqrt(HeadDim)
//	dV_g = Σ_{h in group g} Pᵀ dO_h
//
// dq, dk and dv are overwritten (each key/value head sums over the query heads of its group).
// scratch must hold Seq*Seq floats (d.ScratchLen()); its contents are clobbered. probs must be
// AttentionForward's, 0 above the diagonal. No output may alias an input.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func AttentionBackward(dq, dk, dv, scratch, do, q, k, v, probs []float32, d AttnDims) {
	d.checkInputs("AttentionBackward", q, k, v)
	d.checkGrads("AttentionBackward", do, dq, dk, dv)
	checkLen("AttentionBackward", "probs", probs, d.ProbsLen())
	if len(scratch) < d.ScratchLen() {
		panicf("AttentionBackward: len(scratch) = %d, want at least Seq*Seq = %d", len(scratch), d.ScratchLen())
	}
	clear(dk)
	clear(dv)
	if d.empty() || d.HeadDim == 0 {
		clear(dq)
		return
	}
	group, scale := d.Heads/d.KVHeads, d.scale()
	S := d.Seq
	ds := blas32.General{Rows: S, Cols: S, Stride: S, Data: scratch[:S*S]}
	for b := range d.Batch {
		for h := range d.Heads {
			attnBackwardHead(dq, dk, dv, do, q, k, v, probsMat(probs, d, b, h), ds, d, b, h, h/group, scale)
		}
	}
}

// attnBackwardHead adds the gradients of sequence b, query head h (key/value head g) given its
// probabilities p [Seq, Seq]: it writes dQ_h and adds to dK_g and dV_g. ds [Seq, Seq] is clobbered.
func attnBackwardHead(dq, dk, dv, do, q, k, v []float32, p, ds blas32.General, d AttnDims, b, h, g int, scale float32) {
	S := d.Seq
	dOh := headMat(do, d, b, h, d.Heads)
	vg := headMat(v, d, b, g, d.KVHeads)
	kg := headMat(k, d, b, g, d.KVHeads)
	qh := headMat(q, d, b, h, d.Heads)
	// dV_g += Pᵀ dO_h
	gemmGeneral(true, false, 1, p, dOh, 1, headMat(dv, d, b, g, d.KVHeads))
	// dP = dO_h V_gᵀ, then dS = P ⊙ (dP − rowsum(P ⊙ dP)) in place.
	gemmGeneral(false, true, 1, dOh, vg, 0, ds)
	for i := range S {
		// Over causalWidth columns: past the diagonal P is 0 (AttentionForward's) and dP is
		// cleared first, so those columns add nothing to the row's sum and give 0.
		w := causalWidth(i, S)
		dr := ds.Data[i*S : (i+1)*S]
		clear(dr[i+1:])
		softmaxGradRow(dr[:w], dr[:w], p.Data[i*S:i*S+w])
	}
	// dQ_h = scale · dS K_g
	gemmGeneral(false, false, scale, ds, kg, 0, headMat(dq, d, b, h, d.Heads))
	// dK_g += scale · dSᵀ Q_h
	gemmGeneral(true, false, scale, ds, qh, 1, headMat(dk, d, b, g, d.KVHeads))
}

// AttentionForwardLSE is AttentionForward keeping, instead of the probabilities, the softmax's
// log-sum-exp per query row: what attn=flash/flash1 save (FlashAttention, Dao 2023 §3.1; this kernel
// computes one head's full score matrix at a time, not FlashAttention's tiles, and gives the same
// o as AttentionForward). For sequence b, head h and row i,
//
//	lse[(b*Heads+h)*Seq+i] = log Σ_{j<=i} exp(Q_h[i] · K_g[j] / sqrt(HeadDim))
//
// so that P[i][j] = exp(score[i][j] − lse[i]) for j <= i. o (overwritten) is [Batch*Seq,
// Heads*HeadDim] and lse (overwritten) [Batch, Heads, Seq] (d.LSELen()). scratch must hold
// Seq*Seq floats (d.ScratchLen()); its contents are clobbered. o must not alias q, k or v.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func AttentionForwardLSE(o, lse, scratch, q, k, v []float32, d AttnDims) {
	d.checkInputs("AttentionForwardLSE", q, k, v)
	checkLen("AttentionForwardLSE", "o", o, d.QLen())
	checkLen("AttentionForwardLSE", "lse", lse, d.LSELen())
	if len(scratch) < d.ScratchLen() {
		panicf("AttentionForwardLSE: len(scratch) = %d, want at least Seq*Seq = %d", len(scratch), d.ScratchLen())
	}
	if d.empty() {
		return
	}
	S := d.Seq
	if d.HeadDim == 0 {
		// All scores are zero: row i averages i+1 keys of nothing.
		clear(o)
		for blk := range d.Batch * d.Heads {
			for i := range S {
				lse[blk*S+i] = float32(math.Log(float64(i + 1)))
			}
		}
		return
	}
	group, scale := d.Heads/d.KVHeads, d.scale()
	p := blas32.General{Rows: S, Cols: S, Stride: S, Data: scratch[:S*S]}
	for b := range d.Batch {
		for h := range d.Heads {
			attnForwardHead(o, lse[(b*d.Heads+h)*S:(b*d.Heads+h+1)*S], q, k, v, p, d, b, h, h/group, scale)
		}
	}
}

// AttentionBackwardLSE computes the gradients of AttentionForwardLSE from do, the forward inputs
// q, k, v and the saved lse [Batch, Heads, Seq]: for each sequence and head it recomputes the
// probabilities P = exp(Q_h K_gᵀ / sqrt(HeadDim) − lse) under the causal mask, then follows
// AttentionBackward. lse must be AttentionForwardLSE's, at least every score of its row (each
// probability at most 1: expSumMax). dq, dk and dv are overwritten. scratch must hold 2*Seq*Seq
// floats (d.FlashScratchLen()); its contents are clobbered. No output may alias an input.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func AttentionBackwardLSE(dq, dk, dv, scratch, do, q, k, v, lse []float32, d AttnDims) {
	d.checkInputs("AttentionBackwardLSE", q, k, v)
	d.checkGrads("AttentionBackwardLSE", do, dq, dk, dv)
	checkLen("AttentionBackwardLSE", "lse", lse, d.LSELen())
	if len(scratch) < d.FlashScratchLen() {
		panicf("AttentionBackwardLSE: len(scratch) = %d, want at least 2*Seq*Seq = %d", len(scratch), d.FlashScratchLen())
	}
	clear(dk)
	clear(dv)
	if d.empty() || d.HeadDim == 0 {
		clear(dq)
		return
	}
	group, scale := d.Heads/d.KVHeads, d.scale()
	S := d.Seq
	p := blas32.General{Rows: S, Cols: S, Stride: S, Data: scratch[:S*S]}
	ds := blas32.General{Rows: S, Cols: S, Stride: S, Data: scratch[S*S : 2*S*S]}
	for b := range d.Batch {
		for h := range d.Heads {
			g := h / group
			headScores(p, q, k, d, b, h, g, scale) // the forward's product, so the forward's scores
			l := lse[(b*d.Heads+h)*S : (b*d.Heads+h+1)*S]
			for i := range S {
				// The probabilities exp(s_ij - lse_i), each at most 1 (lse_i is at least the row's
				// largest score): expSumMax's kernels, its sum unused.
				row := p.Data[i*S : (i+1)*S]
				expSumMax(row[:i+1], row[:i+1], l[i])
				clear(row[i+1:])
			}
			attnBackwardHead(dq, dk, dv, do, q, k, v, p, ds, d, b, h, g, scale)
		}
	}
}

// SplitQKV copies the fused qkv projection output [Batch*Seq, (Heads+2*KVHeads)*HeadDim] into
// q [Batch*Seq, Heads*HeadDim], k and v [Batch*Seq, KVHeads*HeadDim]. The fused columns are laid
// out per key/value group (package model): for each group g of the KVHeads groups, its
// Heads/KVHeads query heads (query heads g*(Heads/KVHeads) + j), then key head g, then value
// head g, each HeadDim columns.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func SplitQKV(q, k, v, qkv []float32, d AttnDims) {
	d.check("SplitQKV")
	checkLen("SplitQKV", "qkv", qkv, d.QKVLen())
	checkLen("SplitQKV", "q", q, d.QLen())
	checkLen("SplitQKV", "k", k, d.KVLen())
	checkLen("SplitQKV", "v", v, d.KVLen())
	qkvPermute(q, k, v, qkv, d, false)
}

// MergeQKV is the inverse of SplitQKV, used for gradients: it writes dq, dk and dv into the fused
// layout dqkv [Batch*Seq, (Heads+2*KVHeads)*HeadDim] (overwritten), ready for the backward of the
// qkv Linear.
//
// It panics if a dimension is negative, KVHeads does not divide Heads, or a length does not match.
func MergeQKV(dqkv, dq, dk, dv []float32, d AttnDims) {
	d.check("MergeQKV")
	checkLen("MergeQKV", "dqkv", dqkv, d.QKVLen())
	checkLen("MergeQKV", "dq", dq, d.QLen())
	checkLen("MergeQKV", "dk", dk, d.KVLen())
	checkLen("MergeQKV", "dv", dv, d.KVLen())
	qkvPermute(dq, dk, dv, dqkv, d, true)
}

// qkvPermute copies fused -> (q, k, v), or back if merge.
func qkvPermute(q, k, v, fused []float32, d AttnDims, merge bool) {
	if d.Heads == 0 || d.HeadDim == 0 {
		return
	}
	D := d.HeadDim
	group := d.Heads / d.KVHeads
	wf, wq, wkv := (d.Heads+2*d.KVHeads)*D, d.Heads*D, d.KVHeads*D
	mv := func(dst, src []float32) {
		if merge {
			copy(src, dst)
		} else {
			copy(dst, src)
		}
	}
	for r := range d.Batch * d.Seq {
		f := fused[r*wf : (r+1)*wf]
		qr, kr, vr := q[r*wq:(r+1)*wq], k[r*wkv:(r+1)*wkv], v[r*wkv:(r+1)*wkv]
		c := 0
		for g := range d.KVHeads {
			for j := range group {
				h := g*group + j
				mv(qr[h*D:(h+1)*D], f[c:c+D])
				c += D
			}
			mv(kr[g*D:(g+1)*D], f[c:c+D])
			c += D
			mv(vr[g*D:(g+1)*D], f[c:c+D])
			c += D
		}
	}
}
