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
//     all-reduce across, all-gather inside (NCCL's tree/ring hierarchy; DESIGN.md).
//   - Pipeline: a step is (m + (p-1)/v) x (t_f + t_b) of the slowest stage (Narayanan et al. 2021
//     §2.2, bubble (p-1)/(v m)).
//   - Memory: parameters, gradients and optimizer state from the precision (Rajbhandari et al.
//     2020 §3.1: 2 + 2 + 12 bytes per parameter for mixed-precision Adam) divided by the ZeRO stage;
//     activations are the values the Program saves for backward, times the microbatches in flight
//     (1F1B: p - r on pipeline rank r; GPipe: all m; interleaving multiplies by 1 + (p-1)/(p v),
//     Korthikanti et al. 2022 §4.2.3).
//
// Two ways to price a strategy, equal by test: Predict prices a Program op by op; Estimate (and an
// Estimator, for search loops: its Totals allocates nothing) prices the default Megatron plan of a
// transformer or an MLP in closed form per layer type, one layer once for all the identical
// layers, in microseconds where building the Program takes milliseconds. For other plans and
// models it returns an error that says to use Predict.
package costmodel
