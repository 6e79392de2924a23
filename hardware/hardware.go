package hardware

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/tpsim/tpsim/units"
)

// Device is one accelerator: what it computes, holds and reads per second.
type Device struct {
	// Name is the model, e.g. "NVIDIA H100-SXM5-80GB".
	Name string `json:"name"`
	// Peak is the dense (not 2:4-sparse) peak rate per dtype; keys are in Dtypes.
	Peak map[string]units.FLOPsPerSecond `json:"peak_flops"`
	// Memory is the device memory capacity. Datasheets print it in GB; presets read GB as 1e9 bytes.
	Memory units.Bytes `json:"memory_bytes"`
	// MemBandwidth is the datasheet device-memory bandwidth (read and write together).
	MemBandwidth units.BytesPerSecond `json:"mem_bandwidth_bytes_per_s"`
	// Power is the datasheet's maximum board power (TDP or TBP) in watts; 0 when not given. It
	// prices nothing yet: it is there so that a comparison per watt can read it.
	Power float64 `json:"power_w,omitempty"`
}

// Level is one tier of the interconnect: the devices in one unit (a node, a rack) and the link
// that joins them.
type Level struct {
	// Name says what the link is: "nvlink", "ib", "host".
	Name string `json:"name"`
	// Size is the number of devices in one unit at this level (8 per node on NVLink). Sizes grow
	// outward and nest (each is a multiple of the one inside it); the last level's Size is 0,
	// meaning unbounded: it joins every device there is.
	Size int `json:"devices"`
	// Bandwidth is the line rate per device per direction.
	Bandwidth units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	// Latency is alpha, the latency of one step of a ring collective at this level. A ring
	// all-reduce of n bytes over p ranks takes 2(p-1)*Latency + 2(p-1)/p * n/(Bandwidth*Efficiency)
	// (Thakur, Rabenseifner and Gropp 2005, Sec. 4; NCCL's tuning model, src/graph/tuning.cc,
	// charges its per-step hwLat the same way).
	Latency units.Seconds `json:"latency_s"`
	// Efficiency is the achieved bus bandwidth for large messages over Bandwidth, in (0, 1]
	// (nccl-tests busbw, doc/PERFORMANCE.md, over the line rate).
	Efficiency float64 `json:"efficiency"`
}

// Efficiency says how much of the device's peaks real kernels reach.
type Efficiency struct {
	// GEMMMax is the achieved fraction of peak FLOP/s for large GEMMs, in (0, 1]: the ceiling a
	// matmul shape sweep reaches (the best shape, alone on the device).
	GEMMMax float64 `json:"gemm_max_fraction"`
	// GEMMAchieved is the fraction of that ceiling the GEMMs of real training steps reach (shapes
	// as the model gives them, clocks under load, kernels sharing the device with communication),
	// in (0, 1]; 0 means 1, the ceiling. Presets fit it on published runs (tpsim fit) and cite it.
	GEMMAchieved float64 `json:"gemm_achieved_fraction,omitempty"`
	// GEMMAchievedByStack is GEMMAchieved for runs of one software stack ("megatron-lm",
	// "deepspeed", "llm-foundry", ...), where published runs say which stack ran and it differs;
	// ForStack applies it. Presets fit it with tpsim fit.
	GEMMAchievedByStack map[string]float64 `json:"gemm_achieved_fraction_by_stack,omitempty"`
	// FP8GEMM is the achieved fraction of the FP8 peak of the FP8 matrix products of
	// precision=fp8 (Transformer Engine, Float8 linears), the amax and cast kernels' overhead
	// included, in (0, 1]; 0 when not known for the device (precision=fp8 is then refused).
	FP8GEMM float64 `json:"fp8_gemm_fraction,omitempty"`
	// GEMMHalfFLOPs is the GEMM size at which half of GEMMMax is reached:
	// eff(f) = GEMMMax * f/(f+GEMMHalfFLOPs). Equivalently a GEMM of f FLOPs takes a fixed
	// GEMMHalfFLOPs/(GEMMMax*peak) plus f/(GEMMMax*peak).
	GEMMHalfFLOPs units.FLOPs `json:"gemm_half_flops"`
	// MemMax is the achieved fraction of MemBandwidth for elementwise (memory-bound) ops, in (0, 1].
	MemMax float64 `json:"mem_max_fraction"`
	// FlashMax is the achieved fraction of peak FLOP/s of the FlashAttention-2 kernel (forward
	// and backward, counting the FLOPs as Dao 2023 §4.1 does), in (0, 1]; 0 when the device has
	// no such kernel (attn=flash is then refused).
	FlashMax float64 `json:"flash_attention_fraction,omitempty"`
	// Flash1Max is the same for the first generation, FlashAttention (Dao et al. 2022) or its
	// Triton port (attn=flash1); 0 when not known for the device (attn=flash1 is then refused).
	Flash1Max float64 `json:"flash1_attention_fraction,omitempty"`
	// OverlapSlowdown is how much longer the work on a device's main sequence (its compute and
	// the collectives it blocks on) takes while one of its own collectives runs beside it: that
	// work advances at 1/(1+OverlapSlowdown) of its speed alone, as the communication kernels
	// take streaming multiprocessors and memory bandwidth from it. 0: communication that runs
	// beside compute costs the compute nothing.
	OverlapSlowdown float64 `json:"overlap_compute_slowdown,omitempty"`
	// OpOverhead is a fixed time every op pays besides its roofline time (kernel launch on a GPU,
	// dispatch and allocation on the host); 0 when not modelled.
	OpOverhead units.Seconds `json:"op_overhead_s,omitempty"`
	// ListCopyMicros is the time, in microseconds, of one per-rank copy of a torch.distributed
	// collective over a list of tensors, as DeepSpeed's ZeRO-3 of 2021 ran its parameter
	// gathers and gradient reduce-scatters (strategies.Strategy.TensorLists): PyTorch's dispatch
	// and a CUDA launch for a small copy, paid group size x parameters times per collective. 0
	// when not known (tensorlists=on then adds nothing).
	ListCopyMicros float64 `json:"list_copy_us,omitempty"`
	// KernelRates is, per kernel, the elements per second it reaches when it is slower than the
	// roofline (CPU code computing tanh or exp is; GPU kernels are memory-bound and need none).
	// Keys are the Kernel that costmodel.KernelKey names ("gelu", "gelu.backward", "layernorm",
	// "attention", "cross_entropy", "adam", ...); an op's elements are program.Op.Elems.
	KernelRates map[Kernel]float64 `json:"kernel_elems_per_s,omitempty"`
	// GEMMTimes are matrix products timed alone on one core (tpsim calibrate, and compare for the
	// products of the model it compares): a product of one of these shapes is priced at its
	// measured time instead of the efficiency curve, which no one line fits across shapes
	// (transposed operands pack more slowly, thin products waste register tiles).
	GEMMTimes []GEMMTime `json:"gemm_times,omitempty"`
}

