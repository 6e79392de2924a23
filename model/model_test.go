package model

import (
	"strings"
	"testing"
)

func TestTransformerValidateRejects(t *testing.T) {
	ok := Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", ok, err)
	}
	set := map[string]func(*Transformer, int){
		"hidden":   func(c *Transformer, v int) { c.Hidden = v },
		"layers":   func(c *Transformer, v int) { c.Layers = v },
		"heads":    func(c *Transformer, v int) { c.Heads = v },
		"kv_heads": func(c *Transformer, v int) { c.KVHeads = v },
		"head_dim": func(c *Transformer, v int) { c.HeadDim = v },
		"ffn":      func(c *Transformer, v int) { c.FFN = v },
		"vocab":    func(c *Transformer, v int) { c.Vocab = v },
		"seq":      func(c *Transformer, v int) { c.Seq = v },
	}
	for field, f := range set {
		for _, v := range []int{0, -1} {
			c := ok
			f(&c, v)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), "model: "+field+" = ") {
				t.Errorf("%s = %d: error %v; want one naming %s", field, v, err, field)
			}
			if _, err := c.Build("x", "gpt"); err == nil {
				t.Errorf("%s = %d: Build did not fail", field, v)
			}
		}
		// Sizes past the limits are rejected too (they would overflow int64 or build a huge tree).
		c := ok
		f(&c, MaxWidth+1)
		if field == "heads" || field == "kv_heads" {
			c.Heads, c.KVHeads = MaxWidth+1, MaxWidth+1
		}
		if c.Validate() == nil {
			t.Errorf("%s = %d: no error", field, MaxWidth+1)
		}
	}
	c := ok
	c.KVHeads = 3
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "not a multiple of 3 key/value heads") {
		t.Errorf("kv_heads 3 of 4 heads: error %v", err)
	}
	// Every size at its limit: far more than MaxParams, and no overflow on the way.
	big := Transformer{Hidden: MaxWidth, Layers: MaxLayers, Heads: MaxWidth, KVHeads: MaxWidth, HeadDim: MaxWidth, FFN: MaxWidth, Vocab: MaxWidth, Seq: MaxWidth}
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "parameters, more than") {
		t.Errorf("every size at its limit: error %v; want too many parameters", err)
	}
}

func TestModelValidateRejects(t *testing.T) {
	lin := func(in, out int) *Module { return &Module{Name: "0", Kind: KindLinear, In: in, Out: out} }
	tests := []struct {
		name string
		m    Model
		want string
	}{
		{"no root", Model{Name: "m", Batch: 1}, `model: "m" has no modules`},
		{"zero batch", Model{Name: "m", Batch: 0, Root: lin(1, 1)}, `model: "m" batch = 0; it must be positive`},
		{"negative batch", Model{Name: "m", Batch: -2, Root: lin(1, 1)}, `model: "m" batch = -2; it must be positive`},
		{"linear in", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{lin(0, 3)}}},
			`model: module "0" (Linear) has in_features = 0; it must be positive`},
		{"linear out", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{lin(3, -1)}}},
			`model: module "0" (Linear) has out_features = -1; it must be positive`},
		{"embedding", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{{Name: "embed", Kind: KindEmbedding, Num: 0, Dim: 4}}}},
			`model: module "embed" (Embedding) has num_embeddings = 0; it must be positive`},
		{"embedding dim", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{{Name: "embed", Kind: KindEmbedding, Num: 4, Dim: -4}}}},
			`model: module "embed" (Embedding) has embedding_dim = -4; it must be positive`},
		{"linear too wide", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{lin(3, MaxWidth+1)}}},
			`model: module "0" (Linear) has out_features = 16777217, more than 16777216; check the sizes`},
		{"norm", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{{Name: "norm", Kind: KindRMSNorm}}}},
			`model: module "norm" (RMSNorm) has normalized_shape = 0; it must be positive`},
		{"attention", Model{Name: "m", Batch: 1, Root: &Module{Kind: KindSequential, Children: []*Module{{Name: "attn", Kind: KindAttention, Heads: 4, KVHeads: 0, HeadDim: 8}}}},
			`model: module "attn" has heads=4 kv_heads=0 head_dim=8; all must be positive and kv_heads must divide heads`},
	}
	for _, tt := range tests {
		err := tt.m.Validate()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Validate() = %v; want %q", tt.name, err, tt.want)
		}
	}
}

func TestMLPRejects(t *testing.T) {
	tests := []struct {
		batch int
		dims  []int
	}{
		{1, []int{10}},               // no output width
		{1, []int{10, 0}},            // zero width
		{1, []int{-1, 10}},           // negative width
		{0, []int{10, 10}},           // zero batch
		{1, []int{10, MaxWidth + 1}}, // past the limit
		{1, make([]int, MaxLayers+2)},
	}
	for _, tt := range tests {
		if _, err := MLP("m", KindReLU, tt.batch, tt.dims...); err == nil || !strings.HasPrefix(err.Error(), "model: ") {
			t.Errorf("MLP(batch %d, %d dims): error %v", tt.batch, len(tt.dims), err)
		}
	}
}
