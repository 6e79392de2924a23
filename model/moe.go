package model

import "fmt"

// Module kinds of mixture-of-experts and multi-head latent attention layers. tpsim counts their
// parameters (total and active) but does not price them yet: see Model.Lowerable.
const (
	// KindMoE is a mixture-of-experts feed-forward layer: children "router" (Linear Dim ->
	// experts), "experts" (KindExperts) and, where the model has them, "shared" (an MLP every
	// token uses) and "shared_gate" (qwen2_moe's Linear Dim -> 1). Num is the routed experts;
	// Bias is DeepSeek-V3's auxiliary-loss-free score-correction bias, Num parameters that only
	// choose experts (Wang et al. 2024, arXiv:2408.15664; DeepSeek-V3 report sec. 2.1.2).
	KindMoE Kind = "MoE"
	// KindExperts is Num routed experts, each an MLP Dim -> FFN -> Dim (SwiGLU when Gated, with
	// biases when Bias); a token uses TopK of them.
	KindExperts Kind = "Experts"
	// KindLatentAttention is multi-head latent attention (DeepSeek-V2 report, arXiv:2405.04434,
	// sec. 2.1): children "q" (or "q_a", "q_a_norm", "q_b" with a query low-rank), "kv_a",
	// "kv_a_norm", "kv_b" and "proj".
	KindLatentAttention Kind = "LatentAttention"
)

// MoE is the mixture-of-experts part of a Transformer, in the terms of Hugging Face configs.
type MoE struct {
	Experts int `json:"experts"`    // routed experts per MoE layer (num_local_experts, n_routed_experts)
	TopK    int `json:"top_k"`      // routed experts each token uses (num_experts_per_tok)
	FFN     int `json:"expert_ffn"` // width of each routed expert (moe_intermediate_size)
	// SharedFFN is the width of the shared-expert MLP every token also runs (DeepSeek:
	// n_shared_experts x moe_intermediate_size; Qwen2-MoE: shared_expert_intermediate_size);
	// 0 for none. Shared is how many experts it stands for (declared: one fused MLP either way).
	Shared     int  `json:"shared_experts,omitempty"`
	SharedFFN  int  `json:"shared_ffn,omitempty"`
	SharedGate bool `json:"shared_gate,omitempty"` // qwen2_moe's sigmoid gate on the shared expert
	// FirstDense is how many layers at the bottom are dense (DeepSeek-V3's first_k_dense_replace:
	// 3 of 61); Step makes every Step-th layer above them MoE, layer i (from 0) when (i+1) % Step
	// == 0 (Llama 4 Maverick's interleave_moe_layer_step 2; Qwen's decoder_sparse_step); 0 or 1
	// is every layer. Dense layers use the Transformer's FFN.
	FirstDense int  `json:"first_dense,omitempty"`
	Step       int  `json:"step,omitempty"`
	RouterBias bool `json:"router_bias,omitempty"` // the router Linear has a bias (gpt-oss)
	// ScoreBias is DeepSeek-V3's auxiliary-loss-free routing: a per-expert bias added to the
	// router scores to choose experts, not to weight them; no FLOPs worth counting.
	ScoreBias bool `json:"score_bias,omitempty"`
	// CapacityFactor is declared only (0: dropless, as Megatron-Core's default): tokens above
	// CapacityFactor x tokens x TopK / Experts per expert are dropped.
	CapacityFactor float64 `json:"capacity_factor,omitempty"`
}

// IsMoE reports whether layer i (from 0) of a transformer with mixture-of-experts m is a MoE layer.
func (m *MoE) IsMoE(i int) bool {
	return m != nil && i >= m.FirstDense && (i+1)%max(m.Step, 1) == 0
}

