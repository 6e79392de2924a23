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
//
// # The match check
//
// Compare (max_rel_diff_vs_single) holds a run to single-device training of the same model,
// batch, seed and optimizer (Single), which it records its gradients' magnitudes for
// (GradStats). Exact arithmetic would give both the same bits; float32 sums in another order do
// not, so the check asks whether each difference is one rounding can explain, and measures the
// rest against what training did:
//
//   - Losses: |loss - loss_ref| / |loss_ref| at every step.
//   - A parameter w after T steps, elementwise: e_i = max(0, |w_i - w_ref,i| - f_i), and the
//     parameter's figure is ||e|| / ||w_ref - w_0||, the excess over the norm of the update
//     the reference gave it (w_0 the initial value: every mesh starts from it), or over ||w_ref||
//     when the reference never moved it. An update, not the weight, is what a wrong lowering
//     changes: SGD's 4 steps at lr 0.01 move gpt-tiny's layers.0.mlp.fc1.weight by 0.0029, 0.03%
//     of its norm of 9.3, so relative to the weight a gradient wrong by 1e-3 would read 3e-7.
//
// The floor f_i has two terms. Storage: each step rounds w_i to float32, up to one ulp (2u|w|, u =
// 2^-24) apart in two runs whose updates differ by less than an ulp, so T steps contribute
// 2uT|w_ref,i|. Gradients: one element of a gradient sums K = tokens-per-step terms; in another
// order the sum rounds differently, by about u sqrt(K) times the partial sums (Higham and Mary
// 2019, "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5):
// the error grows as sqrt(K) u with high probability), and with terms of random sign the partial
// sums are of the size of the tensor's largest gradient G, so two runs' gradients differ by up
// to delta = 2u sqrt(K) G. The optimizer turns a gradient difference into a parameter
// difference with its gain, the derivative of the update with respect to the gradient, summed
// over the steps (GradStats.Gain):
//
//   - SGD, w -= lr g: gain lr per step; f_i gets delta T lr.
//   - Adam (Kingma and Ba 2015, Algorithm 1), w -= lr m̂/(sqrt(v̂)+eps): m̂_s weighs the
//     gradients of steps t <= s by (1-beta1) beta1^(s-t)/(1-beta1^s), which sum to 1, so gradients
//     that differ by at most delta at every step move m̂_s by at most delta and step s by at most
//     lr delta/(sqrt(v̂_s)+eps), read from the reference's v after each step. v̂'s own change,
//     m̂ d(sqrt(v̂))/(sqrt(v̂)+eps)^2 with |m̂| <= sqrt(v̂) in the common case (Kingma and Ba §2.1),
//     adds at most as much: f_i gets 2 delta sum_s lr/(sqrt(v̂_s,i)+eps).
//
// Both are first order: they leave out that parameters apart by rounding give later gradients
// apart by more, which over exec's few steps is small beside them.
//
// Where the exact gradient is zero, a key projection's bias (softmax ignores a shift that is the
// same for every key), the computed one is rounding noise, sqrt(v̂) is far below eps, and Adam's
// gain is lr/eps = 1e5 at lr 1e-3: noise of 1e-10 moves the element by 1e-5, differently in every
// summation order. The floor allows it (about 2 lr T delta/eps), where a relative norm of the
// weight read it as 4.1e-5 on gpt-tiny pp=2,dp=2 after 4 steps.
// Elsewhere (sqrt(v̂) >> eps) the gain is lr/sqrt(v̂) and the floor is a small multiple of u.
//
// Measured on gpt-tiny after 4 steps, pp=2,dp=2 / pp=2,tp=2,schedule=1f1b / dp=2,zero=3 /
// dp=2,zero=1 / tp=2,recompute=full / tp=2,sp=on,recompute=selective under Adam and SGD: every
// parameter within its floor (its largest |difference|/floor, Match.WorstParam.FloorUse, at most
// 0.74, on a tensor-parallel mlp.fc2.weight under Adam), so max_rel_diff_vs_single is the losses'
// 4.4e-8; MatchTolerance is 1e-5. What rounding cannot explain stays outside (match_test.go):
// one weight of mlp.fc1 off by 1e-3 of itself reads 1.5e-4 under Adam and 2.5e-2 under SGD (a
// relative norm of the weight read 6e-9), and a dropped all-reduce of the gradients over dp, or of
// the norms' gradients over tp under sp, reads 0.8 to 1.35.
package exec
