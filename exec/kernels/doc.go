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
//   - Kernels write into caller-provided dst slices and allocate nothing (a product large enough
//     to split over goroutines allocates their bookkeeping). Shapes are checked on entry: a slice
//     whose length does not match its stated dimensions is a programmer bug and panics with a
//     message starting "kernels: " (or "gemm: " from the matrix multiply). Each function
//     documents this as "It panics if ...".
//   - Kernels read no clock. Matrix products (MatMul, the Linear kernels, attention) run
//     package gemm's Sgemm, a blocked AVX2/FMA GEMM tested against gonum's pure-Go blas32. A
//     product of at least gemm.ParallelMACs multiply-adds is split over the cores no other product
//     holds, up to gemm.SetThreads; smaller products, and every other kernel, run on the calling
//     goroutine.
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
// # Speed: what exec needs, and why the kernels are frozen
//
// exec's kernels need to be fast enough that a training step's time is spent where a GPU's is
// (matrix products, then memory-bound elementwise ops and collectives), not in interpreter-like
// overhead that no cost model prices; they do not need to be fast in absolute terms. The cost
// model never assumes a kernel speed for this machine: `tpsim calibrate` (package
// exec/calibrate) and compare's per-round re-timing measure whatever speed the kernels run at,
// and the prediction is priced from those measurements. A faster GEMM moves the measured and
// the predicted step together and leaves the prediction's error where it was.
//
// They are at that point: exec's step is at par with PyTorch 1.13 on OpenBLAS at realistic
// shapes (docs/exec.md, "Speed"; the per-machine logs in docs/benchmarks/, e.g. single per
// core 0.95-0.98 of PyTorch's step on a Zen 4, 2026-12-04, scripts/peers/vs_torch.sh). So the
// kernels (about 3,100 lines of assembly: gemm's micro-kernels, the elementwise, norm and
// exponential kernels) are frozen: change them to fix a bug or to keep the purego build's bits,
// not for speed. Further tuning needs a prediction that depends on it, named in the change: a
// measured effect the cost model prices (a mechanism whose price a faster kernel would expose)
// or a compare row whose error a kernel's speed is shown to cause. The purego build
// (`-tags purego`) runs the same tests without assembly.
//
// # Randomness
//
// There is no global random source: initialisers take a *math/rand/v2.Rand that the caller seeds
// (NewRand builds one on a PCG source), so the same seed gives the same bytes on every run.
package kernels
