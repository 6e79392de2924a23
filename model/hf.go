package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tpsim/tpsim/internal/jsonkeys"
)

// HFSeqCap caps the default sequence length of a model imported from a Hugging Face config with
// rotary positions: Seq = min(max_position_embeddings, HFSeqCap). A long-context model's maximum
// (32768 for Mistral-7B, 131072 for Llama 3.1) is a limit, not the length most of its training
// ran at, and activation memory grows with Seq; 8192 is Llama 3's pretraining length. Set
// Transformer.Seq (or the strategy's sequence) to plan at another length. Models with learned
// positions (gpt2) keep Seq = n_positions, the rows of their position table.
const HFSeqCap = 8192

// HFBatchTokens is the global batch, in tokens, that a model imported from a Hugging Face config
// trains with by default: Batch = HFBatchTokens / Seq sequences (at least 1). A config.json carries
// no batch, and a batch of 1 makes every dp > 1 fail on divisibility and plans at a batch no
// pretraining run uses. 4M tokens (2^22) is Llama 2's global batch (Touvron et al. 2023, "Llama 2",
// section 2.2: "a global batch-size of 4M tokens"), between GPT-3's 0.5M-3.2M tokens (Brown et al.
// 2020, Table 2.1). Give gbs= in the strategy to plan at another batch.
const HFBatchTokens = 1 << 22

// hfTypes lists the supported Hugging Face model_type values, sorted.
var hfTypes = []string{"deepseek_v2", "deepseek_v3", "gemma2", "gemma3", "gemma3_text", "gpt2", "gpt_neox", "gpt_oss", "kimi_k2", "llama", "llama4", "mistral", "mixtral", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}

// hfConfig holds the fields of a Hugging Face config.json that set a model's shape. Pointers tell
// a missing (or null) field from a zero.
type hfConfig struct {
	ModelType *string `json:"model_type"`

	// llama, mistral, qwen2, gpt_neox
	HiddenSize            *int  `json:"hidden_size"`
	NumHiddenLayers       *int  `json:"num_hidden_layers"`
	NumAttentionHeads     *int  `json:"num_attention_heads"`
	NumKeyValueHeads      *int  `json:"num_key_value_heads"`
	HeadDim               *int  `json:"head_dim"`
	IntermediateSize      *int  `json:"intermediate_size"`
	VocabSize             *int  `json:"vocab_size"`
	MaxPositionEmbeddings *int  `json:"max_position_embeddings"`
	TieWordEmbeddings     *bool `json:"tie_word_embeddings"`
	AttentionBias         *bool `json:"attention_bias"`
	MLPBias               *bool `json:"mlp_bias"`

	// mistral, and qwen2 when UseSlidingWindow
	SlidingWindow    *int  `json:"sliding_window"`
	UseSlidingWindow *bool `json:"use_sliding_window"`

	// mixture-of-experts: mixtral, qwen2_moe, qwen3_moe, deepseek_v2/v3, llama4, gpt_oss
	NumLocalExperts        *int    `json:"num_local_experts"`
	NumExperts             *int    `json:"num_experts"`
	NRoutedExperts         *int    `json:"n_routed_experts"`
	NumExpertsPerTok       *int    `json:"num_experts_per_tok"`
	MoEIntermediateSize    *int    `json:"moe_intermediate_size"`
	SharedIntermediateSize *int    `json:"shared_expert_intermediate_size"`
	NSharedExperts         *int    `json:"n_shared_experts"`
	FirstKDenseReplace     *int    `json:"first_k_dense_replace"`
	MoELayerFreq           *int    `json:"moe_layer_freq"`
	DecoderSparseStep      *int    `json:"decoder_sparse_step"`
	MLPOnlyLayers          []int   `json:"mlp_only_layers"`
	InterleaveMoELayerStep *int    `json:"interleave_moe_layer_step"`
	IntermediateSizeMLP    *int    `json:"intermediate_size_mlp"`
	TopkMethod             *string `json:"topk_method"`
	NumNextnPredictLayers  *int    `json:"num_nextn_predict_layers"`
	// multi-head latent attention: deepseek_v2, deepseek_v3
	QLoraRank     *int `json:"q_lora_rank"`
	KVLoraRank    *int `json:"kv_lora_rank"`
	QKNopeHeadDim *int `json:"qk_nope_head_dim"`
	QKRopeHeadDim *int `json:"qk_rope_head_dim"`
	VHeadDim      *int `json:"v_head_dim"`
	// alternating windowed and full attention: gemma2, gemma3_text, gpt_oss
	LayerTypes           []string `json:"layer_types"`
	SlidingWindowPattern *int     `json:"sliding_window_pattern"`

	// gpt2
	NEmbd      *int `json:"n_embd"`
	NLayer     *int `json:"n_layer"`
	NHead      *int `json:"n_head"`
	NPositions *int `json:"n_positions"`
	NCtx       *int `json:"n_ctx"`
	NInner     *int `json:"n_inner"`
}