// GEMMTime is one matrix product C [M, N] = op(A) [M, K] op(B) [K, N] timed alone: TransA when A
// is stored [K, M], TransB when B is stored [N, K], Accumulate when C is added to (beta = 1).
type GEMMTime struct {
	M          int           `json:"m"`
	K          int           `json:"k"`
	N          int           `json:"n"`
	TransA     bool          `json:"trans_a,omitempty"`
	TransB     bool          `json:"trans_b,omitempty"`
	Accumulate bool          `json:"accumulate,omitempty"`
	Seconds    units.Seconds `json:"s"`
}

// Same reports whether g and o are the same product (sizes, layout and accumulation).
func (g GEMMTime) Same(o GEMMTime) bool {
	return g.M == o.M && g.K == o.K && g.N == o.N && g.TransA == o.TransA && g.TransB == o.TransB && g.Accumulate == o.Accumulate
}

// Measured returns the measured time of product p (its Seconds ignored) and true, or false when
// that product was not timed.
func (e *Efficiency) Measured(p GEMMTime) (units.Seconds, bool) {
	for _, g := range e.GEMMTimes {
		if g.Same(p) {
			return g.Seconds, true
		}
	}
	return 0, false
}

// Hardware is a device, the levels of the network joining many of them, and the efficiencies
// kernels reach on it.
type Hardware struct {
	// Name identifies the profile, e.g. "h100-sxm".
	Name   string `json:"name"`
	Device Device `json:"device"`
	// Cores is the number of processor cores that all ranks share when they run on one machine
	// (the host profile: goroutine ranks time-share the CPU); 0 means every rank has its own device.
	Cores int `json:"cores,omitempty"`
	// GEMMParallelMACs describes the matrix multiply of a CPU profile (exec's package gemm,
	// gemm.ParallelMACs): a product of at least this many multiply-adds (M x N x K) splits over
	// the cores its rank has (Cores over the ranks, at least 1), a smaller one runs on one core.
	// On such a profile the GEMM efficiency and GEMMTimes price a product on one core, against
	// the peak over Cores. 0 when every rank has its own device.
	GEMMParallelMACs int64 `json:"gemm_parallel_macs,omitempty"`
	// MeetOverhead[k-1] is, on a profile of ranks sharing a machine's cores, what a blocking
	// collective costs beyond its ring time when k ranks arrive from computing (the early ones
	// wait out the last one's jitter, the handoff is slower than back to back, and ranks beyond
	// the cores must be scheduled first): measured by tpsim calibrate. Past its end the last
	// entry holds. Empty when not modelled (devices of their own).
	MeetOverhead []units.Seconds `json:"meet_overhead_s,omitempty"`
	// Slowdown[k-1] is how much longer an op takes when k ranks compute at once on the shared
	// cores (measured by tpsim calibrate; Slowdown[0] = 1). Past its end, time shares out
	// evenly: the last entry times k/len. Empty when every rank has its own device.
	Slowdown []float64 `json:"slowdown,omitempty"`
	// UnmetSlowdown[k-1] is Slowdown for k ranks that compute at once without meeting at
	// collectives (calibrate's mix alone): what their compute itself loses to sharing the cores.
	// Slowdown less it is the ranks waiting at the collectives for the slowest. Empty: Slowdown
	// holds for both.
	UnmetSlowdown []float64 `json:"slowdown_unmet,omitempty"`
	// Levels go from the innermost (fewest devices, fastest) outward.
	Levels     []Level    `json:"levels"`
	Efficiency Efficiency `json:"efficiency"`
	// Source says where the figures come from as a whole.
	Source string `json:"source,omitempty"`
	// Notes holds caveats a user should read before trusting a prediction.
	Notes string `json:"notes,omitempty"`
	// Sources cites the origin of each number, keyed by its JSON path with levels named, e.g.
	// "device.peak_flops.bf16" or "levels.nvlink.latency_s". Presets cite every number.
	Sources map[string]string `json:"sources,omitempty"`
}