// MLA is multi-head latent attention's sizes (DeepSeek-V2/V3 config names).
type MLA struct {
	QLoraRank     int `json:"q_lora_rank"` // 0: queries projected from the hidden state directly (DeepSeek-V2-Lite)
	KVLoraRank    int `json:"kv_lora_rank"`
	QKNopeHeadDim int `json:"qk_nope_head_dim"`
	QKRopeHeadDim int `json:"qk_rope_head_dim"`
	VHeadDim      int `json:"v_head_dim"`
}

// validateMoE checks the mixture-of-experts and latent attention sizes of t.
func (t Transformer) validateMoE() error {
	if m := t.MoE; m != nil {
		for _, f := range []struct {
			k string
			v int
		}{{"moe.experts", m.Experts}, {"moe.top_k", m.TopK}, {"moe.expert_ffn", m.FFN}} {
			if f.v <= 0 || f.v > MaxWidth {
				return fmt.Errorf("model: %s = %d; it must be a positive integer up to %d", f.k, f.v, MaxWidth)
			}
		}
		if m.TopK > m.Experts {
			return fmt.Errorf("model: moe.top_k = %d is more than the %d experts; a token uses at most every expert", m.TopK, m.Experts)
		}
		if m.Shared < 0 || m.SharedFFN < 0 || m.SharedFFN > MaxWidth || (m.Shared > 0) != (m.SharedFFN > 0) {
			return fmt.Errorf("model: moe.shared_experts = %d with moe.shared_ffn = %d; give both (the shared MLP's width) or neither", m.Shared, m.SharedFFN)
		}
		if m.FirstDense < 0 || m.FirstDense > t.Layers || m.Step < 0 || m.Step > t.Layers {
			return fmt.Errorf("model: moe.first_dense = %d, moe.step = %d; both must be in [0, layers = %d]", m.FirstDense, m.Step, t.Layers)
		}
		if !(m.CapacityFactor == 0 || m.CapacityFactor >= 1 && m.CapacityFactor <= 1e6) {
			return fmt.Errorf("model: moe.capacity_factor = %g; it must be 0 (dropless) or at least 1", m.CapacityFactor)
		}
	}
	if a := t.MLA; a != nil {
		if a.QLoraRank < 0 || a.QLoraRank > MaxWidth {
			return fmt.Errorf("model: mla.q_lora_rank = %d; it must be 0 (no query low-rank) or positive", a.QLoraRank)
		}
		for _, v := range []int{a.KVLoraRank, a.QKNopeHeadDim, a.QKRopeHeadDim, a.VHeadDim} {
			if v <= 0 || v > MaxWidth {
				return fmt.Errorf("model: mla %+v: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim must be positive integers up to %d", *a, MaxWidth)
			}
		}
		if t.HeadDim != a.QKNopeHeadDim+a.QKRopeHeadDim || t.KVHeads != t.Heads {
			return fmt.Errorf("model: with mla, head_dim must be qk_nope_head_dim + qk_rope_head_dim = %d and kv_heads = heads = %d", a.QKNopeHeadDim+a.QKRopeHeadDim, t.Heads)
		}
	}
	if t.WindowPattern < 0 || t.WindowPattern == 1 || t.WindowPattern > t.Layers || (t.WindowPattern > 0 && t.Window == 0) {
		return fmt.Errorf("model: window_pattern = %d; use 0 (every layer windowed) or at least 2 with a sliding_window", t.WindowPattern)
	}
	if t.MTP < 0 || t.MTP > MaxLayers || (t.MTP > 0 && t.MoE == nil) {
		return fmt.Errorf("model: mtp_layers = %d; it must be 0, or positive on a mixture-of-experts model (DeepSeek-V3's modules are MoE blocks)", t.MTP)
	}
	return nil
}

// expertParams is the parameters of one expert of x (KindExperts).
func expertParams(x *Module) int64 {
	h, f := int64(x.Dim), int64(x.FFN)
	n := 2 * h * f
	if x.Gated {
		n += h * f
	}
	if x.Bias {
		n += f + h
		if x.Gated {
			n += f
		}
	}
	return n
}