// FromHFConfig returns the model described by a Hugging Face config.json (model_type llama,
// mistral, qwen2, gpt2 or gpt_neox), or by tpsim's own JSON form (see Spec). The model is called
// name; an empty name takes the file's "name" field, else "config".
//
// Fields that set the parameter count (hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size, vocab_size; n_embd, n_layer, n_head, n_positions, vocab_size for gpt2) are
// required. Other fields take the defaults of the Hugging Face config class: num_key_value_heads =
// num_attention_heads, head_dim = hidden_size / num_attention_heads, n_inner = 4 n_embd;
// tie_word_embeddings is true for gpt2 and false otherwise; max_position_embeddings is 2048 for
// llama and gpt_neox, 32768 for qwen2 and 131072 for mistral. Seq is set as HFSeqCap says; Batch is
// HFBatchTokens / Seq, as configs do not carry one (the model's Source says so). Architectures: llama and mistral are RMSNorm, SwiGLU, rotary, no
// biases (llama's attention_bias and mlp_bias may both be true); qwen2 adds a bias on q, k and v;
// gpt2 is LayerNorm, GELU, biases, learned positions; gpt_neox is gpt2 with rotary positions and
// an untied head (use_parallel_residual changes no shape and is ignored).
//
// Sliding-window attention: mistral attends within sliding_window tokens (4096 when the field is
// missing, as MistralConfig defaults; none when it is null), qwen2 only when use_sliding_window is
// true (as transformers applies it). tpsim prices full causal attention, which is what a windowed
// model computes while the sequence fits in its window, so Seq is capped at the window
// (Transformer.Window) and a longer sequence is refused; the model's Source says so. A
// sliding_window on llama, gpt2 or gpt_neox, whose transformers models ignore it, is refused.
//
// Mixture-of-experts, latent-attention and newer dense families (mixtral, qwen2_moe, qwen3_moe,
// deepseek_v2, deepseek_v3, kimi_k2, llama4's text_config, gpt_oss, qwen3, gemma2, gemma3's
// text_config, phi3) are read by newFamily (hfmoe.go); gemma2, gemma3 and gpt_oss alternate
// windowed and full attention (Transformer.WindowPattern), and their Seq is capped at the window.
//
// Errors are prefixed "model:" and name the field, or the line and column of malformed JSON.
func FromHFConfig(data []byte, name string) (*Model, error) {
	origin := name
	if origin == "" {
		origin = "config.json"
	}
	return decodeConfig(data, name, "config", origin)
}