// Dtypes are the keys Device.Peak accepts. fp6 and fp4 are the microscaling formats' dense
// matrix rates (OCP MXFP6/MXFP4, NVIDIA NVFP4), which Blackwell and AMD CDNA 4 datasheets give.
var Dtypes = []string{"bf16", "fp16", "fp32", "fp4", "fp6", "fp64", "fp8", "tf32"}

// AssumedPrefix starts the source of a number that no measurement or datasheet of the device
// itself gives: a figure taken from another device by a rule the rest of the source states
// (e.g. "assumed: h100-sxm's fitted value, not scaled"). Assumed lists them.
const AssumedPrefix = "assumed:"

// Assumed returns the JSON paths (keys of Sources) of the numbers whose source starts with
// AssumedPrefix, sorted: the figures a prediction on h rests on that nothing measured on this
// device backs.
func (h *Hardware) Assumed() []string {
	var out []string
	for _, k := range sortedKeys(h.Sources) {
		if strings.HasPrefix(strings.TrimSpace(h.Sources[k]), AssumedPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// finitePositive reports whether v is a usable positive amount (not NaN, not infinite).
func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// fraction reports whether v is in (0, 1].
func fraction(v float64) bool { return v > 0 && v <= 1 }

// Validate checks the invariants listed in the package documentation. It reports every problem
// found, one per line, each prefixed "hardware:" and naming the JSON field and the fix.
func (h *Hardware) Validate() error {
	var errs []error
	for _, p := range h.problems() {
		errs = append(errs, errors.New("hardware: "+p))
	}
	return errors.Join(errs...)
}

// A limit bounds a figure a hardware description gives: far outside every device known (why
// names the largest or smallest there is), so that it refuses only a mistyped exponent or a slip
// of units, and so that every time the cost model computes stays finite (a memory bandwidth of
// 1e-300 bytes/s once made a step take Inf - Inf = NaN seconds).
type limit struct {
	lo, hi float64
	unit   string
	why    string
}

// The limits. Each comment gives the figure the bound is set against.
var (
	// B200's dense FP4 peak is 9e15 FLOP/s (DGX B200 datasheet: 144 PFLOP/s FP4 for 8 GPUs,
	// with 2:4 sparsity); a host CPU core reaches 1e10. 1e19 is 1,000x the first.
	peakLimit = limit{1e6, 1e19, "FLOP/s", "no accelerator reaches more than about 9e15 dense (NVIDIA B200, FP4); give the dense peak in FLOP/s, e.g. 989.4e12"}
	// 288 GB of HBM3E is the most on one accelerator (AMD Instinct MI355X, NVIDIA B300
	// datasheets). 1e15 is about 3,500x that.
	memoryLimit = limit{1e6, 1e15, "bytes", "no accelerator holds more than 288 GB (AMD MI355X, NVIDIA B300); give bytes, e.g. 80e9 for 80 GB"}
	// 8 TB/s of HBM3E is the fastest device memory (AMD MI355X, NVIDIA B200); Cerebras WSE-3's
	// on-chip SRAM is quoted at 21 PB/s (2.1e16). 1e17 is 5x the second.
	memBWLimit = limit{1e6, 1e17, "bytes/s", "device memory moves at most about 8e12 B/s (HBM3E: AMD MI355X, NVIDIA B200), on-wafer SRAM 2.1e16 (Cerebras WSE-3); give bytes per second, e.g. 3350e9"}
	// NVLink 5 is the fastest link per GPU: 1.8 TB/s both directions, 9e11 B/s each (NVIDIA
	// Blackwell datasheets). 1e14 is 111x that; 1e6 (8 Mb/s) is slower than any network built
	// for training.
	linkBWLimit = limit{1e6, 1e14, "bytes/s", "no link moves more than 9e11 B/s per device per direction (NVLink 5); give bytes per second, e.g. 450e9 for NVLink4"}
	// NCCL's per-step latencies run from 0.6 us (NVLink) to a few us (network; NVIDIA/nccl
	// src/graph/tuning.cc hwLat); light in fibre crosses half the Earth's circumference in 0.1
	// s. No lower bound but 0: a tiny latency prices a step at about nothing, never NaN, and
	// calibrate's fitted intercept may be tiny.
	latencyLimit = limit{0, 1, "s", "per-step latencies run from 0.6e-6 s (NVLink, NCCL's tuning.cc) to some e-5 s; give seconds, e.g. 0.6e-6, not microseconds"}
	// The H100 fit is 5.5e9 FLOPs (a fixed 6.9 us per GEMM, see the presets' sources); 1e15
	// would be a fixed second per GEMM on an H100.
	halfFLOPsLimit = limit{0, 1e15, "FLOPs", "the H100's fitted value is 5.5e9 (a fixed 6.9 us per GEMM); 1e15 would be a fixed second per GEMM"}
	// The fractions of peak the presets and calibrate give run from 0.195 (h100-96g's
	// FlashAttention) to 1; below 0.001 a time grows 1,000-fold and a typo (0.0008 for 0.8)
	// is likelier than a kernel that slow.
	fractionLimit = limit{1e-3, 1, "", "a fraction of a peak, e.g. 0.8; below 0.001 (0.1%) is no kernel's or link's"}
	// Calibrated host kernels run 3e7 to 3e9 elements/s (cmd/tpsim/testdata/host.json); an H100
	// streams 1.7e12 two-byte elements/s (3.35e12 B/s).
	kernelRateLimit = limit{1e3, 1e15, "elements/s", "calibrated CPU kernels run 3e7 to 3e9 elements/s, a GPU streams at most about 4e12"}
	// A GEMM timed alone takes microseconds to seconds; an hour is no single product's time.
	gemmSecondsLimit = limit{0, 3600, "s", "a product timed alone takes well under an hour"}
	// NVIDIA B300 and AMD MI355X boards draw up to 1,400 W (GB300 NVL72 and MI355X
	// datasheets); 1e5 W (100 kW) is a whole NVL72 rack, no one device.
	powerLimit = limit{1, 1e5, "W", "accelerator boards draw at most about 1,400 W (NVIDIA GB300, AMD MI355X); give watts, e.g. 700"}
	// A CUDA launch costs about 5 us, PyTorch's eager dispatch some 10 us more; 10 ms is 700x
	// both (calibrate fits a host's as an intercept, 2.7e-7 s in cmd/tpsim/testdata/host.json).
	opOverheadLimit = limit{0, 1e-2, "s", "a kernel launch and dispatch cost about 5e-6 to 2e-5 s; give seconds"}
	// Calibrated meeting overheads are microseconds to tens of them (TestMeeting's 35e-6); a
	// collective that waits a second beyond its ring time is a measurement gone wrong.
	meetLimit = limit{0, 1, "s", "calibrated overheads are microseconds; give seconds"}
	// The presets' list copies are 5.3 us (a100-80g, fitted); 1e4 us (10 ms) is 1,900x that.
	listCopyLimit = limit{0, 1e4, "us", "a per-rank copy of a list collective costs about 5 microseconds (a100-80g's fit); give microseconds"}
	// arXiv:2507.03114 (2025), abstract: compute overlapped with communication runs 18.9% slower
	// on average, 40.0% at most. 1 (twice as slow) is 2.5x the most measured.
	overlapLimit = limit{0, 1, "", "overlapped compute was measured 18.9% slower on average and 40% at most (arXiv:2507.03114); give a fraction, e.g. 0.189, not a percentage"}
)

// maxLevelDevices bounds a level's unit: the largest training clusters hold some 1e5 GPUs
// (Meta's two 24,576-GPU clusters for Llama 3, Llama 3 paper sec. 3.3.1; xAI's Colossus about
// 1e5), and 1<<24 (16.7 million) is over 100x those.
const maxLevelDevices = 1 << 24

// maxCores bounds the shared cores of a host profile: a two-socket AMD EPYC 9965 server has 384
// cores (192 each); 65536 is 170x that.
const maxCores = 1 << 16

// maxGEMMSide bounds a timed product's sides, so that M x N x K stays exact in int64 (2^60).
const maxGEMMSide = 1 << 20

// outside reports why v, a positive finite figure of field, is out of l's range, or "".
func (l limit) outside(field string, v float64) string {
	if v >= l.lo && v <= l.hi {
		return ""
	}
	unit := ""
	if l.unit != "" {
		unit = " " + l.unit
	}
	return fmt.Sprintf("%s = %g is outside [%g, %g]%s: %s", field, v, l.lo, l.hi, unit, l.why)
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// problems lists what is wrong with h, without the package prefix.
func (h *Hardware) problems() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if strings.TrimSpace(h.Name) == "" {
		add(`name is empty; set "name" to a short identifier such as "h100-sxm"`)
	}
	h.deviceProblems(add)
	h.levelProblems(add)
	h.efficiencyProblems(add)
	h.sharedCoreProblems(add)
	return out
}

// adder records one problem.
type adder func(format string, args ...any)

// inRange adds l's message when v, already known positive and finite, is out of its range.
func (add adder) inRange(l limit, field string, v float64) {
	if msg := l.outside(field, v); msg != "" {
		add("%s", msg)
	}
}

// deviceProblems checks the device: its name, peaks, memory and bandwidth.
func (h *Hardware) deviceProblems(add adder) {
	d := h.Device
	if strings.TrimSpace(d.Name) == "" {
		add(`device.name is empty; set it to the accelerator model, e.g. "NVIDIA H100-SXM5-80GB"`)
	}
	if len(d.Peak) == 0 {
		add(`device.peak_flops is empty; give the dense peak FLOP/s of at least one dtype, e.g. {"bf16": 989.4e12}`)
	}
	for _, k := range sortedKeys(d.Peak) {
		v := float64(d.Peak[k])
		switch {
		case !slices.Contains(Dtypes, k):
			add("device.peak_flops has unknown dtype %q; use one of %s", k, strings.Join(Dtypes, ", "))
		case !finitePositive(v):
			add("device.peak_flops.%s = %g must be a positive FLOP/s rate (dense, not the 2:4-sparse figure)", k, v)
		default:
			add.inRange(peakLimit, "device.peak_flops."+k, v)
		}
	}
	if v := float64(d.Memory); !finitePositive(v) {
		add("device.memory_bytes = %g must be positive; set the device memory in bytes, e.g. 80e9", v)
	} else {
		add.inRange(memoryLimit, "device.memory_bytes", v)
	}
	if v := float64(d.MemBandwidth); !finitePositive(v) {
		add("device.mem_bandwidth_bytes_per_s = %g must be positive; set the datasheet memory bandwidth, e.g. 3350e9", v)
	} else {
		add.inRange(memBWLimit, "device.mem_bandwidth_bytes_per_s", v)
	}
	switch v := d.Power; {
	case v == 0:
	case !finitePositive(v):
		add("device.power_w = %g must be positive, or 0 (left out) when not known: the board's maximum power in watts, e.g. 700", v)
	default:
		add.inRange(powerLimit, "device.power_w", v)
	}
}

// levelProblems checks the levels: names, sizes that nest, and each link's figures.
func (h *Hardware) levelProblems(add adder) {
	if len(h.Levels) == 0 {
		add(`levels is empty; give at least one level, innermost first, the last with "devices": 0 (unbounded), e.g. [{"name": "nvlink", "devices": 8, ...}, {"name": "ib", "devices": 0, ...}]`)
	}
	seen := map[string]int{}
	for i, l := range h.Levels {
		at := fmt.Sprintf("levels[%d]", i)
		if l.Name != "" {
			at += " (" + l.Name + ")"
		}
		switch {
		case strings.TrimSpace(l.Name) == "":
			add(`%s.name is empty; name the link, e.g. "nvlink", "ib" or "host"`, at)
		default:
			if j, dup := seen[l.Name]; dup {
				add("%s.name repeats levels[%d].name %q; give each level its own name", at, j, l.Name)
			} else {
				seen[l.Name] = i
			}
		}
		h.levelSize(add, i, at)
		if v := float64(l.Bandwidth); !finitePositive(v) {
			add("%s.bandwidth_bytes_per_s = %g must be positive; set the line rate per device per direction, e.g. 450e9 for NVLink4", at, v)
		} else {
			add.inRange(linkBWLimit, at+".bandwidth_bytes_per_s", v)
		}
		if v := float64(l.Latency); !finitePositive(v) {
			add("%s.latency_s = %g must be positive; set the per-step latency in seconds, e.g. 0.6e-6", at, v)
		} else {
			add.inRange(latencyLimit, at+".latency_s", v)
		}
		if !fraction(l.Efficiency) {
			add("%s.efficiency = %g must be in (0, 1]: the achieved bus bandwidth (nccl-tests busbw) over bandwidth_bytes_per_s", at, l.Efficiency)
		} else {
			add.inRange(fractionLimit, at+".efficiency", l.Efficiency)
		}
	}
}

// levelSize checks level i's devices: at least 2 and even, growing and nesting outward, 0 on the
// last level only.
func (h *Hardware) levelSize(add adder, i int, at string) {
	l := h.Levels[i]
	last := i == len(h.Levels)-1
	switch {
	case l.Size < 0:
		add("%s.devices = %d must be at least 2, or 0 for the last (unbounded) level", at, l.Size)
	case l.Size == 0 && !last:
		add("%s.devices = 0 means unbounded, which only the last level may be; set the devices per unit (e.g. 8 GPUs per node)", at)
	case l.Size == 1:
		add("%s.devices = 1 joins no devices; set at least 2, or 0 for the last (unbounded) level", at)
	case l.Size > 0 && last:
		add("%s.devices = %d must be 0: the last level joins every device (add an outer level, or set it to 0)", at, l.Size)
	case l.Size > maxLevelDevices:
		add("%s.devices = %d is more than %d: the largest training clusters hold about 1e5 GPUs (Llama 3 paper sec. 3.3.1: 24,576 per cluster); set the devices one unit of this level joins", at, l.Size, maxLevelDevices)
	case l.Size%2 != 0:
		// The cost model places a group of ranks by its span from a unit boundary
		// (LevelFor): with an odd unit, pairs of ranks (tp=2) at devices 2k, 2k+1 straddle
		// units, priced as if inside one.
		add("%s.devices = %d is odd: a group of 2 ranks (tp=2) would straddle two units, which the cost model prices as inside one; every multi-accelerator node or rack joins an even number (HGX 4 or 8, DGX-2 16, GB200 NVL72 72), so set the even count of the unit", at, l.Size)
	case l.Size > 0 && i > 0 && h.Levels[i-1].Size > 0:
		prev := h.Levels[i-1].Size
		if l.Size <= prev {
			add("%s.devices = %d must be larger than levels[%d].devices = %d; list levels from the innermost (fewest devices) outward", at, l.Size, i-1, prev)
		} else if l.Size%prev != 0 {
			add("%s.devices = %d must be a multiple of levels[%d].devices = %d, since units nest", at, l.Size, i-1, prev)
		}
	}
}

// efficiencyProblems checks the efficiency block: fractions, the GEMM curve, kernel rates and
// timed products, and the fixed costs.
func (h *Hardware) efficiencyProblems(add adder) {
	e := h.Efficiency
	// frac checks a fraction in (0, 1]; optional ones may also be 0 (no figure).
	frac := func(field string, v float64, optional bool, what string) {
		switch {
		case optional && v == 0:
		case !fraction(v):
			add("efficiency.%s = %g must be in (0, 1]%s", field, v, what)
		default:
			add.inRange(fractionLimit, "efficiency."+field, v)
		}
	}
	frac("gemm_max_fraction", e.GEMMMax, false, ": the achieved fraction of peak for large GEMMs, e.g. 0.8")
	if v := float64(e.GEMMHalfFLOPs); !finitePositive(v) {
		add("efficiency.gemm_half_flops = %g must be positive: the GEMM size in FLOPs that reaches half of gemm_max_fraction, e.g. 5.5e9", v)
	} else {
		add.inRange(halfFLOPsLimit, "efficiency.gemm_half_flops", v)
	}
	frac("mem_max_fraction", e.MemMax, false, ": the achieved fraction of memory bandwidth for elementwise ops, e.g. 0.84")
	frac("gemm_achieved_fraction", e.GEMMAchieved, true, ", or 0 for the ceiling: the fraction of gemm_max_fraction real training GEMMs reach, e.g. 0.75")
	for _, k := range sortedKeys(e.GEMMAchievedByStack) {
		if v := e.GEMMAchievedByStack[k]; strings.TrimSpace(k) == "" || !fraction(v) {
			add("efficiency.gemm_achieved_fraction_by_stack[%q] = %g: name the software stack and give a fraction in (0, 1] of gemm_max_fraction, e.g. {\"megatron-lm\": 0.8}", k, v)
		} else {
			add.inRange(fractionLimit, fmt.Sprintf("efficiency.gemm_achieved_fraction_by_stack[%q]", k), v)
		}
	}
	frac("fp8_gemm_fraction", e.FP8GEMM, true, ", or 0 when no figure is known: the achieved fraction of the FP8 peak of FP8 matrix products, e.g. 0.5")
	frac("flash_attention_fraction", e.FlashMax, true, ", or 0 when the device has no FlashAttention kernel: the achieved fraction of peak of its forward and backward, e.g. 0.6")
	frac("flash1_attention_fraction", e.Flash1Max, true, ", or 0 when no figure is known: the achieved fraction of peak of FlashAttention-1's forward and backward, e.g. 0.3")
	for _, k := range sortedKeys(e.KernelRates) {
		if !k.Known() {
			add("efficiency.kernel_elems_per_s.%s is not a kernel tpsim prices; use one of %s (each with .backward)", k, kernelNames())
		}
		if r := e.KernelRates[k]; !finitePositive(r) {
			add("efficiency.kernel_elems_per_s.%s = %g must be positive: elements per second of that kernel", k, r)
		} else {
			add.inRange(kernelRateLimit, "efficiency.kernel_elems_per_s."+string(k), r)
		}
	}
	for i, g := range e.GEMMTimes {
		switch {
		case g.M <= 0 || g.K <= 0 || g.N <= 0 || !finitePositive(float64(g.Seconds)):
			add("efficiency.gemm_times[%d] = %dx%dx%d in %g s: sizes and time must be positive (m, k, n and s of a product timed alone)", i, g.M, g.K, g.N, float64(g.Seconds))
		case g.M > maxGEMMSide || g.K > maxGEMMSide || g.N > maxGEMMSide:
			add("efficiency.gemm_times[%d] = %dx%dx%d: each side must be at most %d, so that m x k x n stays exact", i, g.M, g.K, g.N, maxGEMMSide)
		default:
			add.inRange(gemmSecondsLimit, fmt.Sprintf("efficiency.gemm_times[%d].s", i), float64(g.Seconds))
		}
	}
	// nonNegative checks a figure that may be 0 (not modelled).
	nonNegative := func(l limit, field string, v float64, what string) {
		if v < 0 || !finite(v) {
			add("%s = %g must be zero or positive: %s", field, v, what)
		} else {
			add.inRange(l, field, v)
		}
	}
	nonNegative(listCopyLimit, "efficiency.list_copy_us", e.ListCopyMicros, "microseconds per rank and tensor of a list collective, e.g. 10")
	nonNegative(overlapLimit, "efficiency.overlap_compute_slowdown", e.OverlapSlowdown, "how much longer compute takes while communication runs beside it, e.g. 0.189 for 18.9%")
	nonNegative(opOverheadLimit, "efficiency.op_overhead_s", float64(e.OpOverhead), "a fixed time per op, e.g. 5e-6")
}

// sharedCoreProblems checks the fields of a profile whose ranks share a machine's cores.
func (h *Hardware) sharedCoreProblems(add adder) {
	for i, m := range h.MeetOverhead {
		if v := float64(m); v < 0 || !finite(v) {
			add("meet_overhead_s[%d] = %g must be zero or positive: the time a blocking collective of %d ranks costs beyond its ring time on shared cores", i, v, i+1)
		} else {
			add.inRange(meetLimit, fmt.Sprintf("meet_overhead_s[%d]", i), v)
		}
	}
	if h.Cores > 0 && h.GEMMParallelMACs < 0 {
		add("gemm_parallel_macs = %d must be zero or positive: the multiply-adds from which a product splits over cores", h.GEMMParallelMACs)
	}
	// At most 100k: k ranks sharing even one core take k times as long as one alone when time
	// shares out evenly; calibrated tables stay below (5.43 at k=8 on 2 cores,
	// cmd/tpsim/testdata/host.json), and 100x leaves room for a machine loaded by others
	// while calibrate measured (its fitted profile must validate).
	slow := func(field string, i int, f float64) bool {
		if !(f >= 1) || !finite(f) {
			add("%s[%d] = %g must be at least 1: ranks sharing cores are never faster than one alone", field, i, f)
			return false
		}
		if hi := 100 * float64(i+1); f > hi {
			add("%s[%d] = %g is more than %g: %d ranks sharing the cores evenly take at most %d times as long as one alone; 100x that is the most allowed", field, i, f, hi, i+1, i+1)
			return false
		}
		return true
	}
	for i, f := range h.Slowdown {
		slow("slowdown", i, f)
	}
	for i, f := range h.UnmetSlowdown {
		if slow("slowdown_unmet", i, f) && i < len(h.Slowdown) && f > h.Slowdown[i] {
			add("slowdown_unmet[%d] = %g exceeds slowdown[%d] = %g: ranks that do not meet are never slower than ranks that do", i, f, i, h.Slowdown[i])
		}
	}
	switch {
	case h.Cores < 0:
		add("cores = %d must be zero (a device per rank) or the number of cores the ranks share", h.Cores)
	case h.Cores > maxCores:
		add("cores = %d is more than %d: a two-socket AMD EPYC 9965 server has 384 cores; give the cores the ranks share", h.Cores, maxCores)
	}
}

// LevelFor returns the index in h.Levels of the smallest level whose unit holds a group of ranks
// spanning groupSpan consecutive devices that starts on a unit boundary (device 0, 8, 16, ... for
// 8-device nodes). A group of p ranks with stride s spans (p-1)*s+1 devices. For groups that may
// start anywhere use LevelOf.
//
// It panics if groupSpan < 1 or h has no levels. On a Hardware that does not validate, a span
// larger than every level gets the last level.
func (h *Hardware) LevelFor(groupSpan int) int {
	if groupSpan < 1 {
		panic(fmt.Sprintf("hardware: LevelFor(%d): a group spans at least 1 device", groupSpan))
	}
	return h.LevelOf(0, groupSpan-1)
}

// LevelOf returns the index in h.Levels of the smallest level whose unit holds both devices
// first and last (device indices, numbered so that unit k of a level of Size n holds devices
// k*n .. k*n+n-1).
//
// It panics if first < 0, last < first, or h has no levels. On a Hardware that does not
// validate, devices that no level joins get the last level.
func (h *Hardware) LevelOf(first, last int) int {
	if first < 0 || last < first {
		panic(fmt.Sprintf("hardware: LevelOf(%d, %d): need 0 <= first <= last", first, last))
	}
	if len(h.Levels) == 0 {
		panic("hardware: LevelOf on a Hardware with no levels")
	}
	for i, l := range h.Levels {
		if l.Size <= 0 || first/l.Size == last/l.Size {
			return i
		}
	}
	return len(h.Levels) - 1
}

// PeakFor returns the dense peak FLOP/s of the device for dtype (one of Dtypes).
func (h *Hardware) PeakFor(dtype string) (units.FLOPsPerSecond, error) {
	if p, ok := h.Device.Peak[dtype]; ok {
		return p, nil
	}
	have := sortedKeys(h.Device.Peak)
	list := "none"
	if len(have) > 0 {
		list = strings.Join(have, ", ")
	}
	return 0, fmt.Errorf("hardware: %s has no peak FLOP/s for dtype %q; it has %s (add it under device.peak_flops)", h.Name, dtype, list)
}

// ForStack is e with the GEMM achieved fraction of the software stack when e gives one for it.
func (e Efficiency) ForStack(stack string) Efficiency {
	if v, ok := e.GEMMAchievedByStack[stack]; ok && stack != "" {
		e.GEMMAchieved = v
	}
	return e
}

// GEMMLimit is the fraction of peak large GEMMs reach in training: GEMMMax x GEMMAchieved (the
// sweep's ceiling when GEMMAchieved is 0).
func (e Efficiency) GEMMLimit() float64 {
	if e.GEMMAchieved > 0 {
		return e.GEMMMax * e.GEMMAchieved
	}
	return e.GEMMMax
}

// GEMMEfficiency returns the achieved fraction of peak FLOP/s for a GEMM of f FLOPs:
// GEMMLimit * f/(f+GEMMHalfFLOPs). It is 0 for f <= 0 (or NaN) and tends to GEMMLimit for large f.
func (h *Hardware) GEMMEfficiency(f units.FLOPs) float64 {
	e := h.Efficiency
	switch {
	case !(f > 0):
		return 0
	case math.IsInf(float64(f), 1):
		return e.GEMMLimit()
	}
	return e.GEMMLimit() * float64(f) / float64(f+e.GEMMHalfFLOPs)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// ComputeSlowdown is the factor by which compute time grows when ranks ranks run at once on h:
// 1 for devices of their own, the measured Slowdown for ranks sharing cores.
func (h *Hardware) ComputeSlowdown(ranks int) float64 { return slowdownOf(h.Slowdown, ranks) }

// UnmetComputeSlowdown is ComputeSlowdown for ranks that do not meet at collectives (a pipeline:
// its waits are its bubble): UnmetSlowdown, or Slowdown when the profile has no such table.
func (h *Hardware) UnmetComputeSlowdown(ranks int) float64 {
	if len(h.UnmetSlowdown) == 0 {
		return h.ComputeSlowdown(ranks)
	}
	return slowdownOf(h.UnmetSlowdown, ranks)
}

// CapUnmet lowers each entry of unmet to slow's (where slow has one), in place: meeting at
// collectives never makes ranks faster, so the unmet slowdown is at most the met one (Validate
// refuses a profile where it is not).
func CapUnmet(unmet, slow []float64) {
	for i := range min(len(unmet), len(slow)) {
		unmet[i] = min(unmet[i], slow[i])
	}
}

// slowdownOf reads a slowdown table: entry ranks-1, 1 for one rank or no table, and past its end
// the last entry times ranks/len (time shares out evenly).
func slowdownOf(t []float64, ranks int) float64 {
	n := len(t)
	switch {
	case n == 0 || ranks <= 1:
		return 1
	case ranks <= n:
		return t[ranks-1]
	}
	return t[n-1] * float64(ranks) / float64(n)
}

// Meeting is what a blocking collective of ranks ranks costs beyond its ring time on h
// (MeetOverhead; the last entry past its end, 0 without one).
func (h *Hardware) Meeting(ranks int) units.Seconds {
	n := len(h.MeetOverhead)
	if n == 0 || ranks < 1 {
		return 0
	}
	return h.MeetOverhead[min(ranks, n)-1]
}

// GEMMThreads is how many of the shared cores a matrix product of macs multiply-adds keeps busy
// when each of ranks ranks runs one at once: the cores a rank has (Cores/ranks, at least 1) when
// the product is large enough to split (GEMMParallelMACs), else one.
func (h *Hardware) GEMMThreads(macs int64, ranks int) int {
	if h.Cores <= 1 || h.GEMMParallelMACs <= 0 || macs < h.GEMMParallelMACs {
		return 1
	}
	return max(1, h.Cores/max(1, ranks))
}
