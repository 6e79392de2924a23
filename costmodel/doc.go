// Package costmodel prices a Program on a Hardware: memory per rank by category, bytes sent per
// mesh dimension, FLOPs, and time for compute, communication, the pipeline bubble and the
// optimizer, giving step time, MFU, HFU and tokens per second.
//
// It is pure and deterministic: no goroutines, no clock, no randomness; the same Program and
// Hardware give the same Result, byte for byte, once encoded.
//
// Units: bytes, seconds, FLOPs (a multiply-add is 2). Memory and communication are per rank (the
// most loaded one); FLOPs are per step over all devices.
//
// The models and their sources:
//   - Compute: a roofline per op, max(FLOPs / (peak x eff(FLOPs)), bytes / (memory bandwidth x
//     MemMax)), where eff is the hardware's size-dependent GEMM efficiency (Williams et al. 2009,
//     "Roofline"; the efficiency curve is documented in package hardware).
//   - Collectives: alpha-beta per topology level (Thakur, Rabenseifner and Gropp 2005): a ring
//     step costs the level's latency, bytes move at the level's bandwidth x efficiency. A group
//     that spans nodes but has several members inside one is hierarchical: reduce-scatter inside,
//     all-reduce across, all-gather inside (NCCL's tree/ring hierarchy).
//   - Pipeline: the schedule's tasks (program.AppendSchedule: GPipe, 1F1B, interleaved; Narayanan et
//     al. 2021 §2.2) laid out on every pipeline rank, each waiting for its neighbour's task of
//     the same microbatch; the step is the longest path, the simulator's timeline when nothing
//     overlaps (for equal stages (m + (p-1)/v)(t_f + t_b), bubble (p-1)/(v m)).
//   - Overlap: communication that runs beside compute slows it, the main sequence advancing at
//     1/(1+σ) while the rank's link runs (hardware.Efficiency.OverlapSlowdown, σ = 0.189 in the
//     GPU presets from arXiv:2507.03114): in the ZeRO-3 link's walk and DDP's tail (slowedBy) and
//     in what a tensor- or context-parallel collective hides under a product (Coster.Hidden), the
//     rule the simulator follows (sim's engine.retime).
//   - Memory: parameters, gradients and optimizer state from the precision (Rajbhandari et al.
//     2020 §3.1: 2 + 2 + 12 bytes per parameter for mixed-precision Adam) divided by the ZeRO stage;
//     activations are the values the Program saves for backward, times the microbatches in flight
//     (1F1B: p - r on pipeline rank r; GPipe: all m; interleaving multiplies by 1 + (p-1)/(p v),
//     Korthikanti et al. 2022 §4.2.3).
//
// Two ways to price a strategy, equal by test, both composing per-stage Pieces with one
// function (compose: the pipeline timeline, the overlap rules, memory per rank): Predict prices
// a Program op by op; Derived (Estimate) is the closed form derived from the Program: the
// forward and backward of a model shortened to one layer (no pipeline: and two) or to five on
// four stages (1, 1, 2, 1 layers: first, middle and last kinds and one layer's difference),
// extrapolated in the layers, and each stage's optimizer phase from one layer's parameters
// (program.OptimizerPhase, which walks DDP's buckets until they repeat), memoized by exactly what
// changes each (uneven stages, any plan; TestDerivedAffineInLayers, and search's
// TestDerivedEqualsPredictOnWholeSpaces on every candidate of whole search spaces). A search
// lowers once per distinct per-layer configuration (GPT-3 175B on 256 A100: 111,054
// candidates, about 2,900 lowered); Quick does not lower at all for a candidate whose
// parameters, gradients and optimizer state alone exceed the device (Totals.PeakBound).
package costmodel