// ActiveParams is the parameters one token uses in m and its descendants: every parameter but
// those of the routed experts it is not sent to (TopK of each KindExperts' Num). The whole
// embedding table counts, as Mistral counts Mixtral's 12.9B; DeepSeek and OpenAI leave the input
// embedding out of their active figures (see ActiveNonEmbedding).
func (m *Module) ActiveParams() int64 {
	if m.Kind == KindExperts {
		return int64(m.TopK) * expertParams(m)
	}
	n := m.OwnParams()
	for _, c := range m.Children {
		n += c.ActiveParams()
	}
	return n
}

// ActiveParams is the parameters one token uses (Module.ActiveParams); Params for a dense model.
func (m *Model) ActiveParams() int64 { return m.Root.ActiveParams() }

// ActiveNonEmbedding is ActiveParams without the input embedding table, the convention of the
// DeepSeek-V3 (36.6B "including 0.9B for the output Head") and gpt-oss (3.61B) active counts.
func (m *Model) ActiveNonEmbedding() int64 {
	n := m.ActiveParams()
	if e := m.Find("embed"); e != nil {
		n -= e.Params()
	}
	return n
}

// MTPParams is the parameters of the multi-token prediction modules (DeepSeek-V3 report sec.
// 2.2: per module an RMSNorm of the hidden state and of the next token's embedding, a projection
// 2h -> h and one transformer block, sharing the embedding and output head with the main model),
// 0 when the model has none. They are not in the module tree: DeepSeek's 671B and transformers'
// DeepseekV3ForCausalLM count the main model only; the checkpoint's 685B adds these (11.6B) and
// copies of the shared embedding and head (2 x 0.93B).
func (m *Model) MTPParams() int64 {
	t := m.Transformer
	if t == nil || t.MTP == 0 || m.Find("layers") == nil || len(m.Find("layers").Children) == 0 {
		return 0
	}
	layers := m.Find("layers").Children
	block := layers[len(layers)-1] // the MTP block is a MoE block (layer 61 of the checkpoint)
	h := int64(t.Hidden)
	return int64(t.MTP) * (block.Params() + 2*h*h + 3*h) // + eh_proj, enorm, hnorm, shared_head.norm
}

// Lowerable reports whether tpsim's Program, cost model, simulator and executor price m
// exactly. They do not yet lower mixture-of-experts or latent attention layers, nor the extra
// norms (q/k norms, Gemma's post-norms) or attention sinks some families add: such models are
// listed and counted (tpsim models) but refused by predict, sim, plan, exec and study rather
// than priced as a dense transformer they are not.
func (m *Model) Lowerable() error {
	t := m.Transformer
	if t == nil {
		return nil
	}
	switch {
	case t.MoE != nil:
		return fmt.Errorf("model: %q: mixture-of-experts layers are not lowered yet (issue 34): tpsim models lists their sizes (total %s, active %s parameters); predict/plan need expert parallel", m.Name, short(m.Params()), short(m.ActiveParams()))
	case t.MLA != nil:
		return fmt.Errorf("model: %q: multi-head latent attention is not lowered yet (issue 34): tpsim models lists its sizes; predict/plan price grouped-query attention only", m.Name)
	case t.QKNorm, t.PostNorms, t.Sinks:
		return fmt.Errorf("model: %q: its q/k norms, post-attention/post-MLP norms or attention sinks are not lowered yet (issue 34): tpsim models lists its sizes; predict/plan price the Llama/GPT block only", m.Name)
	}
	return nil
}

// short writes a parameter count as 46.7B.
func short(n int64) string {
	switch {
	case n >= 1e12:
		return fmt.Sprintf("%.2fT", float64(n)/1e12)
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// MoE reports whether m has mixture-of-experts layers.
func (m *Model) MoE() bool { return m.Transformer != nil && m.Transformer.MoE != nil }
