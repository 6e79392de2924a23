package model

import "slices"

// hfFamilies names the family of a model_type where it is not the model_type itself.
var hfFamilies = map[string]string{"kimi_k2": "deepseek_v3", "llama4_text": "llama4", "gemma3_text": "gemma3"}

// newFamily reads the mixture-of-experts, latent-attention and newer dense model_types. Every
// one is RMSNorm, gated MLP (SwiGLU; Gemma's GeGLU has the same shapes), rotary. Fields that set
// the parameter count are required, max_position_embeddings and head_dim included (their config
// classes' defaults differ by version); the model's own config.json always gives them.
func (r *hfReader) newFamily(t *Transformer) error {
	c, mt := r.c, r.mt
	r.sizes(t)
	t.KVHeads = r.opt("num_key_value_heads", c.NumKeyValueHeads, t.Heads)
	t.Seq = min(r.need("max_position_embeddings", c.MaxPositionEmbeddings), HFSeqCap)
	t.Gated, t.RMSNorm = true, true
	gemma := mt == "gemma2" || mt == "gemma3_text"
	t.Tied = flag(c.TieWordEmbeddings, gemma) // Gemma2Config and Gemma3TextConfig tie by default
	switch mt {
	case "phi3", "mixtral":
		t.HeadDim = r.headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		if c.HeadDim != nil {
			t.HeadDim = r.need("head_dim", c.HeadDim)
		}
	case "qwen2_moe":
		t.HeadDim = r.headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		t.QKVBias = true // Qwen2MoeAttention: bias on q, k and v
	case "deepseek_v2", "deepseek_v3", "kimi_k2":
		a := &MLA{KVLoraRank: r.need("kv_lora_rank", c.KVLoraRank), QKNopeHeadDim: r.need("qk_nope_head_dim", c.QKNopeHeadDim),
			QKRopeHeadDim: r.need("qk_rope_head_dim", c.QKRopeHeadDim), VHeadDim: r.need("v_head_dim", c.VHeadDim)}
		a.QLoraRank = r.opt("q_lora_rank", c.QLoraRank, 0) // null: queries projected directly (DeepSeek-V2-Lite)
		t.MLA, t.KVHeads, t.HeadDim = a, t.Heads, a.QKNopeHeadDim+a.QKRopeHeadDim
	default:
		t.HeadDim = r.need("head_dim", c.HeadDim)
	}
	if flag(c.AttentionBias, mt == "gpt_oss") != (mt == "gpt_oss") {
		return r.fail("attention_bias = %v is not supported for model_type %q (its published models have %v)", *c.AttentionBias, mt, mt == "gpt_oss")
	}
	t.QKNorm = mt == "qwen3" || mt == "qwen3_moe" || mt == "gemma3_text"
	t.PostNorms = gemma
	e := &MoE{}
	switch mt {
	case "mixtral", "gpt_oss":
		e.Experts, e.FFN = r.need("num_local_experts", c.NumLocalExperts), t.FFN
		if mt == "gpt_oss" {
			t.Bias, t.Sinks, e.RouterBias = true, true, true // biases on attention, experts and router; sinks
		}
	case "qwen2_moe", "qwen3_moe":
		e.Experts, e.FFN = r.need("num_experts", c.NumExperts), r.need("moe_intermediate_size", c.MoEIntermediateSize)
		e.Step = r.opt("decoder_sparse_step", c.DecoderSparseStep, 1)
		if len(c.MLPOnlyLayers) > 0 {
			return r.fail("mlp_only_layers = %v is not supported: tpsim places dense layers first or every step-th; use a tpsim model file", c.MLPOnlyLayers)
		}
		if mt == "qwen2_moe" {
			e.Shared, e.SharedFFN, e.SharedGate = 1, r.need("shared_expert_intermediate_size", c.SharedIntermediateSize), true
		}
	case "deepseek_v2", "deepseek_v3", "kimi_k2":
		e.Experts, e.FFN = r.need("n_routed_experts", c.NRoutedExperts), r.need("moe_intermediate_size", c.MoEIntermediateSize)
		e.Shared = r.opt("n_shared_experts", c.NSharedExperts, 0)
		e.SharedFFN = e.Shared * e.FFN
		e.FirstDense = r.opt("first_k_dense_replace", c.FirstKDenseReplace, 0)
		if f := r.opt("moe_layer_freq", c.MoELayerFreq, 1); f != 1 {
			return r.fail("moe_layer_freq = %d is not supported (DeepSeek's released models use 1)", f)
		}
		// topk_method "noaux_tc" is DeepSeek-V3's auxiliary-loss-free routing, with a per-expert
		// e_score_correction_bias in the checkpoint; DeepseekV3Config defaults to it, V2 to "greedy".
		method := "greedy"
		if mt != "deepseek_v2" {
			method = "noaux_tc"
		}
		if c.TopkMethod != nil {
			method = *c.TopkMethod
		}
		e.ScoreBias = method == "noaux_tc"
		if c.NumNextnPredictLayers != nil {
			t.MTP = *c.NumNextnPredictLayers
		}
	case "llama4_text":
		e.Experts, e.FFN = r.need("num_local_experts", c.NumLocalExperts), t.FFN
		e.Shared, e.SharedFFN = 1, t.FFN // Llama4TextMoe: one shared expert of intermediate_size
		e.Step = r.opt("interleave_moe_layer_step", c.InterleaveMoELayerStep, 1)
		t.FFN = r.need("intermediate_size_mlp", c.IntermediateSizeMLP) // the dense layers' MLP
	default:
		e = nil
	}
	if e != nil {
		e.TopK = r.need("num_experts_per_tok", c.NumExpertsPerTok)
		t.MoE = e
	}
	return nil
}