// decodeConfig reads a Hugging Face config or a tpsim model file. The model is called name, else
// the file's "name", else fallback; errors say origin.
func decodeConfig(data []byte, name, fallback, origin string) (*Model, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("model: %s: %s", origin, fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(data, origin, err)
	}
	if top == nil {
		return nil, fail("the top level is null; a config is a JSON object")
	}
	if d, ok := jsonkeys.Find(data); ok {
		return nil, fmt.Errorf("model: %s:%d:%d: %s is given twice; keep one (a JSON decoder would silently take the last)", origin, d.Line, d.Col, d.Where())
	}
	_, isHF := top["model_type"]
	_, isT := top["transformer"]
	_, isMLP := top["mlp"]
	if !isHF && (isT || isMLP) {
		return decodeSpec(data, top, name, fallback, origin)
	}
	if !isHF {
		return nil, fail("no \"model_type\" (as in a Hugging Face config.json; supported: %s) and no \"transformer\" or \"mlp\" (as in a tpsim model file)",
			strings.Join(hfTypes, ", "))
	}

	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, jsonError(data, origin, err)
	}
	if c.ModelType == nil {
		return nil, fail("model_type is null; set it to one of %s", strings.Join(hfTypes, ", "))
	}
	mt := *c.ModelType
	if inner, ok := textConfigs[mt]; ok && top["text_config"] != nil {
		// A multimodal config (Llama 4, Gemma 3): tpsim models its language model, text_config.
		raw := top["text_config"]
		top, c = nil, hfConfig{}
		if err := json.Unmarshal(raw, &top); err != nil || top == nil {
			return nil, fail("text_config is not a JSON object")
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fail("text_config: %v", err)
		}
		mt = inner
	}
	r := hfReader{c: &c, mt: mt, fail: fail}
	t, family, err := r.transformer()
	if err == nil {
		err = r.bad
	}
	if err != nil {
		return nil, err
	}
	window, note, err := r.slidingWindow(top)
	if err != nil {
		return nil, err
	}
	if window > 0 && t.Seq > window {
		t.Seq = window
	}
	t.Window = window
	if window > 0 {
		if t.WindowPattern, err = r.windowPattern(t.Layers, alternating[mt]); err != nil {
			return nil, err
		}
		if t.WindowPattern > 0 {
			note += fmt.Sprintf("; of every %d layers the last attends to the whole sequence and the others within the window", t.WindowPattern)
		}
	}
	if name == "" {
		name = fallback
	}
	t.Batch = max(1, HFBatchTokens/t.Seq)
	m, err := t.Build(name, family)
	if err != nil {
		return nil, fail("%s", strings.TrimPrefix(err.Error(), "model: "))
	}
	m.Source = fmt.Sprintf("Hugging Face config.json (model_type %q) from %s; the config has no batch, so the global batch is %d sequences of %d tokens, 4M tokens as Llama 2 trained (set gbs= to change it)%s",
		mt, origin, t.Batch, t.Seq, note)
	return m, nil
}

// textConfigs maps the model_type of a multimodal config to that of its text_config, the
// language model tpsim reads (the vision encoder is left out: Llama 4's published totals count it).
var textConfigs = map[string]string{"llama4": "llama4_text", "gemma3": "gemma3_text"}

// hfReader reads the fields of one Hugging Face config, recording the first missing or invalid
// one in bad.
type hfReader struct {
	c    *hfConfig
	mt   string
	fail func(format string, args ...any) error
	bad  error
}

// need returns a required field, or records the first one missing or not positive.
func (r *hfReader) need(field string, v *int) int {
	if r.bad != nil {
		return 0
	}
	if v == nil {
		r.bad = r.fail("model_type %q needs %q; it is missing or null", r.mt, field)
		return 0
	}
	if *v <= 0 {
		r.bad = r.fail("%s = %d; it must be a positive integer", field, *v)
		return 0
	}
	return *v
}

// opt returns an optional field, or def when it is missing or null.
func (r *hfReader) opt(field string, v *int, def int) int {
	if v == nil {
		return def
	}
	return r.need(field, v)
}

// flag returns a boolean field, or def when it is missing or null.
func flag(v *bool, def bool) bool {
	if v == nil {
		return def
	}
	return *v
}

// headDim is hidden/heads, recording an error when heads does not divide hidden.
func (r *hfReader) headDim(hidden, heads int, hiddenField, headsField string) int {
	if r.bad != nil || heads <= 0 {
		return 0
	}
	if hidden%heads != 0 {
		r.bad = r.fail("%s %d is not a multiple of %s %d; a config like this needs \"head_dim\"", hiddenField, hidden, headsField, heads)
		return 0
	}
	return hidden / heads
}

