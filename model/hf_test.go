package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFromHFConfigPublished(t *testing.T) {
	tests := []struct {
		file   string
		params int64
		family string
		t      Transformer
	}{
		// The total of meta-llama/Llama-2-7b-hf's safetensors (and the llama2-7b preset).
		{"llama-2-7b.json", 6_738_415_616, "llama", Transformer{Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 128,
			FFN: 11008, Vocab: 32000, Seq: 4096, Gated: true, RMSNorm: true}},
		// The total of mistralai/Mistral-7B-v0.1's safetensors. By hand: 32 x (4096*6144 + 4096^2 +
		// 3*4096*14336 + 2*4096) + 2*32000*4096 + 4096. Seq 32768 capped at its sliding_window
		// 4096 (Jiang et al. 2023, Table 1: window_size 4096), within which full causal attention,
		// what tpsim prices, is what the model computes.
		{"mistral-7b-v0.1.json", 7_241_732_096, "mistral", Transformer{Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128,
			FFN: 14336, Vocab: 32000, Seq: 4096, Window: 4096, Gated: true, RMSNorm: true}},
		// The total of Qwen/Qwen2-0.5B's safetensors (tied). By hand: 24 x (896*1152+1152 + 896^2 +
		// 3*896*4864 + 2*896) + 151936*896 + 896.
		{"qwen2-0.5b.json", 494_032_768, "qwen2", Transformer{Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64,
			FFN: 4864, Vocab: 151936, Seq: HFSeqCap, Gated: true, RMSNorm: true, QKVBias: true, Tied: true}},
		// openai-community/gpt2 as Hugging Face counts GPT2LMHeadModel (head tied to wte). By hand:
		// 50257*768 + 1024*768 + 12 x 7,087,872 + 2*768.
		{"gpt2.json", 124_439_808, "gpt", Transformer{Hidden: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64,
			FFN: 3072, Vocab: 50257, Seq: 1024, Bias: true, Learned: true, Tied: true}},
		// Biderman et al. 2023 (Pythia) Table 1 and EleutherAI/pythia-160m: 162,322,944 total, of which
		// 85,056,000 non-embedding (checked below).
		{"pythia-160m.json", 162_322_944, "gpt_neox", Transformer{Hidden: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64,
			FFN: 3072, Vocab: 50304, Seq: 2048, Bias: true}},
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
		if got := m.Params(); got != tt.params {
			t.Errorf("%s: Params() = %d; want %d", tt.file, got, tt.params)
		}
		tt.t.Batch = HFBatchTokens / tt.t.Seq // the default batch: 4M tokens
		if *m.Transformer != tt.t {
			t.Errorf("%s: Transformer %+v;\nwant %+v", tt.file, *m.Transformer, tt.t)
		}
		if m.Family != tt.family || m.Name != tt.file || m.Batch != tt.t.Batch || m.Validate() != nil {
			t.Errorf("%s: family %q name %q batch %d validate %v", tt.file, m.Family, m.Name, m.Batch, m.Validate())
		}
		if !strings.Contains(m.Source, tt.file) {
			t.Errorf("%s: Source %q does not say where it came from", tt.file, m.Source)
		}
	}

	// Pythia's non-embedding count (Biderman et al. 2023 Table 1).
	m, err := Load("testdata/pythia-160m.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Params() - m.Find("embed").Params() - m.Find("head").Params(); got != 85_056_000 {
		t.Errorf("pythia-160m non-embedding params = %d; want 85,056,000", got)
	}

	// The Llama-2-7b config and the llama2-7b preset are the same model.
	p, _ := Preset("llama2-7b")
	hf, _ := Load("testdata/llama-2-7b.json")
	pt, ht := *p.Transformer, *hf.Transformer
	pt.Batch, ht.Batch = 0, 0 // the preset's batch is the paper's, the config's the default
	if pt != ht {
		t.Errorf("llama2-7b preset %+v; the Hugging Face config gives %+v", pt, ht)
	}
}

