// Package kernels holds the float32 compute kernels that the execution engine (package exec) runs:
// matrix multiply, elementwise activations, normalisation, causal (grouped-query) self-attention,
// embedding, losses, optimizers and seeded initialisation.
//
// # Conventions
//
//   - Every tensor is a row-major []float32 with its dimensions passed explicitly. A matrix
//     "[m, n]" has element (i, j) at index i*n+j. Activations are [rows, cols] with one row per
//     token (rows = batch*seq) or per sample.
//   - Linear weights are [out, in] as in torch.nn.Linear, so a Linear layer is y = x Wᵀ + b.
//   - Kernels write into caller-provided dst slices and allocate nothing (the BLAS implementation
//     behind MatMul may; see below). Shapes are checked on entry: a slice whose length does not
//     match its stated dimensions is a programmer bug and panics with a message starting
//     "kernels: ". Each function documents this as "It panics if ...".
//   - Kernels start no goroutines and read no clock. Matrix products go through gonum's BLAS
//     interface gonum.org/v1/gonum/blas/blas32 (blas32.Gemm on blas32.General), so a different
//     implementation can be swapped in with blas32.Use. The default pure-Go implementation
//     (gonum.org/v1/gonum/blas/gonum) splits a product over GOMAXPROCS worker goroutines once
//     it has at least 4 blocks of 64×64 in the output (for example 256×128); smaller products
//     run serially on the calling goroutine.
//   - Elementwise kernels allow dst to alias an input of the same shape (in-place use), as noted
//     on each function. MatMul's dst must not alias a or b.
//   - Row reductions (softmax sums, norm statistics, log-sum-exp, loss sums) accumulate in
//     float64 and store float32.
//
// # Gradients: overwrite or accumulate
//
// Gradients of activations (dx, dq, dk, dv, dlogits, dy) are overwritten: the kernel sets every
// element. Where two branches meet (a residual connection), the engine adds them with AddInPlace.
// Gradients of parameters (dweight, dbias of Linear, LayerNorm, RMSNorm and Embedding) are
// accumulated: the kernel adds to what is there, so gradients of several micro-batches sum in place
// and the engine zeroes them once per optimizer step.
//
// # What forward saves for backward
//
//	Linear           x (the input); W is the parameter
//	ReLU, GELU, SiLU x (the input)
//	Mul              both inputs
//	Softmax          y (the output)
//	LayerNorm        x, mean [rows], rstd [rows] (written by LayerNorm)
//	RMSNorm          x, rstd [rows] (written by RMSNorm)
//	Attention        q, k, v and the probabilities probs [batch, heads, seq, seq] (written by
//	                 AttentionForward); backward also needs a scratch of seq*seq floats
//	Attention (LSE)  q, k, v and the log-sum-exp lse [batch, heads, seq] (written by
//	                 AttentionForwardLSE, what attn=flash/flash1 keep); backward recomputes the
//	                 probabilities in a scratch of 2*seq*seq floats
//	Embedding        ids
//	CrossEntropy     nothing: it returns dlogits together with the loss
//	CrossEntropy     the logit shard, the targets and the lse [rows] (written by
//	(vocab-parallel) CrossEntropyCombine from CrossEntropyStats' gathered statistics)
//	MSE              nothing: it returns dy together with the loss
//
// # Fused qkv layout
//
// The fused qkv projection of an attention block is laid out by key/value group, as documented in
// package model: for each of the KVHeads groups, its Heads/KVHeads query heads, then its key head,
// then its value head, each HeadDim columns of the qkv output. Query head h uses key/value head
// h/(Heads/KVHeads). SplitQKV and MergeQKV convert between this layout and separate q, k, v
// tensors whose heads are contiguous in the columns ([rows, heads*headDim]).
//
// # Randomness
//
// There is no global random source: initialisers take a *math/rand/v2.Rand that the caller seeds
// (NewRand builds one on a PCG source), so the same seed gives the same bytes on every run.
package kernels
