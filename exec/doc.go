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
//   - Memory is accounted by an allocator that every tensor of the Program goes through, plus the
//     scratch buffers kernels need (workspace) and gradient buckets (comm). The communicator's
//     own message copies are not counted; the Go heap is reported beside the accounting.
//   - Executed: single device, data parallel, tensor parallel from any plan, and dp x tp, with
//     eager attention (probabilities saved) or attn=flash/flash1 (the softmax's log-sum-exp saved,
//     the probabilities recomputed in backward, as FlashAttention of either generation does). Pipeline
//     and context parallel, ZeRO and dropout are priced by the cost model but not executed; Run
//     says so instead of running them.
package exec
