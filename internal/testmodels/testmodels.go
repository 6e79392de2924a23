// Package testmodels builds the tiny transformers that tests of several packages lower, price and
// run: one definition of each, so a test in strategies and one in program mean the same model.
package testmodels

import (
	"testing"

	"github.com/tpsim/tpsim/model"
)

// GPT is gpt-tiny's shape (biases, learned positions, LayerNorm, GELU) with the given depth,
// batch 8.
func GPT(t testing.TB, layers int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 8}.Build("gpt-tiny", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Llama is a Llama-shaped tiny transformer (grouped-query attention with 2 key/value heads for 4
// query heads, gated SiLU MLP, RMSNorm) with the given depth, batch 8.
func Llama(t testing.TB, layers int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32,
		Gated: true, RMSNorm: true, Batch: 8}.Build("llama-tiny", "llama")
	if err != nil {
		t.Fatal(err)
	}
	return m
}
