// Package strategies is the planner's language: how a model is split across devices and trained.
//
// A Mesh gives the size of each parallel dimension (Dim), pp, dp, cp and tp; its product is the
// device count. Ranks are numbered in DimOrder, pp outermost and tp fastest (Megatron-LM's order),
// so that a tensor-parallel group is a run of consecutive devices. A Plan says how tensor
// parallelism shards each linear layer (a Style per module pattern: colwise, rowwise, sequence,
// ...; MegatronPlan is Megatron-LM's). A Strategy is a mesh with its typed options: microbatch and
// global batch, sequence length, ZeRO stage, Recompute, sequence parallel, the pipeline Schedule
// and its virtual stages, Precision, Optimizer, Attention, overlap, the kernels' fusion and the
// other switches OptionKeys lists.
//
// Parse reads the strategy string of the command line ("dp=8,tp=8,mbs=1,zero=1"); Short and String
// print the canonical form; Resolve fills in what depends on the model (the global batch and the
// sequence length) and Validate says, naming the rule, why a strategy cannot run a model. ParseFix
// reads the knobs a search must not vary, and Enumerate lists every valid strategy of a model on a
// number of devices (a Space), with the count of candidates each rule rejected (RejectReasons).
// Nothing here prices or runs a strategy: program lowers one, costmodel and sim price it, exec runs
// it.
package strategies
