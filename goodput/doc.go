// Package goodput accounts for what a training at scale loses to failures, restarts, checkpoints
// and stragglers: goodput = useful time / wall time, with its breakdown, as a closed form
// (ClosedForm) and as a seeded, deterministic event simulation (Simulate) that agree.
//
// It imports units, reports (its text writer) and the standard library (units, reports <- goodput).
//
// # Failures
//
// Rates are per GPU-hour by component (gpu, node, network, software, planned) and the job's rate
// is their sum times the GPU count: a synchronous job stops on any failure. The defaults,
// Llama3Rates, are Table 5 of Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783,
// Section 3.3.4): 466 interruptions in a 54-day snapshot on up to 16,384 H100 GPUs, 47 planned
// and 419 unexpected (GPU rows 268, host rows and unplanned host maintenance 53, network 35,
// software bug, dependency and NCCL watchdog 63). Each count is divided by 16,384 x 54 x 24 =
// 21,233,664 GPU-hours: 1.97e-5 unexpected interruptions per GPU-hour, a job MTBF of 3.09 h at
// 16,384 GPUs. These rates are FITTED to that one run; the component grouping is ours. Rates
// are overridable (Config.Rates).
//
// # Time lost per failure
//
// An unexpected failure costs detection (default 10 min, PyTorch's default NCCL collective
// timeout) + restart (default 5 min, an ASSUMPTION: the paper gives no figure) + the checkpoint
// read + the recomputation of the work since the last checkpoint, (k t + C)/2 on average; without
// hot spares a hardware failure (gpu, node, network) also waits for the replacement (default 1 h,
// an ASSUMPTION). A planned interruption checkpoints first: C + restart + read, no work lost.
//
// # Checkpoints
//
// Size = parameters x bytes per parameter (default 14: bf16 weights 2 + fp32 master weights,
// Adam momentum and variance 4+4+4; Rajbhandari et al. 2020, ZeRO, Section 3.1, count 16 with the
// fp16 gradients, which a checkpoint does not hold). Write = read = size / (nodes x storage
// bandwidth per node) (default 1 GB/s per node: the Llama 3 paper's Tectonic sustains 2 TB/s for
// 2,048 nodes, Section 3.3.1). A synchronous checkpoint stalls the training for the write; an
// asynchronous one for each GPU's share over the device-to-host copy, size / GPUs / D2H bandwidth
// (default 50 GB/s, an ASSUMPTION: 78% of PCIe 5.0 x16's 64 GB/s), and its interval is at least
// the background write. The interval defaults to Young/Daly's optimum sqrt(2 C M), C the stall
// and M the job's MTBF of unexpected failures (Young 1974, CACM 17(9); Daly 2006, FGCS 22(3)),
// rounded to whole steps k.
//
// # Stragglers
//
// Each rank's step is t (1 + cv Z), Z standard normal, independent across ranks and steps
// (cv <= 0.25 so that a rank's step is positive but with negligible probability); the
// synchronous step is the slowest rank's, with expectation t (1 + cv E[max of N standard
// normals]). E[max] = ∫ x N φ(x) Φ(x)^(N-1) dx by composite Simpson (ExpectedMaxNormal; checked
// against Tippett's 1925 table, not the asymptote sqrt(2 ln N), which overstates it by 0.6 at
// N = 16,384). SimulateStragglers draws N x steps ranks; Simulate draws each step's maximum
// exactly in O(1) as Φ⁻¹(U^(1/N)), so 100,000 GPUs cost no more than 8.
//
// # Goodput
//
// With S steps of expected time t' = t (1 + cv E[max]), a checkpoint stall C every k steps,
// unexpected rate λu and planned rate λp per second of running time:
//
//	A0 = S t' + floor(S/k) C              running time without failures
//	L  = (k t' + C) / 2                   work lost per unexpected failure
//	A  = A0 / (1 - λu L)                  running time with recomputation
//	W  = A + λu A (D + R + read [+ share_hw x replacement]) + λp A (C + R + read)
//	goodput = S t / W;  effective training time = (W - recompute - restarts) / W
//
// Failures arrive during running time only (a failure during a restart is not modelled), which
// is why 54 wall-days of the Llama 3 configuration hold 430 interruptions rather than 466. With
// the Llama 3 405B inputs (405e9 parameters, 5.93 s steps from its Table 4, hot spares, the
// defaults above) the closed form gives 91.2% effective training time and 90.2% goodput, against
// the paper's "more than 90%": the detection and restart defaults were not tuned to it.
//
// Simulate draws exponential inter-arrival times at λu + λp (math/rand/v2 PCG, seeded), the
// component in proportion to its rate, and rolls progress back to the last checkpoint; the
// same seed gives the same Result.
package goodput
