// Package sim is a deterministic discrete-event simulator of one training step: it lays a
// Program (program.Lower) out on a timeline per pipeline rank, with a compute stream and a
// communication stream each, pipeline schedules (GPipe, 1F1B, interleaved 1F1B), data-parallel
// gradient buckets that overlap backward, ZeRO-3 parameter prefetch, and ranks sharing cores.
//
// It has no goroutines, no clock and no randomness: events are ordered by (time, sequence
// number), so the same Program and costs give the same Result, byte for byte.
//
// Symmetry: ranks that do identical work (the data-, tensor- and context-parallel replicas of a
// pipeline rank) are simulated once; a collective among replicas starts when the one simulated
// member is ready, since all members reach it at the same time. A run of 16,384 GPUs costs what
// one pipeline does.
//
// Op costs come from a Coster (costmodel.Coster satisfies it). Units are seconds.
//
// Streams and dependencies. Each simulated rank runs its schedule's tasks (forward or backward
// of one microbatch on one model chunk) in order on its main sequence: compute ops and the
// collectives that block them (tensor- and context-parallel) one after another, as the Program
// lists them; with tpoverlap=on a backward tensor-parallel collective that Megatron-LM runs under
// a neighbouring linear's product takes only what it adds beyond that product (Coster.Hidden, the
// closed form's rule too). Asynchronous communication runs on the rank's link of its mesh dimension, one
// collective at a time, the one that became ready first (ties in Program order): data-parallel
// gradient buckets (when the strategy overlaps them, each starts once the last microbatch's
// backward has produced its gradients; otherwise after the whole backward), ZeRO-3 parameter
// gathers (when overlapping, prefetched Strategy.Prefetch units ahead: a unit's gathers may start
// once the unit that many before it has started, program.PrefetchUnit) and ZeRO-3 gradient
// reduce-scatters (after the backward op that produces the gradients) all share the
// data-parallel link, as NCCL serialises the collectives of one communicator (engine.tryStart
// cites the sources). A pipeline receive waits for the matching send of the neighbouring stage;
// the send occupies the sender for the transfer time.
//
// Overlap slowdown. While one of a rank's links runs a collective, the rank's main sequence
// advances at 1/(1+σ) of its speed (Coster.OverlapSlowdown: NCCL's kernels share the device);
// the running op's end moves whenever the link starts or stops (engine.retime), and what that
// adds counts as exposed communication. The closed form applies the same rule to the link it
// walks (costmodel's slowedBy).
package sim
