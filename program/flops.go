package program

import (
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/units"
)

// The FLOP counts of the matrix products, written once: the lowering gives each op its own
// (builder.linear, builder.attention) and ModelFLOPs sums the same products over a whole model.
// A multiply-add counts 2.

// MatmulFLOPs is a matrix product rows x out = (rows x in)(in x out), a Linear's forward or
// any one GEMM: 2 rows in out.
func MatmulFLOPs(rows, in, out float64) units.FLOPs { return units.FLOPs(2 * rows * in * out) }

// attentionFLOPs is attention's two forward products, QK^T and (softmax)V, over the full s x S
// scores of batch sequences and width = heads x head_dim: 2 x 2 batch s S width (Narayanan et
// al. 2021 §5.1 counts them so, and eager kernels compute all of them).
func attentionFLOPs(batch, s, sFull, width int) float64 {
	return 4 * float64(batch) * float64(s) * float64(sFull) * float64(width)
}

// ModelFLOPs is the model FLOPs of one step of m over batch samples of seq tokens (seq 0 for
// models without a sequence): 3x the forward matrix products, each counted as the lowering counts
// it on the whole batch (every Linear MatmulFLOPs, every attention attentionFLOPs with the full
// s x s scores, a tied output head as a Linear of hidden x vocab), once forward and twice
// backward, without recomputation or the causal half a fused kernel skips. For a GPT this is
// Narayanan et al. 2021 Eq. 3 without the recompute pass: 72 B L s h^2 (1 + s/(6h) + V/(12 h L)).
func ModelFLOPs(m *model.Model, batch, seq int) units.FLOPs {
	tokens := float64(batch) * float64(max(seq, 1))
	var fwd units.FLOPs
	for _, n := range m.Root.Walk() {
		x := n.Module
		switch x.Kind {
		case model.KindLinear:
			fwd += MatmulFLOPs(tokens, float64(x.In), float64(x.Out))
		case model.KindAttention:
			fwd += units.FLOPs(attentionFLOPs(batch, seq, seq, x.Heads*x.HeadDim))
		}
	}
	if t := m.Transformer; t != nil && t.Tied {
		fwd += MatmulFLOPs(tokens, float64(t.Hidden), float64(t.Vocab))
	}
	return 3 * fwd
}
