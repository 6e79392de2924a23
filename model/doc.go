// Package model describes what is trained: a tree of modules with PyTorch-style fully-qualified
// names, their shapes, and the batch and sequence a step runs on.
//
// Names follow torch.nn: the children of a Sequential are "0", "1", "2", ...; a transformer has
// "embed", "pos" (learned position embeddings only), "layers.N.norm1", "layers.N.attn.qkv",
// "layers.N.attn.proj", "layers.N.norm2", "layers.N.mlp.fc1", "layers.N.mlp.fc2" (or
// "layers.N.mlp.gate", "up", "down" for SwiGLU), "norm" and "head".
//
// Layouts that sharding relies on:
//   - Linear weights are [out, in] as in torch.nn.Linear.
//   - The fused qkv projection of an Attention module is laid out by key/value group: for each of
//     the KVHeads groups, its Heads/KVHeads query heads, then its key head, then its value head, each
//     HeadDim rows. A contiguous Shard(0) of the weight over t ranks, t dividing KVHeads, therefore
//     gives every rank whole groups (Megatron-LM lays out its fused QKV the same way).
//
// Where models come from:
//   - Preset(name) and PresetNames(): seed-mlp, gpt-tiny, the GPT-3 sizes of Brown et al. 2020,
//     Megatron-LM's 22B, 530B and 1T (Korthikanti et al. 2022, Narayanan et al. 2021), and Llama 2
//     and 3. They live in presets.json, in tpsim's JSON form; each has a Source citing its paper or
//     config and, where the authors publish an exact figure, the Published parameter count.
//   - The mixture-of-experts presets: Mixtral 8x7B and 8x22B, DeepSeek-V3, Kimi K2, Qwen3-30B-A3B and
//     235B-A22B, Llama 4 Scout and Maverick (text models), gpt-oss-20b and 120b, each with its config
//     in testdata and its published total and active counts in its Source (see moe.go and moe_test.go).
//   - FromHFConfig(data, name): a Hugging Face config.json of model_type llama, mistral, qwen2, gpt2
//     or gpt_neox, or (moe.go, hfmoe.go) mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3,
//     kimi_k2, llama4 (its text_config), gpt_oss, qwen3, gemma2, gemma3 (text_config) and phi3; fields that set the parameter count are required, others take the Hugging Face
//     defaults, and Seq is min(max_position_embeddings, HFSeqCap) for rotary models, and at most
//     the sliding attention window of a model that has one (see FromHFConfig).
//   - tpsim's JSON form (Spec): {"name": ..., "transformer": {...}} or {"mlp": {...}};
//     Model.Spec writes it and FromHFConfig reads it back. Every size must be given (a missing
//     one is an error that names it: the form has no defaults).
//   - Load(nameOrPath): a preset name, or a path to either kind of file (a directory stands for its
//     config.json).
//
// Mixture-of-experts layers (KindMoE, KindExperts), multi-head latent attention
// (KindLatentAttention), attention sinks, q/k norms, Gemma's post-norms and DeepSeek-V3's
// multi-token prediction modules (Model.MTPParams, outside the tree) are counted, total
// (Params) and active (ActiveParams: a token's top-k routed experts, not the others), but
// Model.Lowerable refuses them for pricing until issue 34 lowers them.
//
// Invariants: every Module's Params() is exact (the counts of the published models are tested);
// sizes are positive and at most MaxWidth, a transformer has at most MaxLayers blocks and
// MaxParams parameters, so every count fits in int64; Validate reports anything else as an error
// prefixed "model:". Errors about a file name it, and for malformed JSON the line and column; a
// JSON key given twice in one object is an error (encoding/json would keep the last one).
// Counts are plain parameter (element) counts; bytes depend on a dtype chosen elsewhere.
package model