// transformer reads the shape of the config's model_type and its family.
func (r *hfReader) transformer() (Transformer, string, error) {
	c, mt := r.c, r.mt
	var t Transformer
	family := mt
	switch mt {
	case "llama", "mistral", "qwen2":
		r.sizes(&t)
		t.KVHeads = r.opt("num_key_value_heads", c.NumKeyValueHeads, t.Heads)
		if c.HeadDim != nil {
			t.HeadDim = r.need("head_dim", c.HeadDim)
		} else {
			t.HeadDim = r.headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		}
		maxPos := map[string]int{"llama": 2048, "mistral": 4096 * 32, "qwen2": 32768}[mt]
		t.Seq = min(r.opt("max_position_embeddings", c.MaxPositionEmbeddings, maxPos), HFSeqCap)
		t.Gated, t.RMSNorm = true, true
		t.Tied = flag(c.TieWordEmbeddings, false)
		switch mt {
		case "qwen2":
			t.QKVBias = true
		case "llama":
			ab, mb := flag(c.AttentionBias, false), flag(c.MLPBias, false)
			if ab != mb {
				return t, "", r.fail("attention_bias = %v with mlp_bias = %v is not supported: tpsim's Transformer has biases on every Linear layer or on none (or on q, k and v only, as qwen2)", ab, mb)
			}
			t.Bias = ab
		}
	case "gpt2":
		t.Hidden = r.need("n_embd", c.NEmbd)
		t.Layers = r.need("n_layer", c.NLayer)
		t.Heads = r.need("n_head", c.NHead)
		t.Vocab = r.need("vocab_size", c.VocabSize)
		if c.NPositions == nil && c.NCtx != nil {
			t.Seq = r.need("n_ctx", c.NCtx)
		} else {
			t.Seq = r.need("n_positions", c.NPositions)
		}
		t.KVHeads = t.Heads
		t.HeadDim = r.headDim(t.Hidden, t.Heads, "n_embd", "n_head")
		t.FFN = r.opt("n_inner", c.NInner, 4*t.Hidden)
		t.Bias, t.Learned = true, true
		t.Tied = flag(c.TieWordEmbeddings, true)
		family = "gpt"
	case "gpt_neox":
		r.sizes(&t)
		t.KVHeads = t.Heads
		t.HeadDim = r.headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		t.Seq = min(r.opt("max_position_embeddings", c.MaxPositionEmbeddings, 2048), HFSeqCap)
		if !flag(c.AttentionBias, true) {
			return t, "", r.fail("attention_bias = false is not supported: tpsim's Transformer has biases on every Linear layer or on none (or on q, k and v only, as qwen2)")
		}
		t.Bias = true
		t.Tied = flag(c.TieWordEmbeddings, false)
	case "mixtral", "qwen2_moe", "qwen3", "qwen3_moe", "gpt_oss", "phi3", "gemma2", "gemma3_text", "llama4_text", "deepseek_v2", "deepseek_v3", "kimi_k2":
		if err := r.newFamily(&t); err != nil {
			return t, "", err
		}
		if f, ok := hfFamilies[mt]; ok {
			family = f
		}
	default:
		return t, "", r.fail("model_type %q is not supported; supported: %s (or write a tpsim model file with \"transformer\")",
			mt, strings.Join(hfTypes, ", "))
	}
	return t, family, nil
}

// hfDefaultWindow is the sliding_window that transformers' MistralConfig and Qwen2Config take
// when a config leaves the field out (both classes' __init__ default it to 4096).
const hfDefaultWindow = 4096