// TestFromHFConfigDefaults checks the Hugging Face config-class defaults that apply when a field is
// absent.
func TestFromHFConfigDefaults(t *testing.T) {
	tests := []struct {
		json string
		want Transformer
	}{
		// LlamaConfig: num_key_value_heads = num_attention_heads, head_dim = hidden/heads,
		// max_position_embeddings 2048, no biases, untied.
		{`{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
		   "intermediate_size": 128, "vocab_size": 100}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 128, Vocab: 100, Seq: 2048, Gated: true, RMSNorm: true}},
		// An explicit head_dim that is not hidden/heads (as Mistral-Nemo), and nulls that mean "default".
		// MistralConfig's sliding_window defaults to 4096 when the field is missing, capping Seq.
		{`{"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		   "head_dim": 32, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": null, "tie_word_embeddings": true}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128, Vocab: 100, Seq: 4096, Window: 4096, Gated: true, RMSNorm: true, Tied: true}},
		// sliding_window null (Mistral 7B v0.2 and later): no window, Seq capped at HFSeqCap.
		{`{"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		   "intermediate_size": 128, "vocab_size": 100, "sliding_window": null}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 100, Seq: HFSeqCap, Gated: true, RMSNorm: true}},
		// Llama with attention_bias and mlp_bias both true: biases everywhere.
		{`{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
		   "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512, "attention_bias": true, "mlp_bias": true}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 128, Vocab: 100, Seq: 512, Gated: true, RMSNorm: true, Bias: true}},
		// GPT2Config: n_inner null = 4 n_embd, tied; n_ctx stands in for a missing n_positions.
		{`{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_ctx": 128, "n_inner": null, "vocab_size": 100}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 100, Seq: 128, Bias: true, Learned: true, Tied: true}},
		{`{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 64, "n_inner": 100, "vocab_size": 100, "tie_word_embeddings": false}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 100, Vocab: 100, Seq: 64, Bias: true, Learned: true}},
		// GPTNeoXConfig: max_position_embeddings 2048, untied.
		{`{"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
		   "intermediate_size": 256, "vocab_size": 100, "use_parallel_residual": false}`,
			Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 100, Seq: 2048, Bias: true}},
	}
	for i, tt := range tests {
		m, err := FromHFConfig([]byte(tt.json), "x")
		if err != nil {
			t.Errorf("%d: %v", i, err)
			continue
		}
		tt.want.Batch = HFBatchTokens / tt.want.Seq // the default batch: 4M tokens
		if *m.Transformer != tt.want {
			t.Errorf("%d: %+v;\nwant %+v", i, *m.Transformer, tt.want)
		}
	}
}

