package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the type of a module, named as in torch.nn where one exists.
type Kind string

// Module kinds.
const (
	KindLinear           Kind = "Linear"
	KindReLU             Kind = "ReLU"
	KindGELU             Kind = "GELU"
	KindLayerNorm        Kind = "LayerNorm"
	KindRMSNorm          Kind = "RMSNorm"
	KindEmbedding        Kind = "Embedding"
	KindAttention        Kind = "Attention"
	KindMLP              Kind = "MLP"
	KindTransformerBlock Kind = "TransformerBlock"
	KindSequential       Kind = "Sequential"
	KindCrossEntropy     Kind = "CrossEntropyLoss" // mean over tokens of -log softmax(logits)[target]
	KindMSE              Kind = "MSELoss"          // mean over all elements of (y - target)^2
)

// Module is one node of the tree. Only the fields of its Kind are set.
type Module struct {
	Name string // local name: "0", "qkv", "layers"
	Kind Kind

	// Linear: y = x W^T + b with W [Out, In].
	In, Out int
	Bias    bool

	// Embedding: weight [Num, Dim]. LayerNorm/RMSNorm: Dim features (LayerNorm has a bias when Bias).
	Num, Dim int

	// Attention: Dim = model width, Heads query heads, KVHeads key/value heads, HeadDim per head.
	Heads, KVHeads, HeadDim int

	// MLP: Dim -> FFN -> Dim; Gated selects SwiGLU (gate, up, down) over GELU (fc1, fc2).
	// Experts: Num experts of that MLP, TopK used per token. MoE: Num routed experts.
	FFN   int
	Gated bool
	TopK  int

	// Attention: Sinks adds one learned logit per head (gpt-oss), Heads parameters.
	Sinks bool

	Children []*Module
}