// windowPattern returns the Transformer.WindowPattern of a model whose layers alternate windowed
// and full attention: from layer_types (every P-th layer "full_attention", the others
// "sliding_attention"), else sliding_window_pattern (Gemma 3), else def.
func (r *hfReader) windowPattern(layers, def int) (int, error) {
	c := r.c
	if len(c.LayerTypes) == 0 {
		if c.SlidingWindowPattern != nil {
			return r.need("sliding_window_pattern", c.SlidingWindowPattern), r.bad
		}
		return def, nil
	}
	if len(c.LayerTypes) != layers {
		return 0, r.fail("layer_types has %d entries for %d layers", len(c.LayerTypes), layers)
	}
	p := slices.Index(c.LayerTypes, "full_attention") + 1
	for i, lt := range c.LayerTypes {
		want := "sliding_attention"
		if p > 0 && (i+1)%p == 0 {
			want = "full_attention"
		}
		if p < 2 || lt != want {
			return 0, r.fail("layer_types %v is not a repeating pattern of sliding_attention layers each group ended by one full_attention layer; tpsim models only that alternation", c.LayerTypes)
		}
	}
	return p, nil
}

// hfWindowDefault is the sliding_window a config class takes when the field is missing, 0 for
// none: MistralConfig and Qwen2Config 4096 (hfDefaultWindow), Gemma2Config and Gemma3TextConfig
// 4096, GptOssConfig 128; MixtralConfig and Phi3Config none.
func hfWindowDefault(mt string) int {
	switch mt {
	case "mistral", "qwen2", "gemma2", "gemma3_text":
		return hfDefaultWindow
	case "gpt_oss":
		return 128
	}
	return 0
}

// alternating is the window pattern a model_type defaults to: Gemma 2 and gpt-oss alternate
// (even layers windowed), Gemma 3 windows five layers of six (Gemma 3 report, sec. 2); 0 for a
// model that windows every layer or none.
var alternating = map[string]int{"gemma2": 2, "gemma3_text": 6, "gpt_oss": 2}
