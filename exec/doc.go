// Package exec really runs sharded training: every rank of the mesh is a goroutine holding its
// shard of the weights, running its rank's Program (program.Lower) op by op with the float32
// kernels of exec/kernels, and exchanging data through the collectives of exec/comm.
//
// It measures what happened — each op's duration, the bytes each rank sends per collective kind
// and mesh dimension, the bytes allocated per category (params, grads, optimizer, activations,
// workspace, comm) and the peak of live bytes — and checks itself against single-device training.
// It never imports costmodel or sim: a measurement cannot borrow a prediction.
//
// Conventions:
//   - Parameters are initialised in full from the seed and the parameter's name, then sliced, so a
//     run on any mesh starts from the same weights as the single-device run: Linear weights and
//     biases U(-1/sqrt(in), 1/sqrt(in)) and Embedding N(0, 1) as torch.nn does, norms 1 and 0.
//   - The batch is drawn once from the seed: inputs and targets N(0, 1) for an MLP, random token
//     ids with next-token targets for a transformer. Data-parallel rank d takes samples
//     [d B/dp, (d+1) B/dp); microbatches run one after another (gradient accumulation).
//   - Every rank is a goroutine with mesh coordinates (pp, dp, tp). It runs the virtual pipeline
//     stages of its pp coordinate (stage i on pp rank i mod pp) in the order of the strategy's
//     schedule (Schedule: gpipe, 1f1b, interleaved), keeping each (stage, microbatch)'s tensors
//     from its forward to its backward. Activations and their gradients go to the neighbour stage
//     point to point (pipeline.go: one buffered slot per sender, receiver, microbatch and
//     direction, the bytes counted per message on pp); a head tied to the embedding has its two
//     stages' gradients summed over pp.
//   - ZeRO (zero.go): stages 1 and 2 reduce-scatter each gradient bucket over dp and keep the
//     optimizer state of their chunk, stage 2 drops the whole gradients until the next backward,
//     and both all-gather the updated parameters; stage 3 keeps a 1/dp chunk of every parameter,
//     gradient and optimizer state, gathers a parameter where the Program gathers it (before each
//     op's forward, backward and recomputed forward) and frees it when the op ends, and
//     reduce-scatters each gradient right after its backward. Recompute runs the forward ops the
//     Program replays in backward (full) or the attention's recomputation (selective).
//   - Memory is measured from the slices the allocator hands the kernels and collectives
//     (alloc.go). A microbatch's tensor is an activation when the rank still holds it at the end
//     of that microbatch's forward and workspace otherwise, whatever the Program declares; the
//     rank then compares what it held with the Program's saved tensors, so a lowering that forgets
//     a saved tensor or frees one late is a memory error (Result.MemoryErrors). The Go heap's live
//     bytes and its allocations per step after the warm-up are reported beside the allocators'
//     count; the communicator's and pipeline's message copies are not in the count.
//   - Executed: single device, data, tensor and pipeline parallel and their dp x pp x tp hybrids,
//     ZeRO 0-3, recompute none/selective/full, sequence parallel, eager attention (probabilities
//     saved) or attn=flash/flash1 (the softmax's log-sum-exp saved, the probabilities recomputed
//     in backward, as FlashAttention of either generation does). Context parallel, dropout,
//     mixed precision and overlapped communication are priced by the cost model but not
//     executed; Run (or tpsim exec) says so instead of running them.
package exec
