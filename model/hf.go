package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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
var hfTypes = []string{"gpt2", "gpt_neox", "llama", "mistral", "qwen2"}

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
	_, isHF := top["model_type"]
	_, isT := top["transformer"]
	_, isMLP := top["mlp"]
	if !isHF && (isT || isMLP) {
		return decodeSpec(data, name, fallback, origin)
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
	// need returns a required field, or records the first one missing or not positive.
	var bad error
	need := func(field string, v *int) int {
		if bad != nil {
			return 0
		}
		if v == nil {
			bad = fail("model_type %q needs %q; it is missing or null", mt, field)
			return 0
		}
		if *v <= 0 {
			bad = fail("%s = %d; it must be a positive integer", field, *v)
			return 0
		}
		return *v
	}
	// opt returns an optional field, or def when it is missing or null.
	opt := func(field string, v *int, def int) int {
		if v == nil {
			return def
		}
		return need(field, v)
	}
	flag := func(v *bool, def bool) bool {
		if v == nil {
			return def
		}
		return *v
	}
	headDim := func(hidden, heads int, hiddenField, headsField string) int {
		if bad != nil {
			return 0
		}
		if hidden%heads != 0 {
			bad = fail("%s %d is not a multiple of %s %d; a config like this needs \"head_dim\"", hiddenField, hidden, headsField, heads)
			return 0
		}
		return hidden / heads
	}

	var t Transformer
	family := mt
	switch mt {
	case "llama", "mistral", "qwen2":
		t.Hidden = need("hidden_size", c.HiddenSize)
		t.Layers = need("num_hidden_layers", c.NumHiddenLayers)
		t.Heads = need("num_attention_heads", c.NumAttentionHeads)
		t.FFN = need("intermediate_size", c.IntermediateSize)
		t.Vocab = need("vocab_size", c.VocabSize)
		t.KVHeads = opt("num_key_value_heads", c.NumKeyValueHeads, t.Heads)
		if c.HeadDim != nil {
			t.HeadDim = need("head_dim", c.HeadDim)
		} else if t.Heads > 0 {
			t.HeadDim = headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		}
		maxPos := map[string]int{"llama": 2048, "mistral": 4096 * 32, "qwen2": 32768}[mt]
		t.Seq = min(opt("max_position_embeddings", c.MaxPositionEmbeddings, maxPos), HFSeqCap)
		t.Gated, t.RMSNorm = true, true
		t.Tied = flag(c.TieWordEmbeddings, false)
		switch mt {
		case "qwen2":
			t.QKVBias = true
		case "llama":
			ab, mb := flag(c.AttentionBias, false), flag(c.MLPBias, false)
			if ab != mb {
				return nil, fail("attention_bias = %v with mlp_bias = %v is not supported: tpsim's Transformer has biases on every Linear layer or on none (or on q, k and v only, as qwen2)", ab, mb)
			}
			t.Bias = ab
		}
	case "gpt2":
		t.Hidden = need("n_embd", c.NEmbd)
		t.Layers = need("n_layer", c.NLayer)
		t.Heads = need("n_head", c.NHead)
		t.Vocab = need("vocab_size", c.VocabSize)
		if c.NPositions == nil && c.NCtx != nil {
			t.Seq = need("n_ctx", c.NCtx)
		} else {
			t.Seq = need("n_positions", c.NPositions)
		}
		t.KVHeads = t.Heads
		if t.Heads > 0 {
			t.HeadDim = headDim(t.Hidden, t.Heads, "n_embd", "n_head")
		}
		t.FFN = opt("n_inner", c.NInner, 4*t.Hidden)
		t.Bias, t.Learned = true, true
		t.Tied = flag(c.TieWordEmbeddings, true)
		family = "gpt"
	case "gpt_neox":
		t.Hidden = need("hidden_size", c.HiddenSize)
		t.Layers = need("num_hidden_layers", c.NumHiddenLayers)
		t.Heads = need("num_attention_heads", c.NumAttentionHeads)
		t.FFN = need("intermediate_size", c.IntermediateSize)
		t.Vocab = need("vocab_size", c.VocabSize)
		t.KVHeads = t.Heads
		if t.Heads > 0 {
			t.HeadDim = headDim(t.Hidden, t.Heads, "hidden_size", "num_attention_heads")
		}
		t.Seq = min(opt("max_position_embeddings", c.MaxPositionEmbeddings, 2048), HFSeqCap)
		if !flag(c.AttentionBias, true) {
			return nil, fail("attention_bias = false is not supported: tpsim's Transformer has biases on every Linear layer or on none (or on q, k and v only, as qwen2)")
		}
		t.Bias = true
		t.Tied = flag(c.TieWordEmbeddings, false)
	default:
		return nil, fail("model_type %q is not supported; supported: %s (or write a tpsim model file with \"transformer\")",
			mt, strings.Join(hfTypes, ", "))
	}
	if bad != nil {
		return nil, bad
	}
	if name == "" {
		name = fallback
	}
	t.Batch = max(1, HFBatchTokens/t.Seq)
	m, err := t.Build(name, family)
	if err != nil {
		return nil, fail("%s", strings.TrimPrefix(err.Error(), "model: "))
	}
	m.Source = fmt.Sprintf("Hugging Face config.json (model_type %q) from %s; the config has no batch, so the global batch is %d sequences of %d tokens, 4M tokens as Llama 2 trained (set gbs= to change it)",
		mt, origin, t.Batch, t.Seq)
	return m, nil
}

// decodeSpec reads a tpsim model file (see Spec); unknown fields are errors, to catch typos.
func decodeSpec(data []byte, name, fallback, origin string) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("model: %s: unknown field %s in a tpsim model file; the fields are name, family, source, published, "+
				"transformer {hidden, layers, heads, kv_heads, head_dim, ffn, vocab, seq, gated, rms_norm, bias, qkv_bias, learned, tied, batch} "+
				"and mlp {activation, dims, batch}", origin, msg)
		}
		return nil, jsonError(data, origin, err)
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
