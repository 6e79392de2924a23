package model

import (
	"fmt"
	"strconv"
)

// Spec is tpsim's own JSON form of a model: a transformer configuration or an MLP, with a name
// and where it comes from. The presets are written in this form (presets.json), Model.Spec writes
// it, and Load and FromHFConfig read it back:
//
//	{"name": "my-gpt", "transformer": {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4,
//	  "head_dim": 16, "ffn": 256, "vocab": 256, "seq": 32, "learned": true, "bias": true, "batch": 8}}
//	{"name": "my-mlp", "mlp": {"activation": "ReLU", "dims": [100, 1000, 10], "batch": 10}}
//
// Exactly one of Transformer and MLP is set.
type Spec struct {
	Name      string `json:"name,omitempty"`
	Family    string `json:"family,omitempty"` // default "llama" for a gated RMSNorm transformer, "gpt" for another, "mlp"
	Source    string `json:"source,omitempty"`
	Published int64  `json:"published,omitempty"` // parameter count published by the model's authors, 0 if none

	Transformer *Transformer `json:"transformer,omitempty"`
	MLP         *MLPSpec     `json:"mlp,omitempty"`
}

// MLPSpec is the JSON form of the arguments of MLP.
type MLPSpec struct {
	Activation Kind  `json:"activation,omitempty"` // KindReLU (the default) or KindGELU
	Dims       []int `json:"dims"`                 // input width, hidden widths, output width
	Batch      int   `json:"batch"`                // samples per step
}

// Build returns the model s describes. It returns an error, prefixed "model:", when s is invalid.
func (s Spec) Build() (*Model, error) {
	if s.Name == "" {
		return nil, fmt.Errorf("model: the model has no name; set \"name\"")
	}
	if s.Published < 0 {
		return nil, fmt.Errorf("model: %q published = %d; it must be a parameter count, or 0 when none is published", s.Name, s.Published)
	}
	var m *Model
	var err error
	switch {
	case s.Transformer != nil && s.MLP != nil:
		return nil, fmt.Errorf("model: %q has both \"transformer\" and \"mlp\"; keep one", s.Name)
	case s.Transformer != nil:
		t := *s.Transformer
		family := s.Family
		if family == "" {
			family = "gpt"
			if t.Gated && t.RMSNorm {
				family = "llama"
			}
		}
		m, err = t.Build(s.Name, family)
	case s.MLP != nil:
		act := s.MLP.Activation
		if act == "" {
			act = KindReLU
		}
		if act != KindReLU && act != KindGELU {
			return nil, fmt.Errorf("model: %q mlp activation %q is not supported; use %q or %q", s.Name, act, KindReLU, KindGELU)
		}
		m, err = MLP(s.Name, act, s.MLP.Batch, s.MLP.Dims...)
		if err == nil && s.Family != "" {
			m.Family = s.Family
		}
	default:
		return nil, fmt.Errorf("model: %q has neither \"transformer\" nor \"mlp\"; set one", s.Name)
	}
	if err != nil {
		return nil, err
	}
	m.Source = s.Source
	m.Published = s.Published
	return m, nil
}

// Spec returns the JSON form of m. It returns an error when m is neither a transformer built by
// Transformer.Build nor an MLP built by MLP, whose trees have no JSON form.
func (m *Model) Spec() (Spec, error) {
	s := Spec{Name: m.Name, Family: m.Family, Source: m.Source, Published: m.Published}
	if m.Transformer != nil {
		t := *m.Transformer
		t.Batch = m.Batch
		s.Transformer = &t
		return s, nil
	}
	act, dims, ok := mlpShape(m.Root)
	if !ok || m.Loss != KindMSE || m.InDim != dims[0] {
		return Spec{}, fmt.Errorf("model: %q was not built by Transformer.Build or MLP, so it has no JSON form", m.Name)
	}
	s.MLP = &MLPSpec{Activation: act, Dims: dims, Batch: m.Batch}
	return s, nil
}

// mlpShape recovers the arguments of MLP from a tree it built: Linear layers with bias named "0",
// "2", ... with one activation kind between them.
func mlpShape(root *Module) (act Kind, dims []int, ok bool) {
	if root == nil || root.Kind != KindSequential || len(root.Children)%2 == 0 {
		return "", nil, false
	}
	for i, c := range root.Children {
		if c.Name != strconv.Itoa(i) || len(c.Children) != 0 {
			return "", nil, false
		}
		if i%2 == 1 {
			if act == "" {
				act = c.Kind
			}
			if c.Kind != act || (act != KindReLU && act != KindGELU) {
				return "", nil, false
			}
			continue
		}
		if c.Kind != KindLinear || !c.Bias || (i > 0 && c.In != dims[len(dims)-1]) {
			return "", nil, false
		}
		if i == 0 {
			dims = append(dims, c.In)
		}
		dims = append(dims, c.Out)
	}
	if act == "" {
		act = KindReLU
	}
	return act, dims, true
}