// Child returns the direct child called name, or nil.
func (m *Module) Child(name string) *Module {
	for _, c := range m.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// OwnParams is the number of parameters held by m itself, not its children.
func (m *Module) OwnParams() int64 {
	switch m.Kind {
	case KindLinear:
		n := int64(m.In) * int64(m.Out)
		if m.Bias {
			n += int64(m.Out)
		}
		return n
	case KindEmbedding:
		return int64(m.Num) * int64(m.Dim)
	case KindLayerNorm:
		if m.Bias {
			return 2 * int64(m.Dim)
		}
		return int64(m.Dim)
	case KindRMSNorm:
		return int64(m.Dim)
	case KindAttention:
		if m.Sinks {
			return int64(m.Heads)
		}
	case KindMoE:
		if m.Bias {
			return int64(m.Num) // DeepSeek-V3's score-correction bias
		}
	case KindExperts:
		return int64(m.Num) * expertParams(m)
	}
	return 0
}

// Params is the number of parameters in m and all its descendants.
func (m *Module) Params() int64 {
	n := m.OwnParams()
	for _, c := range m.Children {
		n += c.Params()
	}
	return n
}

// Named is a module with its fully-qualified name ("" for the root).
type Named struct {
	FQN    string
	Module *Module
}

// Walk lists m and its descendants in pre-order with fully-qualified names, as
// torch.nn.Module.named_modules does.
func (m *Module) Walk() []Named {
	var out []Named
	var rec func(prefix string, x *Module)
	rec = func(prefix string, x *Module) {
		out = append(out, Named{prefix, x})
		for _, c := range x.Children {
			name := c.Name
			if prefix != "" {
				name = prefix + "." + c.Name
			}
			rec(name, c)
		}
	}
	rec("", m)
	return out
}

// Model is a module tree with the shape of the data it trains on.
type Model struct {
	Name   string
	Family string // "mlp", "gpt", "llama", ...
	Root   *Module
	// Loss is the loss applied to the root's output: KindCrossEntropy over token logits, or KindMSE
	// against a target of the output's shape. It is not a module of the tree, so plans cannot name it.
	Loss Kind

	// Batch is the default global batch in samples (sequences for transformers).
	Batch int
	// Seq is the sequence length in tokens; 0 for models that take one vector per sample.
	Seq int
	// InDim is the width of one input sample of an MLP (0 for transformers, which take token ids).
	InDim int

	// Transformer is the configuration a transformer was built from; nil for other models.
	Transformer *Transformer

	// Published is the parameter count the model's authors publish, 0 when none is; a test keeps
	// Root.Params() equal to it.
	Published int64
	// Source says where the configuration comes from.
	Source string
}

// Params is the number of parameters of the model.
func (m *Model) Params() int64 { return m.Root.Params() }

// Find returns the module with fully-qualified name fqn, or nil.
func (m *Model) Find(fqn string) *Module {
	if fqn == "" {
		return m.Root
	}
	cur := m.Root
	for _, part := range strings.Split(fqn, ".") {
		cur = cur.Child(part)
		if cur == nil {
			return nil
		}
	}
	return cur
}

// Transformer is a decoder-only transformer's configuration, in the terms of Hugging Face configs.
type Transformer struct {
	Hidden  int  `json:"hidden"`
	Layers  int  `json:"layers"`
	Heads   int  `json:"heads"`
	KVHeads int  `json:"kv_heads"`
	HeadDim int  `json:"head_dim"`
	FFN     int  `json:"ffn"`
	Vocab   int  `json:"vocab"`
	Seq     int  `json:"seq"`
	Gated   bool `json:"gated"`    // SwiGLU MLP (Llama) instead of GELU (GPT)
	RMSNorm bool `json:"rms_norm"` // RMSNorm (Llama) instead of LayerNorm with bias (GPT)
	Bias    bool `json:"bias"`     // biases on Linear layers (GPT yes, Llama no)
	QKVBias bool `json:"qkv_bias"` // bias on qkv only (Qwen2)
	Learned bool `json:"learned"`  // learned position embeddings (GPT); rotary otherwise
	Tied    bool `json:"tied"`     // output head shares the embedding weight
	Batch   int  `json:"batch"`
	// Dropout is the probability of the hidden and attention dropouts (Megatron-LM's
	// hidden_dropout and attention_dropout); 0 for none.
	Dropout float64 `json:"dropout,omitempty"` // default global batch in sequences
	// Window is the sliding attention window in tokens (Mistral 7B: each token attends to the
	// 4096 before it, Jiang et al. 2023 sec. 2); 0 for none. tpsim prices full causal attention,
	// which computes the same as windowed attention while the sequence fits in the window, so
	// Seq (and a strategy's seq) must be at most Window.
	Window int `json:"sliding_window,omitempty"`
	// WindowPattern alternates windowed and full attention: of every WindowPattern layers the
	// first WindowPattern-1 attend within Window and the last attends to all (gpt-oss and
	// Gemma 2: 2; Gemma 3: 6); 0 windows every layer (Mistral). Seq is at most Window either way.
	WindowPattern int `json:"window_pattern,omitempty"`
	// QKNorm is an RMSNorm over head_dim on queries and keys (Qwen3, Gemma 3); PostNorms adds
	// Gemma 2/3's norms after attention and after the MLP (four per block); Sinks is gpt-oss's
	// learned attention sink, one logit per head per layer (OpenAI gpt-oss model card sec. 2.1).
	QKNorm    bool `json:"qk_norm,omitempty"`
	PostNorms bool `json:"post_norms,omitempty"`
	Sinks     bool `json:"attention_sinks,omitempty"`
	// MoE makes the MLP of some layers a mixture of experts; MLA replaces grouped-query attention
	// with multi-head latent attention; MTP is DeepSeek-V3's multi-token prediction modules
	// (num_nextn_predict_layers), counted by Model.MTPParams outside the module tree.
	MoE *MoE `json:"moe,omitempty"`
	MLA *MLA `json:"mla,omitempty"`
	MTP int  `json:"mtp_layers,omitempty"`
}

// Validate checks that the configuration describes a buildable transformer.
func (t Transformer) Validate() error {
	pos := map[string]int{"hidden": t.Hidden, "layers": t.Layers, "heads": t.Heads, "kv_heads": t.KVHeads,
		"head_dim": t.HeadDim, "ffn": t.FFN, "vocab": t.Vocab, "seq": t.Seq}
	for _, k := range []string{"hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab", "seq"} {
		if pos[k] <= 0 {
			return fmt.Errorf("model: %s = %d; it must be a positive integer", k, pos[k])
		}
	}
	for _, k := range []string{"hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "seq"} {
		if pos[k] > MaxWidth {
			return fmt.Errorf("model: %s = %d is more than %d; check the configuration", k, pos[k], MaxWidth)
		}
	}
	if t.Layers > MaxLayers {
		return fmt.Errorf("model: layers = %d is more than %d; check the configuration", t.Layers, MaxLayers)
	}
	if !(t.Dropout >= 0 && t.Dropout < 1) {
		return fmt.Errorf("model: dropout = %g; it must be in [0, 1)", t.Dropout)
	}
	if t.Window < 0 || t.Window > MaxWidth {
		return fmt.Errorf("model: sliding_window = %d; it must be a window in tokens up to %d, or 0 for none", t.Window, MaxWidth)
	}
	if t.Window > 0 && t.Seq > t.Window {
		return fmt.Errorf("model: seq = %d is longer than sliding_window = %d: tpsim prices full causal attention, which a windowed model computes only up to its window; set seq to at most %d", t.Seq, t.Window, t.Window)
	}
	if t.Heads%t.KVHeads != 0 {
		return fmt.Errorf("model: %d attention heads are not a multiple of %d key/value heads; set kv_heads to a divisor of heads", t.Heads, t.KVHeads)
	}
	if err := t.validateMoE(); err != nil {
		return err
	}
	if p := t.approxParams(); p > MaxParams {
		return fmt.Errorf("model: the configuration has about %.3g parameters, more than %.0g; check the sizes", p, float64(MaxParams))
	}
	return nil
}

// Limits on sizes. They are far above any trained model and keep every count inside int64 and
// every module tree small enough to build.
const (
	MaxWidth  = 1 << 24 // any single size of a transformer or width of an MLP
	MaxLayers = 10000   // transformer blocks, or Linear layers of an MLP
	MaxParams = 1e15    // parameters of a transformer
)

// approxParams is an upper bound of the parameter count computed in float64, so that it cannot
// overflow whatever the sizes.
func (t Transformer) approxParams() float64 {
	h, hd, ffn := float64(t.Hidden), float64(t.HeadDim), float64(t.FFN)
	q, kv := float64(t.Heads)*hd, float64(t.KVHeads)*hd
	perLayer := h*(q+2*kv) + (q + 2*kv) + q*h + h + 3*h*ffn + 2*ffn + 2*h + 4*h
	if m := t.MoE; m != nil {
		perLayer += float64(m.Experts+1)*(3*h*float64(m.FFN)+2*float64(m.FFN)+h) + 3*h*float64(m.SharedFFN) + float64(m.Experts)*(h+2)
	}
	if a := t.MLA; a != nil {
		q, kv := float64(a.QLoraRank), float64(a.KVLoraRank)
		perLayer += (h+q)*(q+hd*float64(t.Heads)) + (h+kv)*(kv+float64(a.QKRopeHeadDim)) + kv*float64(t.Heads*(a.QKNopeHeadDim+a.VHeadDim)) + float64(t.Heads*a.VHeadDim)*h
	}
	return float64(t.Layers)*perLayer + 2*float64(t.Vocab)*h + float64(t.Seq)*h + 2*h
}

// Build returns the module tree of t. It returns an error when t is invalid.
func (t Transformer) Build(name, family string) (*Model, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	h := t.Hidden
	norm := func(n string) *Module {
		if t.RMSNorm {
			return &Module{Name: n, Kind: KindRMSNorm, Dim: h}
		}
		return &Module{Name: n, Kind: KindLayerNorm, Dim: h, Bias: true}
	}
	lin := func(n string, in, out int, bias bool) *Module {
		return &Module{Name: n, Kind: KindLinear, In: in, Out: out, Bias: bias}
	}
	root := &Module{Kind: KindSequential}
	root.Children = append(root.Children, &Module{Name: "embed", Kind: KindEmbedding, Num: t.Vocab, Dim: h})
	if t.Learned {
		root.Children = append(root.Children, &Module{Name: "pos", Kind: KindEmbedding, Num: t.Seq, Dim: h})
	}
	layers := &Module{Name: "layers", Kind: KindSequential}
	for i := 0; i < t.Layers; i++ {
		children := []*Module{norm("norm1"), t.attention(lin)}
		if t.PostNorms {
			children = append(children, norm("post_attn_norm"))
		}
		children = append(children, norm("norm2"))
		if t.MoE.IsMoE(i) {
			children = append(children, t.moe(lin))
		} else {
			children = append(children, t.mlp("mlp", t.FFN, lin))
		}
		if t.PostNorms {
			children = append(children, norm("post_mlp_norm"))
		}
		layers.Children = append(layers.Children, &Module{Name: strconv.Itoa(i), Kind: KindTransformerBlock, Dim: h, Children: children})
	}
	root.Children = append(root.Children, layers, norm("norm"))
	if !t.Tied {
		root.Children = append(root.Children, lin("head", h, t.Vocab, false))
	}
	batch := t.Batch
	if batch <= 0 {
		batch = 1
	}
	return &Model{Name: name, Family: family, Root: root, Loss: KindCrossEntropy, Batch: batch, Seq: t.Seq, Transformer: &t}, nil
}

// linFunc builds a Linear module.
type linFunc func(name string, in, out int, bias bool) *Module

// attention builds one layer's attention: grouped-query (fused qkv, proj) or latent (MLA).
func (t Transformer) attention(lin linFunc) *Module {
	h := t.Hidden
	if a := t.MLA; a != nil {
		qk := t.Heads * (a.QKNopeHeadDim + a.QKRopeHeadDim)
		attn := &Module{Name: "attn", Kind: KindLatentAttention, Dim: h, Heads: t.Heads, KVHeads: t.Heads, HeadDim: t.HeadDim}
		if a.QLoraRank > 0 {
			attn.Children = append(attn.Children, lin("q_a", h, a.QLoraRank, false),
				&Module{Name: "q_a_norm", Kind: KindRMSNorm, Dim: a.QLoraRank}, lin("q_b", a.QLoraRank, qk, false))
		} else {
			attn.Children = append(attn.Children, lin("q", h, qk, false))
		}
		attn.Children = append(attn.Children, lin("kv_a", h, a.KVLoraRank+a.QKRopeHeadDim, false),
			&Module{Name: "kv_a_norm", Kind: KindRMSNorm, Dim: a.KVLoraRank},
			lin("kv_b", a.KVLoraRank, t.Heads*(a.QKNopeHeadDim+a.VHeadDim), false),
			lin("proj", t.Heads*a.VHeadDim, h, false))
		return attn
	}
	qkvOut := (t.Heads + 2*t.KVHeads) * t.HeadDim
	attn := &Module{Name: "attn", Kind: KindAttention, Dim: h, Heads: t.Heads, KVHeads: t.KVHeads, HeadDim: t.HeadDim, Sinks: t.Sinks,
		Children: []*Module{lin("qkv", h, qkvOut, t.Bias || t.QKVBias), lin("proj", t.Heads*t.HeadDim, h, t.Bias)}}
	if t.QKNorm {
		attn.Children = append(attn.Children, &Module{Name: "q_norm", Kind: KindRMSNorm, Dim: t.HeadDim}, &Module{Name: "k_norm", Kind: KindRMSNorm, Dim: t.HeadDim})
	}
	return attn
}

// mlp builds an MLP of width ffn called name.
func (t Transformer) mlp(name string, ffn int, lin linFunc) *Module {
	h := t.Hidden
	mlp := &Module{Name: name, Kind: KindMLP, Dim: h, FFN: ffn, Gated: t.Gated}
	if t.Gated {
		mlp.Children = []*Module{lin("gate", h, ffn, t.Bias), lin("up", h, ffn, t.Bias), lin("down", ffn, h, t.Bias)}
	} else {
		mlp.Children = []*Module{lin("fc1", h, ffn, t.Bias), {Name: "act", Kind: KindGELU}, lin("fc2", ffn, h, t.Bias)}
	}
	return mlp
}

// moe builds one mixture-of-experts layer (KindMoE).
func (t Transformer) moe(lin linFunc) *Module {
	m, h := t.MoE, t.Hidden
	x := &Module{Name: "moe", Kind: KindMoE, Dim: h, Num: m.Experts, TopK: m.TopK, Bias: m.ScoreBias,
		Children: []*Module{lin("router", h, m.Experts, m.RouterBias),
			{Name: "experts", Kind: KindExperts, Num: m.Experts, TopK: m.TopK, Dim: h, FFN: m.FFN, Gated: t.Gated, Bias: t.Bias}}}
	if m.SharedFFN > 0 {
		x.Children = append(x.Children, t.mlp("shared", m.SharedFFN, lin))
	}
	if m.SharedGate {
		x.Children = append(x.Children, lin("shared_gate", h, 1, false))
	}
	return x
}

// Validate checks every module's sizes.
func (m *Model) Validate() error {
	if m.Root == nil {
		return fmt.Errorf("model: %q has no modules", m.Name)
	}
	if m.Batch <= 0 {
		return fmt.Errorf("model: %q batch = %d; it must be positive", m.Name, m.Batch)
	}
	for _, n := range m.Root.Walk() {
		x := n.Module
		bad := func(field string, v int) error {
			if v > MaxWidth {
				return fmt.Errorf("model: module %q (%s) has %s = %d, more than %d; check the sizes", n.FQN, x.Kind, field, v, MaxWidth)
			}
			return fmt.Errorf("model: module %q (%s) has %s = %d; it must be positive", n.FQN, x.Kind, field, v)
		}
		out := func(v int) bool { return v <= 0 || v > MaxWidth }
		switch x.Kind {
		case KindLinear:
			if out(x.In) {
				return bad("in_features", x.In)
			}
			if out(x.Out) {
				return bad("out_features", x.Out)
			}
		case KindEmbedding:
			if out(x.Num) {
				return bad("num_embeddings", x.Num)
			}
			if out(x.Dim) {
				return bad("embedding_dim", x.Dim)
			}
		case KindLayerNorm, KindRMSNorm:
			if out(x.Dim) {
				return bad("normalized_shape", x.Dim)
			}
		case KindExperts:
			if out(x.Num) || out(x.Dim) || out(x.FFN) || x.TopK <= 0 || x.TopK > x.Num {
				return fmt.Errorf("model: module %q has %d experts of %d -> %d, top-%d; all must be positive and top-k at most the experts", n.FQN, x.Num, x.Dim, x.FFN, x.TopK)
			}
		case KindAttention:
			if x.Heads <= 0 || x.KVHeads <= 0 || x.HeadDim <= 0 || x.Heads%x.KVHeads != 0 {
				return fmt.Errorf("model: module %q has heads=%d kv_heads=%d head_dim=%d; all must be positive and kv_heads must divide heads", n.FQN, x.Heads, x.KVHeads, x.HeadDim)
			}
		}
	}
	return nil
}

// MLP builds a Sequential of Linear layers (with bias) and activations: dims[0] -> dims[1] -> ...,
// with act between consecutive Linear layers, trained with MSE loss at the given batch.
// seed-mlp is MLP("seed-mlp", KindReLU, 10, 100, 1000, 10).
func MLP(name string, act Kind, batch int, dims ...int) (*Model, error) {
	if len(dims) < 2 {
		return nil, fmt.Errorf("model: an MLP needs at least an input and an output width, got %v", dims)
	}
	if len(dims) > MaxLayers+1 {
		return nil, fmt.Errorf("model: an MLP of %d Linear layers has more than %d; check the widths", len(dims)-1, MaxLayers)
	}
	for i, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("model: MLP width %d is %d; widths must be positive", i, d)
		}
		if d > MaxWidth {
			return nil, fmt.Errorf("model: MLP width %d is %d, more than %d; check the widths", i, d, MaxWidth)
		}
	}
	if batch <= 0 {
		return nil, fmt.Errorf("model: batch = %d; it must be positive", batch)
	}
	root := &Module{Kind: KindSequential}
	for i := 0; i+1 < len(dims); i++ {
		if i > 0 {
			root.Children = append(root.Children, &Module{Name: strconv.Itoa(len(root.Children)), Kind: act})
		}
		root.Children = append(root.Children, &Module{Name: strconv.Itoa(len(root.Children)), Kind: KindLinear, In: dims[i], Out: dims[i+1], Bias: true})
	}
	return &Model{Name: name, Family: "mlp", Root: root, Loss: KindMSE, Batch: batch, InDim: dims[0]}, nil
}
