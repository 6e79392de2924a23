// Package calibrate measures this machine through the kernels and collectives that exec runs, and
// fits the "host" hardware profile (hardware.Hardware) with which costmodel prices exec's runs.
//
// It lives under exec because it reads the clock and starts goroutines, which only exec may do.
// Like exec it never imports costmodel or sim. Each kernel and collective is measured in
// isolation: no training step of any model is run, so a prediction that uses the profile is never
// fitted to the run it predicts.
//
// # What is measured, and how it is fitted
//
// Each point is timed by a sampler: a warm-up call, then several repetitions, each calling the
// function back to back for a fixed share of the point's time budget; the point's time is the
// median over repetitions of the mean time per call. The GEMM grid and the kernel checks are
// timed interleaved: every repetition times each of them in turn, so that this shared machine's
// changes of speed (tens of milliseconds long) fall on all of them alike. Every fit is linear least squares on time
// with weights 1/t² (it minimises the squared relative error, so a 1 µs op counts as much as a
// 1 s one), with coefficients kept non-negative; its error is reported as the RMS and the largest
// relative error (model - measured)/measured over the points.
//
//   - Matrix multiply: kernels.MatMul on one core (gemm.SetThreads(1)), on dense data, with the
//     beta exec uses (1 for the backward-weight products, which accumulate), over the products
//     exec runs for the presets seed-mlp and gpt-tiny (forward, backward input and backward
//     weight, tp=2 shards, attention's per-head products) and larger ones up to 1024³; the
//     products of at least gemm.ParallelMACs are also timed split over every core. Every product
//     is kept in Efficiency.GEMMTimes, which the cost model uses for a product of that shape
//     (compare adds the model's own). Fitted for other shapes: time(f) = f/rate + intercept;
//     Device.Peak["fp32"] = cores × max(rate, best measured rate), Efficiency.GEMMMax = rate over
//     one core's peak, GEMMHalfFLOPs = (intercept − the elementwise kernel's call time, which
//     OpOverhead already charges) × rate, so that the cost model's one-core price is the fitted
//     line. Peak["bf16"] = fp32: exec computes in float32 whatever the strategy's precision.
//   - Elementwise: kernels.Add (streaming, memory-bound) alone and as exec runs an op — its output
//     allocated with make, the map, allocator, clock and trace-event bookkeeping of exec/rank.go
//     mimicked field for field — from 64 B to 32 MiB per buffer, bytes counted as the cost model
//     counts them (Op.MemBytes). Fitted time = OpOverhead + bytes/MemBandwidth to add as exec runs
//     it; MemMax = 1, since the bandwidth is the achieved rate. OpOverhead thus covers exec's
//     bookkeeping, make's fixed cost and the kernel call; make's zeroing (and page faults past a
//     few MiB) is in the bandwidth. ReLU is measured beside it and not fitted: on random signs it
//     is bound by branch mispredictions, not memory (its own line and a note say by how much).
//     The bookkeeping alone and make alone are measured and reported too, and a few kernels the
//     fits do not describe (GELU, LayerNorm, attention, cross-entropy, optimizer steps) are
//     timed at gpt-tiny and seed-mlp sizes against the price the profile gives them.
//   - Collectives: exec/comm's ring all_reduce, all_gather and reduce_scatter on 2..8 goroutine
//     ranks, from 4 B to 32 MiB (the largest only on 2, 4 and 8 ranks); a point's time is the
//     slowest rank's. One level {Name "host", Size 0, Efficiency 1} is fitted to all points:
//     time = steps·Latency + fraction·n/Bandwidth, with steps and fraction of the ring algorithm
//     (all-reduce 2(p−1) and 2(p−1)/p, the others p−1 and (p−1)/p; Thakur, Rabenseifner and
//     Gropp 2005, Sec. 4, as costmodel.CollectiveTime prices them). The report gives the error per
//     kind and group size and the level fitted to each group size and each kind alone; the notes
//     say when one level cannot fit them all.
//   - Contention: k = 1..8 goroutines each running the same work (one 256³ GEMM on one core,
//     then enough 64 Ki-element adds to take about as long) and meeting in an all-reduce of one
//     float after each; Slowdown[k−1] = the median over repetitions of the wall time with k over
//     the wall time alone timed just before it, at least 1. Cores = runtime.NumCPU().
//     MeetOverhead[k−1]: k = 2..8 ranks each running 50 µs of adds then the all-reduce, less
//     the adds of the k ranks at once and the all-reduce back to back, per meeting.
//   - Device.Memory is the physical RAM (sysinfo(2) on Linux; elsewhere an assumed 16 GiB, said
//     so in the notes and sources).
//
// The default calibration takes about 20 s on 2 quiet cores (18-21 s measured 2026-12-07) and
// minutes on a loaded machine (138 s with a load average of 23 the same day: the collective and
// core-sharing phases wait for ranks that must be scheduled together); Options.Quick about 2 s,
// with fewer points. Each point has a time budget and each core-sharing run stops at k times its
// budget, so the duration stays bounded whatever the machine does. The report also says what share of the CPU other
// processes took meanwhile (from /proc on Linux): a busy machine gives slower, noisier figures,
// and the notes say so.
//
// # Invariants
//
// The profile Run returns satisfies hardware.Validate; its name is "host"; every number has an
// entry in Sources saying how it was measured and the fit's error; Source names the machine (CPU
// model, cores, GOOS/GOARCH, Go version), the date and the duration; Slowdown[0] = 1 and every
// entry is at least 1; MemMax and the level's Efficiency are 1.
//
// # Units
//
// SI base units through package units: seconds, bytes, FLOPs, bytes/s, FLOP/s. Relative errors
// are plain fractions (0.1 = 10%).
//
// # Cache
//
// SaveCache writes the profile to os.UserCacheDir()/tpsim/host.json with the Fingerprint of this
// machine and build (CPU model, NumCPU, GOMAXPROCS, GOOS, GOARCH, Go version, FormatVersion).
// Cached reads it back; a fingerprint that differs gives a *StaleError naming what changed, a
// missing file an error wrapping ErrNoCache; both say to run `tpsim calibrate`.
package calibrate
