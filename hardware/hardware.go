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

// Dtypes are the keys Device.Peak accepts.
var Dtypes = []string{"bf16", "fp16", "fp32", "fp64", "fp8", "tf32"}

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

// problems lists what is wrong with h, without the package prefix.
func (h *Hardware) problems() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if strings.TrimSpace(h.Name) == "" {
		add(`name is empty; set "name" to a short identifier such as "h100-sxm"`)
	}

	d := h.Device
	if strings.TrimSpace(d.Name) == "" {
		add(`device.name is empty; set it to the accelerator model, e.g. "NVIDIA H100-SXM5-80GB"`)
	}
	if len(d.Peak) == 0 {
		add(`device.peak_flops is empty; give the dense peak FLOP/s of at least one dtype, e.g. {"bf16": 989.4e12}`)
	}
	for _, k := range sortedKeys(d.Peak) {
		v := float64(d.Peak[k])
		if !slices.Contains(Dtypes, k) {
			add("device.peak_flops has unknown dtype %q; use one of %s", k, strings.Join(Dtypes, ", "))
			continue
		}
		if !finitePositive(v) {
			add("device.peak_flops.%s = %g must be a positive FLOP/s rate (dense, not the 2:4-sparse figure)", k, v)
		}
	}
	if !finitePositive(float64(d.Memory)) {
		add("device.memory_bytes = %g must be positive; set the device memory in bytes, e.g. 80e9", float64(d.Memory))
	}
	if !finitePositive(float64(d.MemBandwidth)) {
		add("device.mem_bandwidth_bytes_per_s = %g must be positive; set the datasheet memory bandwidth, e.g. 3350e9", float64(d.MemBandwidth))
	}

	if len(h.Levels) == 0 {
		add(`levels is empty; give at least one level, innermost first, the last with "devices": 0 (unbounded), e.g. [{"name": "nvlink", "devices": 8, ...}, {"name": "ib", "devices": 0, ...}]`)
	}
	seen := map[string]int{}
	for i, l := range h.Levels {
		at := fmt.Sprintf("levels[%d]", i)
		if l.Name != "" {
			at += " (" + l.Name + ")"
		}
		last := i == len(h.Levels)-1
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
		switch {
		case l.Size < 0:
			add("%s.devices = %d must be at least 2, or 0 for the last (unbounded) level", at, l.Size)
		case l.Size == 0 && !last:
			add("%s.devices = 0 means unbounded, which only the last level may be; set the devices per unit (e.g. 8 GPUs per node)", at)
		case l.Size == 1:
			add("%s.devices = 1 joins no devices; set at least 2, or 0 for the last (unbounded) level", at)
		case l.Size > 0 && last:
			add("%s.devices = %d must be 0: the last level joins every device (add an outer level, or set it to 0)", at, l.Size)
		case l.Size > 0 && i > 0 && h.Levels[i-1].Size > 0:
			prev := h.Levels[i-1].Size
			if l.Size <= prev {
				add("%s.devices = %d must be larger than levels[%d].devices = %d; list levels from the innermost (fewest devices) outward", at, l.Size, i-1, prev)
			} else if l.Size%prev != 0 {
				add("%s.devices = %d must be a multiple of levels[%d].devices = %d, since units nest", at, l.Size, i-1, prev)
			}
		}
		if !finitePositive(float64(l.Bandwidth)) {
			add("%s.bandwidth_bytes_per_s = %g must be positive; set the line rate per device per direction, e.g. 450e9 for NVLink4", at, float64(l.Bandwidth))
		}
		if !finitePositive(float64(l.Latency)) {
			add("%s.latency_s = %g must be positive; set the per-step latency in seconds, e.g. 0.6e-6", at, float64(l.Latency))
		}
		if !fraction(l.Efficiency) {
			add("%s.efficiency = %g must be in (0, 1]: the achieved bus bandwidth (nccl-tests busbw) over bandwidth_bytes_per_s", at, l.Efficiency)
		}
	}

	e := h.Efficiency
	if !fraction(e.GEMMMax) {
		add("efficiency.gemm_max_fraction = %g must be in (0, 1]: the achieved fraction of peak for large GEMMs, e.g. 0.8", e.GEMMMax)
	}
	if !finitePositive(float64(e.GEMMHalfFLOPs)) {
		add("efficiency.gemm_half_flops = %g must be positive: the GEMM size in FLOPs that reaches half of gemm_max_fraction, e.g. 5.5e9", float64(e.GEMMHalfFLOPs))
	}
	if !fraction(e.MemMax) {
		add("efficiency.mem_max_fraction = %g must be in (0, 1]: the achieved fraction of memory bandwidth for elementwise ops, e.g. 0.84", e.MemMax)
	}
	if e.GEMMAchieved != 0 && !fraction(e.GEMMAchieved) {
		add("efficiency.gemm_achieved_fraction = %g must be in (0, 1], or 0 for the ceiling: the fraction of gemm_max_fraction real training GEMMs reach, e.g. 0.75", e.GEMMAchieved)
	}
	for _, k := range sortedKeys(e.GEMMAchievedByStack) {
		if v := e.GEMMAchievedByStack[k]; strings.TrimSpace(k) == "" || !fraction(v) {
			add("efficiency.gemm_achieved_fraction_by_stack[%q] = %g: name the software stack and give a fraction in (0, 1] of gemm_max_fraction, e.g. {\"megatron-lm\": 0.8}", k, v)
		}
	}
	if e.FP8GEMM != 0 && !fraction(e.FP8GEMM) {
		add("efficiency.fp8_gemm_fraction = %g must be in (0, 1], or 0 when no figure is known: the achieved fraction of the FP8 peak of FP8 matrix products, e.g. 0.5", e.FP8GEMM)
	}
	if e.FlashMax != 0 && !fraction(e.FlashMax) {
		add("efficiency.flash_attention_fraction = %g must be in (0, 1], or 0 when the device has no FlashAttention kernel: the achieved fraction of peak of its forward and backward, e.g. 0.6", e.FlashMax)
	}
	if e.Flash1Max != 0 && !fraction(e.Flash1Max) {
		add("efficiency.flash1_attention_fraction = %g must be in (0, 1], or 0 when no figure is known: the achieved fraction of peak of FlashAttention-1's forward and backward, e.g. 0.3", e.Flash1Max)
	}
	for _, k := range sortedKeys(e.KernelRates) {
		if !k.Known() {
			add("efficiency.kernel_elems_per_s.%s is not a kernel tpsim prices; use one of %s (each with .backward)", k, kernelNames())
		}
		if r := e.KernelRates[k]; !finitePositive(r) {
			add("efficiency.kernel_elems_per_s.%s = %g must be positive: elements per second of that kernel", k, r)
		}
	}
	for i, g := range e.GEMMTimes {
		if g.M <= 0 || g.K <= 0 || g.N <= 0 || !finitePositive(float64(g.Seconds)) {
			add("efficiency.gemm_times[%d] = %dx%dx%d in %g s: sizes and time must be positive (m, k, n and s of a product timed alone)", i, g.M, g.K, g.N, float64(g.Seconds))
		}
	}
	for i, m := range h.MeetOverhead {
		if m < 0 || math.IsInf(float64(m), 0) || math.IsNaN(float64(m)) {
			add("meet_overhead_s[%d] = %g must be zero or positive: the time a blocking collective of %d ranks costs beyond its ring time on shared cores", i, float64(m), i+1)
		}
	}
	if h.Cores > 0 && h.GEMMParallelMACs < 0 {
		add("gemm_parallel_macs = %d must be zero or positive: the multiply-adds from which a product splits over cores", h.GEMMParallelMACs)
	}
	if e.ListCopyMicros < 0 || math.IsInf(e.ListCopyMicros, 0) || math.IsNaN(e.ListCopyMicros) {
		add("efficiency.list_copy_us = %g must be zero or positive: microseconds per rank and tensor of a list collective, e.g. 10", e.ListCopyMicros)
	}
	if e.OverlapSlowdown < 0 || math.IsInf(e.OverlapSlowdown, 0) || math.IsNaN(e.OverlapSlowdown) {
		add("efficiency.overlap_compute_slowdown = %g must be zero or positive: how much longer compute takes while communication runs beside it, e.g. 0.189 for 18.9%%", e.OverlapSlowdown)
	}
	if e.OpOverhead < 0 || math.IsInf(float64(e.OpOverhead), 0) || math.IsNaN(float64(e.OpOverhead)) {
		add("efficiency.op_overhead_s = %g must be zero or positive: a fixed time per op, e.g. 5e-6", float64(e.OpOverhead))
	}
	for i, f := range h.Slowdown {
		if !(f >= 1) || math.IsInf(f, 0) {
			add("slowdown[%d] = %g must be at least 1: ranks sharing cores are never faster than one alone", i, f)
		}
	}
	for i, f := range h.UnmetSlowdown {
		switch {
		case !(f >= 1) || math.IsInf(f, 0):
			add("slowdown_unmet[%d] = %g must be at least 1: ranks sharing cores are never faster than one alone", i, f)
		case i < len(h.Slowdown) && f > h.Slowdown[i]:
			add("slowdown_unmet[%d] = %g exceeds slowdown[%d] = %g: ranks that do not meet are never slower than ranks that do", i, f, i, h.Slowdown[i])
		}
	}
	if h.Cores < 0 {
		add("cores = %d must be zero (a device per rank) or the number of cores the ranks share", h.Cores)
	}
	return out
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