// slidingWindow returns the attention window the config's model runs, 0 for none, and a note for
// the model's Source. transformers applies a window on mistral (sliding_window: null turns it
// off) and on qwen2 when use_sliding_window is true; llama, gpt2 and gpt_neox have none, so a
// sliding_window there would be ignored by transformers too and is refused as a likely wrong
// model_type. tpsim prices full causal attention, which is what windowed attention computes
// while the sequence fits in the window: decodeConfig caps the default sequence at the window,
// and a longer seq= is refused (Transformer.Validate, strategies.Strategy.Validate).
func (r *hfReader) slidingWindow(top map[string]json.RawMessage) (int, string, error) {
	raw, present := top["sliding_window"]
	null := present && string(bytes.TrimSpace(raw)) == "null"
	switch r.mt {
	case "mistral", "mixtral", "phi3", "gemma2", "gemma3_text", "gpt_oss":
	case "qwen2", "qwen2_moe", "qwen3", "qwen3_moe":
		if !flag(r.c.UseSlidingWindow, false) {
			if present && !null {
				return 0, "; use_sliding_window is not true, so its sliding_window is not applied (as in transformers): attention is full causal", nil
			}
			return 0, "", nil
		}
	default:
		if present && !null {
			return 0, "", r.fail("sliding_window is set, but model_type %q has no sliding-window attention (transformers' %s model ignores the field); remove it, or set model_type to mistral if the model attends within a window", r.mt, r.mt)
		}
		return 0, "", nil
	}
	var w int
	switch {
	case null:
		return 0, "", nil
	case !present:
		if w = hfWindowDefault(r.mt); w == 0 {
			return 0, "", nil
		}
	default:
		w = r.need("sliding_window", r.c.SlidingWindow)
		if r.bad != nil {
			return 0, "", r.bad
		}
	}
	how := "sliding_window"
	if !present {
		how = "sliding_window (missing: transformers' default)"
	}
	return w, fmt.Sprintf("; attention runs in a window of %d tokens (%s); tpsim prices full causal attention, the same computation while the sequence fits in the window, so the sequence is at most %d (a longer seq= is refused)", w, how, w), nil
}

// decodeSpec reads a tpsim model file (see Spec); unknown fields are errors, to catch typos, and
// so are missing sizes, which would otherwise read as 0.
func decodeSpec(data []byte, top map[string]json.RawMessage, name, fallback, origin string) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("model: %s: unknown field %s in a tpsim model file; the fields are name, family, source, published, "+
				"transformer {hidden, layers, heads, kv_heads, head_dim, ffn, vocab, seq, gated, rms_norm, bias, qkv_bias, learned, tied, batch, dropout, sliding_window, "+
				"window_pattern, qk_norm, post_norms, attention_sinks, moe {...}, mla {...}, mtp_layers} "+
				"and mlp {activation, dims, batch}", origin, msg)
		}
		return nil, jsonError(data, origin, err)
	}
	if err := missingSizes(top, s); err != nil {
		return nil, fmt.Errorf("model: %s: %v", origin, err)
	}
	if name != "" {
		s.Name = name
	}
	if s.Name == "" {
		s.Name = fallback
	}
	m, err := s.Build()
	if err != nil {
		return nil, fmt.Errorf("model: %s: %s", origin, strings.TrimPrefix(err.Error(), "model: "))
	}
	return m, nil
}

// specSizes are the sizes a tpsim model file's transformer must give: none has a default in
// tpsim's format (Spec), and a missing one would read as 0.
var specSizes = []string{"hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab", "seq"}

