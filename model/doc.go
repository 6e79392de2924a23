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
// Invariants: every Module's Params() is exact (the counts of the published models are tested);
// sizes are positive; Validate reports anything else as an error prefixed "model:".
package model
