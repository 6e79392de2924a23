package model_test

import (
	"fmt"

	"github.com/tpsim/tpsim/model"
)

func ExamplePreset() {
	m, err := model.Preset("seed-mlp")
	if err != nil {
		panic(err)
	}
	for _, n := range m.Root.Walk()[1:] {
		fmt.Printf("%s %s %d\n", n.FQN, n.Module.Kind, n.Module.Params())
	}
	fmt.Println("params", m.Params(), "batch", m.Batch, "loss", m.Loss)
	// Output:
	// 0 Linear 101000
	// 1 ReLU 0
	// 2 Linear 10010
	// params 111010 batch 10 loss MSELoss
}

func ExampleFromHFConfig() {
	config := []byte(`{"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
		"n_positions": 1024, "vocab_size": 50257}`)
	m, err := model.FromHFConfig(config, "gpt2")
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Name, m.Params(), m.Find("layers.11.attn.qkv").Out)

	_, err = model.FromHFConfig([]byte("{\n  \"model_type\": \"gpt2\",\n  \"n_embd\" 768\n}"), "config.json")
	fmt.Println(err)
	// Output:
	// gpt2 124439808 2304
	// model: config.json:3:12: invalid character '7' after object key
}
