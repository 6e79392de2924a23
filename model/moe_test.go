package model

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hand counts of the mixture-of-experts presets, from the config.json values in testdata (each
// cited there). Each is written out from the sizes, not from the code's output.
const (
	// Mixtral 8x7B (h 4096, 32 layers, 32 query heads and 8 key/value heads of 128, 8 SwiGLU
	// experts of 14336, top-2, vocabulary 32000, untied head, no biases), by hand:
	//   attention  4096*(4096 + 2*1024) [q, k, v] + 4096*4096 [o]        =    41,943,040
	//   one expert 3*4096*14336 [gate, up, down]                            =   176,160,768
	//   router     4096*8, the two RMSNorms 2*4096                          =        40,960
	//   layer      41,943,040 + 8*176,160,768 + 40,960                      = 1,451,270,144
	//   total      32*1,451,270,144 + 2*32000*4096 [embed, head] + 4096     = 46,702,792,704
	//   active     32*(41,943,040 + 2*176,160,768 + 40,960) + 262,148,096   = 12,879,925,248
	mixtral8x7bTotal  = 32*(4096*(4096+2*1024)+4096*4096+8*3*4096*14336+4096*8+2*4096) + 2*32000*4096 + 4096
	mixtral8x7bActive = 32*(4096*(4096+2*1024)+4096*4096+2*3*4096*14336+4096*8+2*4096) + 2*32000*4096 + 4096

	// Mixtral 8x22B: h 6144, 56 layers, 48 heads and 8 key/value heads of 128, 8 experts of 16384, top-2, vocabulary 32768.
	mixtral8x22bTotal  = 56*(6144*(6144+2*1024)+6144*6144+8*3*6144*16384+6144*8+2*6144) + 2*32768*6144 + 6144
	mixtral8x22bActive = 56*(6144*(6144+2*1024)+6144*6144+2*3*6144*16384+6144*8+2*6144) + 2*32768*6144 + 6144

	// DeepSeek-V3 MLA, 128 heads: q_a 7168x1536, its norm, q_b 1536 -> 128*(128+64), kv_a 7168 -> 512+64,
	// its norm 512, kv_b 512 -> 128*(128+128), o 128*128 -> 7168.
	dsv3MLA   = 7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256 + 128*128*7168
	dsv3Dense = dsv3MLA + 3*7168*18432 + 2*7168
	// 256 routed experts of 2048 and one shared, the router 7168 -> 256 and its 256 score-correction biases.
	dsv3MoE       = dsv3MLA + 256*3*7168*2048 + 3*7168*2048 + 7168*256 + 256 + 2*7168
	dsv3MoEActive = dsv3MLA + 8*3*7168*2048 + 3*7168*2048 + 7168*256 + 256 + 2*7168
	dsv3Total     = 3*dsv3Dense + 58*dsv3MoE + 2*129280*7168 + 7168
	dsv3Active    = 3*dsv3Dense + 58*dsv3MoEActive + 2*129280*7168 + 7168
	// One MTP module: a MoE block, eh_proj 2*7168 -> 7168 and three RMSNorms (enorm, hnorm, shared_head.norm).
	dsv3MTP = dsv3MoE + 2*7168*7168 + 3*7168

	// Kimi K2: DeepSeek-V3's shapes with 64 heads, 384 experts, 1 dense layer, vocabulary 163840.
	kimiMLA    = 7168*1536 + 1536 + 1536*64*192 + 7168*576 + 512 + 512*64*256 + 64*128*7168
	kimiTotal  = kimiMLA + 3*7168*18432 + 2*7168 + 60*(kimiMLA+384*3*7168*2048+3*7168*2048+7168*384+384+2*7168) + 2*163840*7168 + 7168
	kimiActive = kimiMLA + 3*7168*18432 + 2*7168 + 60*(kimiMLA+8*3*7168*2048+3*7168*2048+7168*384+384+2*7168) + 2*163840*7168 + 7168

	// Qwen3 MoE: q/k RMSNorms of head_dim 128 (2*128) in every layer; no shared expert.
	qwen30Attn   = 2048*(32*128+2*4*128) + 32*128*2048 + 2*128
	qwen30Total  = 48*(qwen30Attn+128*3*2048*768+2048*128+2*2048) + 2*151936*2048 + 2048
	qwen30Active = 48*(qwen30Attn+8*3*2048*768+2048*128+2*2048) + 2*151936*2048 + 2048
	qwen235Attn  = 4096*(64*128+2*4*128) + 64*128*4096 + 2*128
	qwen235Total = 94*(qwen235Attn+128*3*4096*1536+4096*128+2*4096) + 2*151936*4096 + 4096
	qwen235Activ = 94*(qwen235Attn+8*3*4096*1536+4096*128+2*4096) + 2*151936*4096 + 4096

	// Llama 4: 40 heads and 8 key/value heads of 128 (L2 q/k norm, no parameters); a MoE layer has E
	// experts of 8192, one shared expert of 8192 and a router 5120 -> E; a dense layer an MLP of 16384.
	l4Attn          = 5120*(40*128+2*8*128) + 40*128*5120
	l4Dense         = l4Attn + 3*5120*16384 + 2*5120
	l4Emb           = 2*202048*5120 + 5120
	scoutTotal      = 48*(l4Attn+16*3*5120*8192+3*5120*8192+5120*16+2*5120) + l4Emb
	scoutActive     = 48*(l4Attn+1*3*5120*8192+3*5120*8192+5120*16+2*5120) + l4Emb
	maverickTotal   = 24*l4Dense + 24*(l4Attn+128*3*5120*8192+3*5120*8192+5120*128+2*5120) + l4Emb
	maverickActive  = 24*l4Dense + 24*(l4Attn+1*3*5120*8192+3*5120*8192+5120*128+2*5120) + l4Emb
	gptOSSAttn      = 2880*(64*64+2*8*64) + (64*64 + 2*8*64) + 64*64*2880 + 2880 + 64 // biases on q, k, v, o; 64 sinks
	gptOSSExpert    = 3*2880*2880 + 2*2880 + 2880                                     // gate/up and down with biases
	gptOSS20Total   = 24*(gptOSSAttn+32*gptOSSExpert+2880*32+32+2*2880) + 2*201088*2880 + 2880
	gptOSS20Active  = 24*(gptOSSAttn+4*gptOSSExpert+2880*32+32+2*2880) + 2*201088*2880 + 2880
	gptOSS120Total  = 36*(gptOSSAttn+128*gptOSSExpert+2880*128+128+2*2880) + 2*201088*2880 + 2880
	gptOSS120Active = 36*(gptOSSAttn+4*gptOSSExpert+2880*128+128+2*2880) + 2*201088*2880 + 2880
)

// TestMoEPresetCounts checks every mixture-of-experts preset's total and active parameters against
// the hand counts above, and those against the published, rounded figures.
func TestMoEPresetCounts(t *testing.T) {
	tests := []struct {
		name          string
		total, active int64
		// Published figures and how far a correct count may sit from them: half the last
		// printed digit unless said otherwise. nonEmb: the publisher leaves the input embedding
		// out of the active count (DeepSeek's README_WEIGHTS.md, OpenAI's model card Table 1).
		pubTotal, totalTol, pubActive, activeTol float64
		nonEmb                                   bool
	}{
		// Jiang et al. 2024 (arXiv:2401.04088): 46.7B, 12.9B active.
		{"mixtral-8x7b", mixtral8x7bTotal, mixtral8x7bActive, 46.7e9, 0.05e9, 12.9e9, 0.05e9, false},
		// mistral.ai/news/mixtral-8x22b: 141B, 39B active.
		{"mixtral-8x22b", mixtral8x22bTotal, mixtral8x22bActive, 141e9, 0.5e9, 39e9, 0.5e9, false},
		// DeepSeek-V3 report: 671B; README_WEIGHTS.md: 36.6B active including the 0.9B head.
		{"deepseek-v3", dsv3Total, dsv3Active, 671e9, 0.5e9, 36.6e9, 0.05e9, true},
		// Kimi K2 card: 1T total ("1.04T" is not what its config gives: 1.026T), 32B activated.
		{"kimi-k2", kimiTotal, kimiActive, 1e12, 0.05e12, 32e9, 0.5e9, true},
		// Qwen3 report Table 2 / model cards: 30.5B and 3.3B (Qwen truncates: 3.35B counts as
		// 3.3B, so 0.06B), 235B and 22B.
		{"qwen3-30b-a3b", qwen30Total, qwen30Active, 30.5e9, 0.05e9, 3.3e9, 0.06e9, false},
		{"qwen3-235b-a22b", qwen235Total, qwen235Activ, 235e9, 0.5e9, 22e9, 0.5e9, false},
		// Llama 4 cards: 109B and 400B count the vision encoder (about 0.9B), which the text model
		// leaves out, so 1.5B; 17B active.
		{"llama4-scout", scoutTotal, scoutActive, 109e9, 1.5e9, 17e9, 0.5e9, false},
		{"llama4-maverick", maverickTotal, maverickActive, 400e9, 1.5e9, 17e9, 0.5e9, false},
		// gpt-oss model card Table 1: 20.91B and 3.61B, 116.83B and 5.13B.
		{"gpt-oss-20b", gptOSS20Total, gptOSS20Active, 20.91e9, 0.005e9, 3.61e9, 0.005e9, true},
		{"gpt-oss-120b", gptOSS120Total, gptOSS120Active, 116.83e9, 0.005e9, 5.13e9, 0.005e9, true},
	}
	for _, tt := range tests {
		m, err := Preset(tt.name)
		if err != nil {
			t.Fatalf("Preset(%q): %v", tt.name, err)
		}
		if got := m.Params(); got != tt.total {
			t.Errorf("%s: Params() = %d; want %d", tt.name, got, tt.total)
		}
		if got := m.ActiveParams(); got != tt.active {
			t.Errorf("%s: ActiveParams() = %d; want %d", tt.name, got, tt.active)
		}
		if d := math.Abs(float64(tt.total) - tt.pubTotal); d > tt.totalTol {
			t.Errorf("%s: total %d is %.3g from the published %.5g", tt.name, tt.total, d, tt.pubTotal)
		}
		active := m.ActiveParams()
		if tt.nonEmb {
			active = m.ActiveNonEmbedding()
		}
		if d := math.Abs(float64(active) - tt.pubActive); d > tt.activeTol {
			t.Errorf("%s: active %d is %.3g from the published %.5g", tt.name, active, d, tt.pubActive)
		}
		if m.Info().Active != tt.active || m.Lowerable() == nil {
			t.Errorf("%s: Info().Active = %d, Lowerable() = %v; want %d and a refusal", tt.name, m.Info().Active, m.Lowerable(), tt.active)
		}
	}

	// DeepSeek-V3's MTP module, counted apart: README_WEIGHTS.md says 11.5B unique parameters;
	// the MoE block alone is 11.507B and eh_proj with the norms add 0.103B. The Hugging Face
	// checkpoint (685B, "671B main model + 14B MTP" in its README) holds the main model, the
	// module and copies of the embedding and head: 684.5B here, within 1B (the page's count also
	// takes in the FP8 block scales, about 0.04B, and the README rounds 13.46B up to 14B).
	m, _ := Preset("deepseek-v3")
	if got := m.MTPParams(); got != dsv3MTP || m.Info().MTP != dsv3MTP {
		t.Errorf("deepseek-v3 MTPParams() = %d; want %d", got, dsv3MTP)
	}
	if d := math.Abs(float64(dsv3MoE) - 11.5e9); d > 0.05e9 {
		t.Errorf("deepseek-v3 MTP block %d is not README_WEIGHTS.md's 11.5B", int64(dsv3MoE))
	}
	if ckpt := float64(dsv3Total + dsv3MTP + 2*129280*7168); math.Abs(ckpt-685e9) > 1e9 {
		t.Errorf("deepseek-v3 checkpoint %g is not the 685B of its Hugging Face page", ckpt)
	}
	// The first three layers are dense (first_k_dense_replace 3), the others MoE.
	if m.Find("layers.2.mlp") == nil || m.Find("layers.3.moe") == nil || m.Find("layers.3.moe.shared") == nil {
		t.Errorf("deepseek-v3: layers 0-2 must be dense and 3 on MoE with a shared expert")
	}
	// Maverick alternates: layer 0 dense, layer 1 MoE (interleave_moe_layer_step 2, (i+1) % 2 == 0).
	mv, _ := Preset("llama4-maverick")
	if mv.Find("layers.0.mlp") == nil || mv.Find("layers.1.moe") == nil || mv.Find("layers.47.moe") == nil || mv.Find("layers.46.mlp") == nil {
		t.Errorf("llama4-maverick: even layers must be dense and odd layers MoE")
	}
}

// TestHFFamilies loads one config.json of every supported family and checks its total count
// (by hand, or published), its family, and whether tpsim prices it.
func TestHFFamilies(t *testing.T) {
	tests := []struct {
		file    string
		family  string
		total   int64
		lowered bool // priced as a dense transformer
		seq     int
		note    string
	}{
		{"mixtral-8x7b.json", "mixtral", mixtral8x7bTotal, false, HFSeqCap, ""},
		{"mixtral-8x22b.json", "mixtral", mixtral8x22bTotal, false, HFSeqCap, ""},
		{"deepseek-v3.json", "deepseek_v3", dsv3Total, false, HFSeqCap, ""},
		{"kimi-k2.json", "deepseek_v3", kimiTotal, false, HFSeqCap, ""},
		{"qwen3-30b-a3b.json", "qwen3_moe", qwen30Total, false, HFSeqCap, ""},
		{"qwen3-235b-a22b.json", "qwen3_moe", qwen235Total, false, HFSeqCap, ""},
		{"llama4-scout.json", "llama4", scoutTotal, false, HFSeqCap, ""},
		{"llama4-maverick.json", "llama4", maverickTotal, false, HFSeqCap, ""},
		{"gpt-oss-20b.json", "gpt_oss", gptOSS20Total, false, 128, "window of 128"},
		{"gpt-oss-120b.json", "gpt_oss", gptOSS120Total, false, 128, "every 2 layers"},
		// DeepSeek-V2-Lite (no query low-rank: q 2048 -> 16*192): 15.7B (its model card). 1 dense
		// layer of 10944, 26 MoE layers of 64 experts of 1408 and 2 shared, no score bias.
		{"deepseek-v2-lite.json", "deepseek_v2",
			(2048*16*192+2048*576+512+512*16*256+16*128*2048)*27 + 3*2048*10944 + 26*(64*3*2048*1408+2*3*2048*1408+2048*64) + 27*2*2048 + 2*102400*2048 + 2048,
			false, HFSeqCap, ""},
		// Qwen1.5-MoE-A2.7B: 14.3B total, 2.7B activated (model card); q, k, v biases, a shared
		// expert of 5632 with its gate Linear(2048, 1).
		{"qwen1.5-moe-a2.7b.json", "qwen2_moe",
			24*(2048*3*2048+3*2048+2048*2048+60*3*2048*1408+3*2048*5632+2048+2048*60+2*2048) + 2*151936*2048 + 2048, false, HFSeqCap, ""},
		// Qwen3-0.6B (tied): 28 x (q 1024*2048, k and v 1024*1024 each, o 2048*1024, q/k norms 2*128,
		// MLP 3*1024*3072, norms 2*1024) + 151936*1024 + 1024; the card's 0.44B non-embedding.
		{"qwen3-0.6b.json", "qwen3", 28*(1024*2048+2*1024*1024+2048*1024+256+3*1024*3072+2*1024) + 151936*1024 + 1024, false, HFSeqCap, ""},
		// Gemma 2 2B (tied, four norms a block): the Gemma 2 report's Table 2 gives 2,024,517,888
		// non-embedding parameters, which this is plus the 256000*2304 embedding.
		{"gemma-2-2b.json", "gemma2", 2_024_517_888 + 256000*2304, false, 4096, "every 2 layers"},
		// Gemma 3 1B: 26 x (q 1152*1024, k, v 1152*256 each, o 1024*1152, q/k norms 2*256, MLP
		// 3*1152*6912, four norms 4*1152) + 262144*1152 + 1152; the report's 1B (Table 1: 302M
		// embedding, 698M non-embedding). Windowed five layers of six at 512.
		{"gemma-3-1b.json", "gemma3", 26*(1152*1024+2*1152*256+1024*1152+512+3*1152*6912+4*1152) + 262144*1152 + 1152, false, 512, "every 6 layers"},
		// Phi-3-mini: 3.8B (Abdin et al. 2024, arXiv:2404.14219): 32 x (4*3072^2 + 3*3072*8192 +
		// 2*3072) + 2*32064*3072 + 3072; a Llama block, priced, within its 2047-token window.
		{"phi-3-mini-4k.json", "phi3", 32*(4*3072*3072+3*3072*8192+2*3072) + 2*32064*3072 + 3072, true, 2047, "window of 2047"},
	}
	for _, tt := range tests {
		data, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		m, err := FromHFConfig(data, tt.file)
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got := m.Params(); got != tt.total {
			t.Errorf("%s: Params() = %d; want %d", tt.file, got, tt.total)
		}
		if m.Family != tt.family || m.Seq != tt.seq || (m.Lowerable() == nil) != tt.lowered || m.Validate() != nil {
			t.Errorf("%s: family %q seq %d lowerable %v validate %v; want %q, %d, lowered %v", tt.file, m.Family, m.Seq, m.Lowerable(), m.Validate(), tt.family, tt.seq, tt.lowered)
		}
		if !strings.Contains(m.Source, tt.note) {
			t.Errorf("%s: Source %q does not say %q", tt.file, m.Source, tt.note)
		}
		if name := strings.TrimSuffix(tt.file, ".json"); m.MoE() {
			// The preset of the same name is this config (the presets' seq and batch may differ).
			if p, err := Preset(name); err == nil {
				pt, ht := *p.Transformer, *m.Transformer
				pt.Seq, pt.Batch, ht.Seq, ht.Batch = 0, 0, 0, 0
				if pt.MoE == nil || *pt.MoE != *ht.MoE || (pt.MLA != nil) != (ht.MLA != nil) || pt.MLA != nil && *pt.MLA != *ht.MLA {
					t.Errorf("%s: the preset's MoE/MLA differ from the config's", name)
				}
				pt.MoE, pt.MLA, ht.MoE, ht.MLA = nil, nil, nil, nil
				if pt != ht {
					t.Errorf("%s: preset %+v;\nconfig %+v", name, pt, ht)
				}
			}
		}
	}

	// Gemma 3's multimodal config.json holds the language model in text_config.
	data, _ := os.ReadFile("testdata/gemma-3-1b.json")
	wrapped := `{"model_type": "gemma3", "vision_config": {"hidden_size": 1152}, "text_config": ` + string(data) + `}`
	m, err := FromHFConfig([]byte(wrapped), "gemma3")
	if err != nil || m.Params() != 999_885_952 || m.Family != "gemma3" {
		t.Errorf("gemma3 with text_config: %v, %v", m, err)
	}
}

func TestMoEConfigErrors(t *testing.T) {
	const mixtral = `"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512`
	tests := []struct{ json, want string }{
		{"{" + mixtral + `, "num_experts_per_tok": 2}`, `model_type "mixtral" needs "num_local_experts"`},
		{"{" + mixtral + `, "num_local_experts": 2, "num_experts_per_tok": 3}`, "moe.top_k = 3 is more than the 2 experts"},
		{`{"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16, "intermediate_size": 128,
		   "vocab_size": 100, "max_position_embeddings": 512, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "mlp_only_layers": [0]}`,
			"mlp_only_layers = [0] is not supported"},
		{`{"model_type": "gpt_oss", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16, "intermediate_size": 128,
		   "vocab_size": 100, "max_position_embeddings": 512, "num_local_experts": 4, "num_experts_per_tok": 2, "attention_bias": true,
		   "sliding_window": 128, "layer_types": ["full_attention", "sliding_attention"]}`, "is not a repeating pattern"},
		{`{"model_type": "deepseek_v3", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
		   "vocab_size": 100, "max_position_embeddings": 512, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}`,
			`needs "kv_lora_rank"`},
		{`{"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
		   "vocab_size": 100, "max_position_embeddings": 512}`, `needs "head_dim"`},
	}
	// tpsim model files with MoE and MLA sections.
	const base = `{"transformer": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4, "head_dim": 16, "ffn": 128, "vocab": 100, "seq": 32, "gated": true, "rms_norm": true, "batch": 1, `
	for _, tt := range []struct{ json, want string }{
		{base + `"moe": {"experts": 4, "top_k": 2, "expert_ffn": 32, "capacity_factor": 0.5}}}`, "moe.capacity_factor = 0.5"},
		{base + `"moe": {"experts": 4, "top_k": 2, "expert_ffn": 32, "shared_experts": 1}}}`, "give both"},
		{base + `"moe": {"experts": 4, "top_k": 2}}}`, "moe.expert_ffn = 0"},
		{base + `"mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8}}}`, "head_dim must be qk_nope_head_dim + qk_rope_head_dim = 12"},
		{base + `"mtp_layers": 1}}`, "mtp_layers = 1"},
		{base + `"sliding_window": 32, "window_pattern": 1}}`, "window_pattern = 1"},
	} {
		tests = append(tests, tt)
	}
	for _, tt := range tests {
		_, err := FromHFConfig([]byte(tt.json), "c.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromHFConfig(%s) = %v; want an error containing %q", tt.json, err, tt.want)
		}
	}
}