// missingSizes names the sizes of s's transformer, or its mlp's dims and batch, that the file
// leaves out (or gives as null), with what to set.
func missingSizes(top map[string]json.RawMessage, s Spec) error {
	section, want := "transformer", specSizes
	if s.Transformer != nil && s.MLP != nil {
		return nil // Build says to keep one
	}
	if s.Transformer == nil {
		if s.MLP == nil {
			return nil
		}
		section, want = "mlp", []string{"dims", "batch"}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(top[section], &fields); err != nil {
		return nil // the decoder has already read it as an object, or it is null
	}
	var missing []string
	for _, k := range want {
		if v, ok := fields[k]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%s has no %s; a tpsim model file gives every size (none defaults)", section, strings.Join(missing, ", "))
	for _, k := range missing {
		switch {
		case k == "kv_heads" && s.Transformer.Heads > 0:
			msg += fmt.Sprintf("; set kv_heads to the key/value heads: %d (= heads) for multi-head attention, fewer for grouped-query attention", s.Transformer.Heads)
		case k == "kv_heads":
			msg += "; set kv_heads to the key/value heads: heads for multi-head attention, fewer for grouped-query attention"
		case k == "head_dim" && s.Transformer.Heads > 0 && s.Transformer.Hidden%s.Transformer.Heads == 0:
			msg += fmt.Sprintf("; head_dim is usually hidden / heads = %d", s.Transformer.Hidden/s.Transformer.Heads)
		}
	}
	return errors.New(msg)
}

// jsonError turns an encoding/json error into one that says where in data it is, as
// "model: origin:line:column: message".
func jsonError(data []byte, origin string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// The scanner has consumed the offending byte: it is at Offset-1, except at the end of the input.
		off := se.Offset - 1
		if strings.Contains(se.Error(), "end of JSON input") {
			off = int64(len(data))
		}
		line, col := position(data, off)
		return fmt.Errorf("model: %s:%d:%d: %s", origin, line, col, se.Error())
	case errors.As(err, &te):
		line, col := position(data, valueStart(data, te.Offset-1))
		if te.Field == "" {
			return fmt.Errorf("model: %s:%d:%d: the top level is a JSON %s; a config is a JSON object", origin, line, col, te.Value)
		}
		return fmt.Errorf("model: %s:%d:%d: %s is a JSON %s; it must be %s", origin, line, col, te.Field, te.Value, jsonKind(te.Type.String()))
	}
	return fmt.Errorf("model: %s: %v", origin, err)
}

// jsonKind names a Go type as a JSON user would, with its article.
func jsonKind(goType string) string {
	switch strings.TrimLeft(goType, "*") {
	case "int", "int64":
		return "an integer"
	case "bool":
		return "a boolean (true or false)"
	case "string", "model.Kind":
		return "a string"
	case "[]int":
		return "a list of integers"
	}
	return "a JSON object"
}

// valueStart returns the offset where the JSON value whose last byte is at end begins.
// encoding/json reports a type error after a string, number or literal, but just after the opening
// bracket of an array or object, which is already the start.
func valueStart(data []byte, end int64) int64 {
	if end < 0 || end >= int64(len(data)) {
		return end
	}
	if data[end] == '"' {
		for i := end - 1; i >= 0; i-- {
			if data[i] != '"' {
				continue
			}
			n := 0 // backslashes before this quote: an odd number escapes it
			for j := i - 1; j >= 0 && data[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				return i
			}
		}
		return end
	}
	const literal = "0123456789+-.eEtrufalsn" // the bytes of numbers, true, false and null
	if strings.IndexByte(literal, data[end]) < 0 {
		return end
	}
	i := end
	for i > 0 && strings.IndexByte(literal, data[i-1]) >= 0 {
		i--
	}
	return i
}

// position returns the 1-based line and column (in characters) of byte offset off of data.
func position(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	prefix := data[:off]
	line = 1 + bytes.Count(prefix, []byte{'\n'})
	start := bytes.LastIndexByte(prefix, '\n') + 1
	return line, 1 + utf8.RuneCount(prefix[start:])
}

// sizes reads the five sizes every Hugging Face config of the llama lineage names alike:
// hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and vocab_size.
func (r *hfReader) sizes(t *Transformer) {
	c := r.c
	t.Hidden = r.need("hidden_size", c.HiddenSize)
	t.Layers = r.need("num_hidden_layers", c.NumHiddenLayers)
	t.Heads = r.need("num_attention_heads", c.NumAttentionHeads)
	t.FFN = r.need("intermediate_size", c.IntermediateSize)
	t.Vocab = r.need("vocab_size", c.VocabSize)
}
