package costmodel

import "github.com/tpsim/tpsim/strategies"

// KorthikantiActivationBytes is the activation memory of one transformer layer in bytes, as
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
// Eq. 1-6 and Table 2; validate/data/formulas.json) give it for 16-bit activations and
// 1-byte dropout masks: s sequence length, b microbatch, h hidden size, a attention heads,
// t tensor-parallel size, sp sequence parallelism, recompute none, selective or full:
//
//	none, no parallelism          sbh (34 + 5as/h)
//	none, tensor parallel         sbh (10 + 24/t + 5as/(ht))
//	none, tensor + sequence       sbh/t (34 + 5as/h)
//	selective, tensor parallel    sbh (10 + 24/t)
//	selective, tensor + sequence  sbh 34/t
//	full                          2sbh
//
// Per layer the 34 sbh are the attention block's 11 sbh (qkv input 2, Q and K 4, V 2, output
// projection input 2, dropout mask 1), the MLP's 19 sbh (input 2, GeLU input 8 and output 8,
// dropout mask 1) and the two layer norms' inputs 4 sbh; the 5as^2b are the softmax output
// (2as^2b), its dropout mask (as^2b) and dropout output (2as^2b). With t = 1 every row is the
// no-parallelism one. It is a reference for tests, not what Predict or Estimate compute (they
// follow the Program's values).
func KorthikantiActivationBytes(s, b, h, a, t int, sp bool, recompute strategies.Recompute) float64 {
	sbh := float64(s) * float64(b) * float64(h)
	tt := float64(t)
	attn := 5 * float64(a) * float64(s) / float64(h) // 5as/h
	switch recompute {
	case strategies.RecomputeFull:
		return 2 * sbh // Eq. 6: only each layer's input
	case strategies.RecomputeSelective:
		if sp {
			return sbh * 34 / tt // Eq. 5
		}
		return sbh * (10 + 24/tt) // Eq. 4
	}
	if sp {
		return sbh / tt * (34 + attn) // Eq. 3
	}
	return sbh * (10 + 24/tt + attn/tt) // Eq. 2 (Eq. 1 at t = 1)
}
