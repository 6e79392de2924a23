// Package program is tpsim's one description of a training step: Lower(model, strategy) turns a
// model and a parallel strategy into a Program, the ops every rank runs, which three interpreters
// read: exec runs it on goroutine ranks, sim lays it out on a timeline, costmodel prices it (op by
// op in Predict, and in closed form from the same Program lowered with one and two layers per
// stage). Nothing prices or runs a step that is not a Program's.
//
// Invariants of a Program p (tests in this package and the interpreters rely on them):
//
//   - Stages: len(p.Stages) = pp x vpp; stage i is model chunk i/pp of pipeline rank i mod pp
//     (Narayanan et al. 2021 §2.2.2), and holds the consecutive transformer layers
//     [LayerLo, LayerHi) that StageLayers assigns it (StageCounts: uneven splits give the first
//     and last stages, which also hold the embedding and the head, a layer less first).
//   - Every rank of a stage runs the same ops; ranks differ only in the shard (tp coordinate)
//     and the samples (dp, cp) they hold. Shapes are local.
//   - Forward and Backward are one microbatch, run p.Microbatches times per step in the order
//     of the schedule (Schedule); Optimizer runs once per step after the last backward.
//   - A stage's Forward begins with its Recv (but on the first stage) and ends with its Send
//     (but on the last); its Backward begins with the Recv of its output's gradient (but on the
//     last stage) and ends with the Send of its input's gradient (but on the first). A receive
//     carries no cost of its own: the send moves the bytes.
//   - A backward op of a compute kind has Fwd set to the index of the forward op it
//     differentiates, and Out[i] is the gradient of that op's In[i] (-1: not needed).
//   - Values are numbered per stage (ValueID indexes Stage.Values); Saved values live from
//     their forward op to the last backward op that reads them, and every value an op reads or
//     writes is in the Free list of exactly one op, its last use in forward-then-backward order.
//   - Communication ops (OpKind.IsComm: the collectives, Send and Recv) carry Dim, the mesh
//     dimension of their group ("tp", "cp", "dp" for the data-parallel group of dp x cp ranks,
//     "pp"), Group, SentBytes (what one rank sends: docs/architecture.md's bytes-per-rank table) and FullBytes (the whole
//     tensor); every other op computes and carries FLOPs, MemBytes and Elems.
//   - Data-parallel gradient reductions are Optimizer ops in DDP buckets, filled in reverse
//     parameter registration order until they hold Strategy.BucketBytes (OptimizerOps, the one
//     place that builds the optimizer phase); ZeRO-3's gathers and reduce-scatters are Forward
//     and Backward ops on "dp" next to the ops that use the parameters. Under full or per-op
//     recompute a layer's recomputed forward gathers its parameters and its backward ops read
//     them without a gather of their own (with tensorlists=on they gather again). A gather's
//     parameters serve the ops after it in its phase up to the unit's next gather; its prefetch
//     unit is PrefetchUnit of its module.
//   - Lower is deterministic: the same model and strategy give the same Program.
package program