func TestFromHFConfigErrors(t *testing.T) {
	const llama = `"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100`
	tests := []struct {
		json string
		want string // the whole error
	}{
		{``, `model: c.json:1:1: unexpected end of JSON input`},
		{"{\n  \"model_type\": \"llama\",\n", `model: c.json:3:1: unexpected end of JSON input`},
		{"{\n  \"hidden_size\": 4096,\n  \"model_type\" \"llama\"\n}", `model: c.json:3:16: invalid character '"' after object key`},
		{"{\"é\": 1,, }", `model: c.json:1:9: invalid character ',' looking for beginning of object key string`},
		{`{"model_type": "llama"} x`, `model: c.json:1:25: invalid character 'x' after top-level value`},
		{`[1, 2]`, `model: c.json:1:1: the top level is a JSON array; a config is a JSON object`},
		{`null`, `model: c.json: the top level is null; a config is a JSON object`},
		{`{"model_type": 7}`, `model: c.json:1:16: model_type is a JSON number; it must be a string`},
		{`{"model_type": null}`, `model: c.json: model_type is null; set it to one of deepseek_v2, deepseek_v3, gemma2, gemma3, gemma3_text, gpt2, gpt_neox, gpt_oss, kimi_k2, llama, llama4, mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3, qwen3_moe`},
		{"{" + llama + `, "hidden_size": "64"}`, `model: c.json:1:135: hidden_size is a JSON string; it must be an integer`},
		{"{" + llama + `, "hidden_size": 64.5}`, `model: c.json:1:135: hidden_size is a JSON number 64.5; it must be an integer`},
		{"{" + llama + `, "hidden_size": 64, "tie_word_embeddings": "no"}`, `model: c.json:1:162: tie_word_embeddings is a JSON string; it must be a boolean (true or false)`},
		{`{"model_type": "bert", "hidden_size": 768}`, `model: c.json: model_type "bert" is not supported; supported: deepseek_v2, deepseek_v3, gemma2, gemma3, gemma3_text, gpt2, gpt_neox, gpt_oss, kimi_k2, llama, llama4, mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3, qwen3_moe (or write a tpsim model file with "transformer")`},
		{`{"hidden_size": 768}`, `model: c.json: no "model_type" (as in a Hugging Face config.json; supported: deepseek_v2, deepseek_v3, gemma2, gemma3, gemma3_text, gpt2, gpt_neox, gpt_oss, kimi_k2, llama, llama4, mistral, mixtral, phi3, qwen2, qwen2_moe, qwen3, qwen3_moe) and no "transformer" or "mlp" (as in a tpsim model file)`},
		{"{" + llama + `}`, `model: c.json: model_type "llama" needs "hidden_size"; it is missing or null`},
		{"{" + llama + `, "hidden_size": null}`, `model: c.json: model_type "llama" needs "hidden_size"; it is missing or null`},
		{`{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100}`, `model: c.json: model_type "gpt2" needs "n_positions"; it is missing or null`},
		{`{"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}`, `model: c.json: model_type "gpt_neox" needs "intermediate_size"; it is missing or null`},
		{"{" + llama + `, "hidden_size": 0}`, `model: c.json: hidden_size = 0; it must be a positive integer`},
		{"{" + llama + `, "hidden_size": -64}`, `model: c.json: hidden_size = -64; it must be a positive integer`},
		{"{" + llama + `, "hidden_size": 64, "num_key_value_heads": -1}`, `model: c.json: num_key_value_heads = -1; it must be a positive integer`},
		{"{" + llama + `, "hidden_size": 64, "max_position_embeddings": 0}`, `model: c.json: max_position_embeddings = 0; it must be a positive integer`},
		{"{" + llama + `, "hidden_size": 64, "num_key_value_heads": 3}`, `model: c.json: 4 attention heads are not a multiple of 3 key/value heads; set kv_heads to a divisor of heads`},
		{"{" + llama + `, "hidden_size": 66}`, `model: c.json: hidden_size 66 is not a multiple of num_attention_heads 4; a config like this needs "head_dim"`},
		{"{" + llama + `, "hidden_size": 64, "attention_bias": true}`, `model: c.json: attention_bias = true with mlp_bias = false is not supported: tpsim's Transformer has biases on every Linear layer or on none (or on q, k and v only, as qwen2)`},
		{`{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 64, "vocab_size": 0}`, `model: c.json: vocab_size = 0; it must be a positive integer`},
		{"{" + strings.Replace(llama, `"num_hidden_layers": 2`, `"num_hidden_layers": 20000`, 1) + `, "hidden_size": 64}`, `model: c.json: layers = 20000 is more than 10000; check the configuration`},
		{"{" + strings.Replace(llama, `"vocab_size": 100`, `"vocab_size": 99999999999`, 1) + `, "hidden_size": 64}`, `model: c.json: vocab = 99999999999 is more than 16777216; check the configuration`},
		// A key given twice (this table once gave vocab_size twice by mistake, and the last won).
		{"{" + llama + `, "hidden_size": 64, "vocab_size": 200}`, `model: c.json:1:150: vocab_size is given twice; keep one (a JSON decoder would silently take the last)`},
		// tpsim model files.
		{`{"transformer": {"hiden": 64}}`, `model: c.json: unknown field "hiden" in a tpsim model file; the fields are name, family, source, published, transformer {hidden, layers, heads, kv_heads, head_dim, ffn, vocab, seq, gated, rms_norm, bias, qkv_bias, learned, tied, batch, dropout, sliding_window, window_pattern, qk_norm, post_norms, attention_sinks, moe {...}, mla {...}, mtp_layers} and mlp {activation, dims, batch}`},
		{`{"transformer": {"hidden": 64, "layers": 0, "heads": 4, "kv_heads": 4, "head_dim": 16, "ffn": 256, "vocab": 100, "seq": 32}}`, `model: c.json: layers = 0; it must be a positive integer`},
		{`{"transformer": [1]}`, `model: c.json:1:17: transformer is a JSON array; it must be a JSON object`},
		{`{"mlp": {"dims": [10, 0], "batch": 1}}`, `model: c.json: MLP width 1 is 0; widths must be positive`},
		{`{"mlp": {"dims": [10, 5], "batch": 1, "activation": "Tanh"}}`, `model: c.json: "c.json" mlp activation "Tanh" is not supported; use "ReLU" or "GELU"`},
		{`{"mlp": {"dims": [10, 5], "batch": 1}, "transformer": {}}`, `model: c.json: "c.json" has both "transformer" and "mlp"; keep one`},
		{`{"mlp": {"dims": [10, 5], "batch": 1}, "published": -3}`, `model: c.json: "c.json" published = -3; it must be a parameter count, or 0 when none is published`},
	}
	for _, tt := range tests {
		_, err := FromHFConfig([]byte(tt.json), "c.json")
		if err == nil {
			t.Errorf("FromHFConfig(%s): no error; want %q", tt.json, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("FromHFConfig(%s):\n got %q\nwant %q", tt.json, err, tt.want)
		}
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\nçd\n\nx")
	tests := []struct {
		off       int64
		line, col int
	}{
		{-5, 1, 1}, {0, 1, 1}, {1, 1, 2}, {3, 2, 1},
		{5, 2, 2}, // ç is two bytes and one column
		{7, 3, 1}, {8, 4, 1}, {9, 4, 2}, {100, 4, 2},
	}
	for _, tt := range tests {
		if l, c := position(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("position(%d) = %d:%d; want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func TestValueStart(t *testing.T) {
	tests := []struct {
		data string
		end  int64 // offset of the value's last byte
		want int64
	}{
		{`{"a": "xyz"}`, 10, 6},
		{`{"a": "x\"y"}`, 11, 6},  // an escaped quote inside the string
		{`{"a": "x\\\\"}`, 12, 6}, // escaped backslashes before the closing quote
		{`{"a": -1.5e3}`, 11, 6},
		{`{"a": true}`, 9, 6},
		{`{"a": [1]}`, 6, 6}, // arrays are reported at their bracket
		{`{"a": 1}`, -1, -1},
		{`{"a": 1}`, 99, 99},
	}
	for _, tt := range tests {
		if got := valueStart([]byte(tt.data), tt.end); got != tt.want {
			t.Errorf("valueStart(%s, %d) = %d; want %d", tt.data, tt.end, got, tt.want)
		}
	}
}

// TestSpecRoundTrip writes every preset in tpsim's JSON form and reads it back.
func TestSpecRoundTrip(t *testing.T) {
	for _, name := range PresetNames() {
		m, _ := Preset(name)
		s, err := m.Spec()
		if err != nil {
			t.Errorf("%s: Spec(): %v", name, err)
			continue
		}
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromHFConfig(data, "")
		if err != nil {
			t.Errorf("%s: reading back %s: %v", name, data, err)
			continue
		}
		if back.Name != m.Name || back.Family != m.Family || back.Source != m.Source || back.Published != m.Published ||
			back.Batch != m.Batch || back.Seq != m.Seq || back.InDim != m.InDim || back.Loss != m.Loss || back.Params() != m.Params() ||
			!reflect.DeepEqual(back.Root, m.Root) {
			t.Errorf("%s: round trip through %s changed the model", name, data)
		}
	}
	// A name argument wins over the file's.
	if m, err := FromHFConfig([]byte(`{"name": "a", "mlp": {"dims": [2, 3], "batch": 1}}`), "b"); err != nil || m.Name != "b" {
		t.Errorf("FromHFConfig(..., \"b\") = %v, %v; want a model called b", m, err)
	}
	// A tree built by hand has no JSON form.
	hand := &Model{Name: "hand", Root: &Module{Kind: KindSequential, Children: []*Module{{Name: "x", Kind: KindLinear, In: 1, Out: 1}}}, Batch: 1, Loss: KindMSE}
	if _, err := hand.Spec(); err == nil {
		t.Error("Spec() of a hand-built tree: no error")
	}
}

func FuzzFromHFConfig(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2]) // truncated
	}
	for _, s := range []string{
		``, `{`, `}`, `null`, `[]`, `"x"`, `{"model_type": "llama"}`, `{"model_type": 1}`,
		`{"model_type": "gpt2", "n_embd": -1, "n_layer": 1, "n_head": 1, "n_positions": 1, "vocab_size": 1}`,
		`{"model_type": "llama", "hidden_size": 1e400}`,
		`{"model_type": "mistral", "hidden_size": 16777216, "num_hidden_layers": 10000, "num_attention_heads": 1, "intermediate_size": 16777216, "vocab_size": 16777216}`,
		`{"transformer": {"hidden": 1, "layers": 1, "heads": 1, "kv_heads": 1, "head_dim": 1, "ffn": 1, "vocab": 1, "seq": 1}}`,
		`{"mlp": {"dims": [1, 16777216, 16777216], "batch": 1}}`,
		`{"mlp": {"dims": [], "batch": -1, "activation": "ReLU"}}`,
		"{\"model_type\": \"qwen2\",\n\"hidden_size\": 8,,}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := FromHFConfig(data, "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "model: fuzz.json") {
				t.Errorf("error %q does not start with \"model: fuzz.json\"", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Errorf("FromHFConfig accepted a model that Validate rejects: %v", err)
		}
		if m.Params() <= 0 || m.Name == "" {
			t.Errorf("model %q with %d params", m.Name, m.Params())
		}
	})
}

// The issue: a config.json got global batch 1, so `predict --strategy dp=2,tp=4` failed on
// divisibility and plan planned at batch 1. The default is 4M tokens (Llama 2's global batch):
// 512 sequences at Llama 3's 8192, 4096 at GPT-2's 1024; the Source says where it came from.
func TestFromHFConfigDefaultBatch(t *testing.T) {
	for _, tt := range []struct {
		json      string
		seq, want int
	}{
		{`{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 131072}`, 8192, 512},
		{`{"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 1024, "vocab_size": 100}`, 1024, 4096},
	} {
		m, err := FromHFConfig([]byte(tt.json), "config.json")
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != tt.seq || m.Batch != tt.want || m.Batch*m.Seq != HFBatchTokens {
			t.Errorf("seq %d batch %d, want seq %d batch %d (4M tokens)", m.Seq, m.Batch, tt.seq, tt.want)
		}
		if !strings.Contains(m.Source, fmt.Sprintf("global batch is %d sequences", tt.want)) || !strings.Contains(m.Source, "gbs=") {
			t.Errorf("Source %q does not say where the batch came from", m.Source)
		}
	}
}

// The issue: a Hugging Face config's sliding_window was silently ignored. tpsim prices full
// causal attention; windowed attention computes the same while the sequence fits in the window,
// so a model with a window gets Seq capped at it (and Validate refuses a longer one), a window
// transformers would not apply is noted in the Source, and one on a model_type without windowed
// attention is refused.
func TestFromHFConfigSlidingWindow(t *testing.T) {
	const qwen = `"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 32768`
	for _, c := range []struct {
		json           string
		seq, window    int
		sourceContains string
	}{
		// Qwen2Config: use_sliding_window defaults to false, and then the window is not applied.
		{"{" + qwen + `, "sliding_window": 1024}`, HFSeqCap, 0, "use_sliding_window is not true, so its sliding_window is not applied"},
		{"{" + qwen + `, "sliding_window": 1024, "use_sliding_window": false}`, HFSeqCap, 0, "is not applied"},
		{"{" + qwen + `, "sliding_window": 1024, "use_sliding_window": true}`, 1024, 1024, "attention runs in a window of 1024 tokens (sliding_window)"},
		// use_sliding_window true without the field: Qwen2Config's default window, 4096.
		{"{" + qwen + `, "use_sliding_window": true}`, 4096, 4096, "window of 4096 tokens (sliding_window (missing: transformers' default))"},
		// A window longer than the sequence changes nothing but is recorded.
		{"{" + qwen + `, "sliding_window": 131072, "use_sliding_window": true}`, HFSeqCap, 131072, "window of 131072 tokens"},
	} {
		m, err := FromHFConfig([]byte(c.json), "c.json")
		if err != nil {
			t.Errorf("%s: %v", c.json, err)
			continue
		}
		if m.Seq != c.seq || m.Transformer.Window != c.window || !strings.Contains(m.Source, c.sourceContains) {
			t.Errorf("%s: seq %d window %d source %q; want seq %d window %d, source saying %q", c.json, m.Seq, m.Transformer.Window, m.Source, c.seq, c.window, c.sourceContains)
		}
	}
	for _, c := range []struct{ json, want string }{
		{`{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "sliding_window": 4096}`,
			`model: c.json: sliding_window is set, but model_type "llama" has no sliding-window attention (transformers' llama model ignores the field); remove it, or set model_type to mistral if the model attends within a window`},
		{`{"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "sliding_window": 0}`,
			`model: c.json: sliding_window = 0; it must be a positive integer`},
		{`{"transformer": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4, "head_dim": 16, "ffn": 256, "vocab": 100, "seq": 512, "sliding_window": 256}}`,
			`model: c.json: seq = 512 is longer than sliding_window = 256: tpsim prices full causal attention, which a windowed model computes only up to its window; set seq to at most 256`},
	} {
		_, err := FromHFConfig([]byte(c.json), "c.json")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.json, err, c.want)
		}
	}
}

// The issue: a tpsim model file without kv_heads reported "kv_heads = 0". A missing size is named
// as missing, with what to set; tpsim's format has no defaults (Spec), so none is assumed.
func TestSpecMissingSizes(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"transformer": {"hidden": 64, "layers": 2, "heads": 4, "head_dim": 16, "ffn": 256, "vocab": 100, "seq": 32}}`,
			`model: c.json: transformer has no kv_heads; a tpsim model file gives every size (none defaults); set kv_heads to the key/value heads: 4 (= heads) for multi-head attention, fewer for grouped-query attention`},
		{`{"transformer": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": null, "ffn": 256, "vocab": 100, "seq": 32}}`,
			`model: c.json: transformer has no kv_heads, head_dim; a tpsim model file gives every size (none defaults); set kv_heads to the key/value heads: 4 (= heads) for multi-head attention, fewer for grouped-query attention; head_dim is usually hidden / heads = 16`},
		{`{"mlp": {"dims": [4, 2]}}`, `model: c.json: mlp has no batch; a tpsim model file gives every size (none defaults)`},
	} {
		_, err := FromHFConfig([]byte(c.json), "c.json")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.json, err, c.want)
		}
	}
}
