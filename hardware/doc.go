// Package hardware describes where a model is trained: the accelerator (peak FLOP/s per dtype,
// memory, memory bandwidth), the levels of the network that joins many of them (8 GPUs per node
// on NVLink, nodes on InfiniBand), and how close real kernels get to the peaks.
//
// # Units
//
// Every quantity is in SI base units through the units package: FLOP/s, bytes, bytes per second,
// seconds, FLOPs; efficiencies are plain fractions in (0, 1]. JSON field names carry the unit
// (memory_bytes, bandwidth_bytes_per_s, latency_s). Datasheet capacities in "GB" are read as 1e9
// bytes, as datasheets define them; where the usable capacity differs the preset's notes say so.
// Peak FLOP/s are dense: NVIDIA's headline tensor figures with 2:4 sparsity are twice as large.
// A link's bandwidth is the line rate per device per direction.
//
// # Model
//
// A GEMM of f FLOPs runs at GEMMEfficiency(f) = GEMMLimit * f/(f+GEMMHalfFLOPs) of the peak for its
// dtype, i.e. it takes a fixed GEMMHalfFLOPs/(GEMMLimit*peak) plus f/(GEMMLimit*peak). On a CPU
// profile (GEMMParallelMACs > 0: the host) a product runs on one core, at its measured time when
// GEMMTimes holds its shape and on that curve against the peak over Cores otherwise, and splits
// over the cores its rank has from GEMMParallelMACs multiply-adds (GEMMThreads); its ranks'
// blocking collectives each cost Meeting(ranks) more (MeetOverhead, by the number of ranks). An elementwise op moving b bytes takes b/(MemMax*MemBandwidth). The fused FlashAttention kernel
// runs its FLOPs at FlashMax of the peak (Flash1Max for its first generation), or is bound by its
// bytes, whichever is slower. A collective among ranks that LevelFor (or LevelOf) places at
// level l moves its bytes at Bandwidth*Efficiency per device (the Simple protocol's bus
// bandwidth); a ring all-reduce of n bytes over p ranks sends 2(p-1)/p * n (the bus factor of
// nccl-tests doc/PERFORMANCE.md). On GPU links (levels named nvlink, pcie, ib, roce, ...)
// costmodel adds NCCL's latencies and protocol bandwidth shares (costmodel/nccl.go); on other
// levels (the host profile) a ring step costs Latency, as in Thakur, Rabenseifner and Gropp
// 2005, Sec. 4.
//
// # Invariants
//
// A Hardware returned by Parse, Load or Preset satisfies Validate:
//
//   - Name and Device.Name are not empty; Device.Peak has at least one dtype, all from Dtypes,
//     each positive; Memory and MemBandwidth are positive.
//
//   - There is at least one level. Level names are unique and not empty. Sizes are at least 2,
//     grow strictly outward and each is a multiple of the one inside it (units nest); the last
//     level's Size is 0, meaning unbounded. Bandwidth and Latency are positive.
//
//   - Every efficiency (each level's, GEMMMax, MemMax) is in (0, 1]; GEMMHalfFLOPs is positive;
//     GEMMTimes' sizes and times are positive; MeetOverhead and GEMMParallelMACs are not negative;
//     FlashMax and Flash1Max are 0 (no figure for that kernel) or in (0, 1]; so are GEMMAchieved
//     (0: the ceiling GEMMMax) and FP8GEMM (0: no FP8 figure); GEMMAchievedByStack's keys name
//     software stacks and its values are in (0, 1]. GEMMLimit = GEMMMax x GEMMAchieved, and
//     Efficiency.ForStack(stack) takes the stack's GEMMAchieved where it gives one.
//
//   - Level sizes are even (a pair of ranks never straddles two units) and at most 1<<24.
//
//   - Numbers are finite, and each lies in a range far outside every device known, so that a
//     mistyped exponent or unit is refused and every time priced stays finite: peaks in
//     [1e6, 1e19] FLOP/s, memory in [1e6, 1e15] bytes, its bandwidth in [1e6, 1e17] bytes/s, a
//     link's in [1e6, 1e14], latencies at most 1 s, fractions of a peak at least 0.001,
//     overlap_compute_slowdown at most 1, ... (hardware.go's limits, each with the figure it
//     is set against).
//
// A JSON key given twice in one object is an error (encoding/json would keep the last one).
// Validate reports every violation, one per line, prefixed "hardware:", naming the JSON field
// and the fix.
//
// # Presets
//
// The presets are JSON files embedded from presets/; Save writes one out so that a user can copy
// and edit it, and Load reads it back. Each preset cites the source of every number in its
// "sources" map (keyed by JSON path, levels by name); a test fails on a number without one.
// a100-80g, h100-96g, h100-sxm and h200 draw on validate/data/hardware.json and collectives.json
// (a test checks that the figures match those files), and their achieved fractions are fitted on
// published training runs (tpsim fit). b200, b300, gb200-nvl72, gb300-nvl72 (a 72-GPU NVLink
// level), mi300x, mi325x and mi355x (an 8-GPU Infinity Fabric level named xgmi) give datasheet
// peaks (fp4 and fp6 where the vendor does), memory, links and power, each cited; no training
// run of theirs is in the training split, so their achieved fractions are H100's by the rule
// their notes state, and the source of each such number starts with AssumedPrefix (Assumed lists
// them; tpsim hardware NAME prints them). The host profile (this machine, filled by
// calibration) is not a preset here.
package hardware
