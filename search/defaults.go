package search

import (
	"fmt"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// DefaultStack returns fix with the software knobs the user left unset taken from what today's
// common stack on hw runs, and one line per knob so taken ("assumed: ..."), for the plan to
// print. Knobs the user fixed are kept, and nothing is assumed for them.
//
// attn: the planner defaulted to eager attention, so a Llama 3 70B plan on H100 showed 46.7 s a
// step and 34% MFU against 36.4 s with attn=flash, which no one training on an H100 leaves out.
// FlashAttention-2 (attn=flash) is what a transformer runs on a GPU whose preset cites its
// efficiency (efficiency.flash_attention_fraction): PyTorch's scaled_dot_product_attention picks
// its FlashAttention-2 backend by default for fp16/bf16 on sm80+ GPUs since PyTorch 2.2 (release
// notes, January 2024), and Megatron-Core and NeMo run Transformer Engine's fused attention by
// default. fp32 keeps eager attention (the flash backend takes fp16/bf16 only), and so does
// hardware without a FlashAttention-2 efficiency, the host profile among them: exec runs the
// attention core as separate kernels on the CPU.
func DefaultStack(m *model.Model, hw *hardware.Hardware, fix strategies.Fix) (strategies.Fix, []string) {
	if fix.Has("attn") || m.Transformer == nil {
		return fix, nil
	}
	st := fix.Strategy
	if st.Precision == "" {
		st = strategies.Default(strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 1})
	}
	var line string
	switch {
	case st.Precision == strategies.PrecisionFP32:
		st.Attention = strategies.AttentionEager
		line = "assumed: attn=eager (precision=fp32: FlashAttention-2, the default of PyTorch's SDPA on GPUs, takes fp16/bf16 only; --fix attn=... to change)"
	case hw.Efficiency.FlashMax > 0:
		st.Attention = strategies.AttentionFlash
		line = fmt.Sprintf("assumed: attn=flash (FlashAttention-2: PyTorch's SDPA picks it by default for bf16/fp16 on %s since PyTorch 2.2, January 2024, and Megatron-Core/NeMo run Transformer Engine's fused attention; --fix attn=eager to change)", hw.Name)
	default:
		st.Attention = strategies.AttentionEager
		line = fmt.Sprintf("assumed: attn=eager (%s gives no FlashAttention-2 efficiency, efficiency.flash_attention_fraction; the host runs attention as separate kernels, as exec does; --fix attn=... to change)", hw.Name)
	}
	out := strategies.Fix{Strategy: st, Keys: fix.Keys}
	return out, []string{line}
}
