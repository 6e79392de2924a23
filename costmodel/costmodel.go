package costmodel

import (
	"fmt"
	"slices"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Memory is bytes per rank by category.
type Memory struct {
	Params      units.Bytes `json:"params"`
	Grads       units.Bytes `json:"grads"`
	Optimizer   units.Bytes `json:"optimizer"`
	Activations units.Bytes `json:"activations"`
	Workspace   units.Bytes `json:"workspace"`
	Comm        units.Bytes `json:"comm"`
	Peak        units.Bytes `json:"peak"`
}

// Time is the step time and where it goes. Compute + CommExposed + Bubble + Optimizer = Step.
type Time struct {
	Step        units.Seconds `json:"step"`
	Compute     units.Seconds `json:"compute"`
	CommExposed units.Seconds `json:"comm_exposed"`
	Bubble      units.Seconds `json:"bubble"`
	Optimizer   units.Seconds `json:"optimizer"`
}

// FLOPs per step over all devices. Model FLOPs count each matrix product of the model once
// forward and twice backward (program.ModelFLOPs: Narayanan et al. 2021 Eq. 3 without recompute);
// hardware FLOPs count what the devices execute, recomputation and replicated work included.
type FLOPs struct {
	Model    units.FLOPs `json:"model"`
	Hardware units.FLOPs `json:"hardware"`
}

// Result is the prediction for one strategy. JSON keys are those of `tpsim predict --json`.
type Result struct {
	Model    string `json:"model"`
	Hardware string `json:"hardware"`
	Strategy string `json:"strategy"`
	Plan     string `json:"plan"`
	Devices  int    `json:"devices"`
	Feasible bool   `json:"feasible"`
	Reason   string `json:"reason"`

	Memory    Memory                         `json:"memory_bytes"`
	CommBytes map[strategies.Dim]units.Bytes `json:"comm_bytes"`
	Time      Time                           `json:"time_s"`
	FLOPs     FLOPs                          `json:"flops"`

	MFU                  float64 `json:"mfu"`
	HFU                  float64 `json:"hfu"`
	ModelTFLOPsPerGPU    float64 `json:"model_tflops_per_gpu"`
	HardwareTFLOPsPerGPU float64 `json:"hardware_tflops_per_gpu"`
	TokensPerS           float64 `json:"tokens_per_s"`

	// CommTime is the time of each mesh dimension's communication per step, exposed or not.
	CommTime map[strategies.Dim]units.Seconds `json:"comm_time_s"`
	// Assumptions lists what the prediction assumed that the inputs did not say.
	Assumptions []string `json:"assumptions"`
}

// SetTime sets the step time and its breakdown (the simulator's, say) and the figures that follow
// from it: MFU and HFU against peak, TFLOP/s per GPU and tokens per second for tokens per step.
func (r *Result) SetTime(t Time, peak units.FLOPsPerSecond, tokens int64) {
	r.Time = t
	dev := float64(r.Devices)
	step := float64(t.Step)
	r.MFU, r.HFU, r.ModelTFLOPsPerGPU, r.HardwareTFLOPsPerGPU, r.TokensPerS = 0, 0, 0, 0, 0
	if step > 0 && dev > 0 {
		r.MFU = float64(r.FLOPs.Model) / (step * float64(peak) * dev)
		r.HFU = float64(r.FLOPs.Hardware) / (step * float64(peak) * dev)
		r.ModelTFLOPsPerGPU = float64(r.FLOPs.Model) / step / dev / 1e12
		r.HardwareTFLOPsPerGPU = float64(r.FLOPs.Hardware) / step / dev / 1e12
		r.TokensPerS = float64(tokens) / step
	}
}

// Coster prices single ops; the simulator uses it for its events.
type Coster struct {
	P  *program.Program
	HW *hardware.Hardware
	// peak FLOP/s for the program's precision.
	peak units.FLOPsPerSecond
	// slowdown of compute when the program's ranks share cores (1 on devices of their own).
	slowdown float64
	// fp8 is the FP8 peak when the program's Linear products run in FP8 (precision=fp8), else 0.
	fp8 units.FLOPsPerSecond
}

// NewCoster returns a Coster for p on hw; it fails when hw lacks the precision's peak.
func NewCoster(p *program.Program, hw *hardware.Hardware) (*Coster, error) {
	dtype := "bf16"
	if p.Strategy.Precision == strategies.PrecisionFP32 {
		dtype = "fp32"
	}
	peak, err := hw.PeakFor(dtype)
	if err != nil {
		return nil, fmt.Errorf("costmodel: %v", err)
	}
	if err := CheckFlash(p.Strategy, hw); err != nil {
		return nil, err
	}
	c := &Coster{P: p, HW: hw, peak: peak, slowdown: RankSlowdown(hw, p.Strategy.Mesh)}
	if p.Strategy.Precision == strategies.PrecisionFP8 {
		fp8, err := hw.PeakFor("fp8")
		if err != nil || hw.Efficiency.FP8GEMM <= 0 {
			return nil, fmt.Errorf("costmodel: precision=fp8 needs hardware %q to give an FP8 peak (device.peak_flops.fp8) and the achieved fraction of its FP8 products (efficiency.fp8_gemm_fraction); use precision=mixed, or set them (the h100 presets cite theirs)", hw.Name)
		}
		c.fp8 = fp8
	}
	return c, nil
}

// RankSlowdown is the slowdown of compute when mesh's ranks share hw's cores: the measured one of
// ranks that meet at collectives (ComputeSlowdown, which holds their waiting for the slowest at
// every collective) when the mesh has a dp, cp or tp group, else that of ranks computing without
// meeting (UnmetComputeSlowdown: a pipeline, whose waits are its bubble, which the schedule
// prices); 1 for devices of their own.
func RankSlowdown(hw *hardware.Hardware, mesh strategies.Mesh) float64 {
	if mesh.Meets() {
		return hw.ComputeSlowdown(mesh.Devices())
	}
	return hw.UnmetComputeSlowdown(mesh.Devices())
}

// IsFP8 reports whether op runs its products in FP8 under precision=fp8: every Linear of the
// transformer blocks, forward, backward and recompute (Transformer Engine's FP8 recipe runs the
// forward, data-gradient and weight-gradient GEMMs in FP8; so do torchao's Float8 linears), but
// not the output head, which both keep in BF16 (Megatron-Core's output layer is not a TE
// module; torchtitan's Float8 conversion skips "output").
func (c *Coster) IsFP8(op *program.Op) bool {
	return c.fp8 > 0 && op.Kind == program.OpLinear && op.Module != "head"
}

// CheckFlash refuses FlashAttention on hardware that gives no efficiency for it, naming the fix.
func CheckFlash(st strategies.Strategy, hw *hardware.Hardware) error {
	k, ok := flashKernel(st)
	if !ok || k.Fraction(hw.Efficiency) > 0 {
		return nil
	}
	alt := "attn=eager"
	if st.Attention == strategies.AttentionFlash1 && hw.Efficiency.FlashMax > 0 {
		alt = "attn=flash (FlashAttention-2) or attn=eager"
	}
	return fmt.Errorf("costmodel: attn=%s needs the efficiency of %s, and hardware %q gives no efficiency.%s; use %s, or set it (the presets cite theirs)", st.Attention, k.Name, hw.Name, k.Field, alt)
}

// FlashKernel is a FlashAttention generation that a strategy's attn option names, and where the
// hardware gives its fraction of peak.
type FlashKernel struct {
	Attn        strategies.Attention
	Name, Field string
	Fraction    func(hardware.Efficiency) float64
}

// FlashKernels are the fused attention kernels tpsim prices, newest first.
var FlashKernels = []FlashKernel{
	{strategies.AttentionFlash, "FlashAttention-2", "flash_attention_fraction", func(e hardware.Efficiency) float64 { return e.FlashMax }},
	{strategies.AttentionFlash1, "FlashAttention-1 (or its Triton port)", "flash1_attention_fraction", func(e hardware.Efficiency) float64 { return e.Flash1Max }},
}

// flashKernel is the strategy's fused attention kernel; false for eager attention.
func flashKernel(st strategies.Strategy) (FlashKernel, bool) {
	for _, k := range FlashKernels {
		if k.Attn == st.Attention {
			return k, true
		}
	}
	return FlashKernel{}, false
}

// flashFraction is the fraction of peak at which the strategy's fused attention kernel runs; 0
// for eager attention or a device without a figure.
func flashFraction(st strategies.Strategy, hw *hardware.Hardware) float64 {
	if k, ok := flashKernel(st); ok {
		return k.Fraction(hw.Efficiency)
	}
	return 0
}

// Peak is the device's peak FLOP/s at the program's precision.
func (c *Coster) Peak() units.FLOPsPerSecond { return c.peak }

// Compute is the roofline time of a compute op.
func (c *Coster) Compute(op *program.Op) units.Seconds {
	hw := c.HW
	mem := units.Seconds(float64(op.MemBytes) / (float64(hw.Device.MemBandwidth) * hw.Efficiency.MemMax))
	kernel := c.kernelTime(op)
	if op.FLOPs <= 0 {
		return c.shared(op, max(mem, kernel))
	}
	if op.Kind == program.OpAttention && c.P.Strategy.FusedAttention() {
		// One fused kernel: its products run at the FlashAttention efficiency, its traffic
		// overlaps them (Dao 2023).
		flop := units.Seconds(float64(op.FLOPs) / (float64(c.peak) * flashFraction(c.P.Strategy, hw)))
		return c.shared(op, max(flop, mem, kernel))
	}
	if op.Kind == program.OpLinear && hw.GEMMParallelMACs > 0 {
		// A CPU profile (host): the products as exec runs them, each timed alone on one core
		// where calibrate or compare measured its shape, else on the one-core efficiency curve,
		// and split over the cores the rank has when large enough.
		n := hw.GEMMThreads(int64(op.M)*int64(op.N)*int64(op.K), c.P.Strategy.Mesh.Devices())
		return c.sharedOn(op, max(c.hostGEMMs(op)/units.Seconds(n), mem, kernel), n)
	}
	eff, peak := 1.0, c.peak
	switch {
	case c.IsFP8(op):
		// FP8 products at the FP8 peak times their own achieved fraction (amax and cast kernels
		// included), with the size curve of the BF16 GEMMs: eff(f) = FP8GEMM f/(f + f_half).
		f := float64(gemmSize(op))
		eff, peak = hw.Efficiency.FP8GEMM*f/(f+float64(hw.Efficiency.GEMMHalfFLOPs)), c.fp8
	case op.Kind == program.OpLinear || op.Kind == program.OpAttention:
		eff = hw.GEMMEfficiency(gemmSize(op))
	}
	flop := units.Seconds(float64(op.FLOPs) / (float64(peak) * eff))
	if op.Kind == program.OpAttention {
		// The Program's attention is unfused: its two batched products and its passes over the
		// s x s scores (softmax, dropout) are separate kernels, one after the other (Megatron-LM's
		// baddbmm, fused scale-mask-softmax, dropout and bmm; Korthikanti et al. 2022 §4.1 counts
		// the scores they keep), so their times add instead of overlapping in one roofline.
		return c.shared(op, max(flop+mem, kernel))
	}
	return c.shared(op, max(flop, mem, kernel))
}

// shared adds the fixed per-op time and the slowdown of ranks sharing cores to an op that keeps
// one core busy (every op but a split product, sharedOn).
func (c *Coster) shared(op *program.Op, t units.Seconds) units.Seconds { return c.sharedOn(op, t, 1) }

// sharedOn adds the fixed per-op time and the slowdown of ranks sharing cores: the measured
// Slowdown of the program's ranks computing at once (calibrate's contention table: k goroutine
// ranks each running the same one-core mix and meeting at a collective after each, as exec's
// ranks do; 1 for devices of their own). An op that keeps n > 1 cores busy alone (a product
// split over the cores of a rank, which exec does only while the ranks leave cores free) asks
// for devices x n cores: it slows by that over Cores when that is more (processor sharing).
func (c *Coster) sharedOn(op *program.Op, t units.Seconds, n int) units.Seconds {
	s := c.slowdown
	if hw := c.HW; hw.Cores > 0 && hw.GEMMParallelMACs > 0 && n > 1 {
		s = max(1, float64(c.P.Strategy.Mesh.Devices()*n)/float64(hw.Cores))
	}
	return units.Seconds(s) * (t + c.HW.Efficiency.OpOverhead)
}

// HostGEMMs are the matrix products exec's kernels run for a linear op (package kernels'
// LinearForward, LinearBackwardInput and LinearBackwardWeight): forward y = x Wᵀ, [M, K] x
// [N, K]ᵀ; backward dx = dy W, [M, N] x [N, K], when the input needs a gradient, and dW += dyᵀ x,
// [M, N]ᵀ x [M, K] accumulated. (exec overwrites dW instead on a step's first microbatch; the two
// forms took the same time within 0.5% on the MLP's 4096×1024×512, median of 15 alternating
// pairs, so the accumulating one prices both.)
func HostGEMMs(op *program.Op) []hardware.GEMMTime {
	if !op.Differentiates() { // a forward product, or one recomputed
		return []hardware.GEMMTime{{M: op.M, K: op.K, N: op.N, TransB: true}}
	}
	dw := hardware.GEMMTime{M: op.N, K: op.M, N: op.K, TransA: true, Accumulate: true}
	if !op.GradInput {
		return []hardware.GEMMTime{dw}
	}
	return []hardware.GEMMTime{{M: op.M, K: op.N, N: op.K}, dw}
}

// hostGEMMs is the one-core time of op's products: measured where the profile timed the shape,
// else FLOPs at the one-core share of the peak times the GEMM efficiency of that size.
func (c *Coster) hostGEMMs(op *program.Op) units.Seconds {
	var t units.Seconds
	perCore := float64(c.peak) / float64(max(1, c.HW.Cores))
	for _, g := range HostGEMMs(op) {
		if m, ok := c.HW.Efficiency.Measured(g); ok {
			t += m
			continue
		}
		f := program.MatmulFLOPs(float64(g.M), float64(g.K), float64(g.N))
		t += units.Seconds(float64(f) / (perCore * c.HW.GEMMEfficiency(f)))
	}
	return t
}

// KernelKey names the kernel of a compute op for hardware.Efficiency.KernelRates: "gelu",
// "layernorm", "cross_entropy", "attention", "adam", ... with ".backward" for backward ops; ""
// for matrix products, which the GEMM efficiency prices. The vocabulary-parallel cross-entropy
// has its own kernels: "cross_entropy_stats" on the shard, "cross_entropy_combine" on the
// gathered statistics and "cross_entropy_shard.backward".
func KernelKey(op *program.Op, optimizer strategies.Optimizer) hardware.Kernel {
	var k hardware.Kernel
	switch op.Kind {
	case program.OpAct:
		k = hardware.Kernel(op.Act)
	case program.OpNorm:
		k = hardware.KernelLayerNorm
		if op.Norm == model.KindRMSNorm {
			k = hardware.KernelRMSNorm
		}
	case program.OpLossStats:
		return hardware.KernelCrossEntropyStats
	case program.OpLoss:
		switch {
		case op.Loss == model.KindMSE:
			k = hardware.KernelMSE
		case op.VocabHi > 0 && op.Differentiates(): // vocabulary-parallel
			k = hardware.KernelCrossEntropyShard
		case op.VocabHi > 0:
			return hardware.KernelCrossEntropyCombine
		default:
			k = hardware.KernelCrossEntropy
		}
	case program.OpStep:
		return hardware.Kernel(optimizer)
	case program.OpAttention, program.OpEmbedding, program.OpAdd, program.OpMul, program.OpBias, program.OpDropout:
		k = hardware.Kernel(op.Kind)
	default:
		return ""
	}
	if op.Differentiates() {
		k = k.Backward()
	}
	return k
}

// kernelTime is the time of op at its kernel's measured rate, 0 when the hardware has none.
func (c *Coster) kernelTime(op *program.Op) units.Seconds {
	rates := c.HW.Efficiency.KernelRates
	if len(rates) == 0 || op.Elems == 0 {
		return 0
	}
	if r, ok := rates[KernelKey(op, c.P.Strategy.Optimizer)]; ok {
		return units.Seconds(float64(op.Elems) / r)
	}
	return 0
}

// gemmSize is the FLOPs of one GEMM of op: a linear backward is two GEMMs of the forward size.
func gemmSize(op *program.Op) units.FLOPs {
	if op.Differentiates() && op.Kind == program.OpLinear && op.GradInput {
		return op.FLOPs / 2
	}
	return op.FLOPs
}

// Comm is the alpha-beta time of a collective or point-to-point op.
func (c *Coster) Comm(op *program.Op) units.Seconds {
	if op.Group <= 1 || op.FullBytes == 0 && op.SentBytes == 0 {
		return 0
	}
	mesh := c.P.Strategy.Mesh
	stride := 1
	switch op.Dim {
	case strategies.DimDP:
		// The data-parallel group spans dp x cp ranks (context-parallel ranks also reduce gradients).
		stride = mesh.Stride(strategies.DimCP)
	case strategies.DimPP:
		if op.Kind == program.OpRecv {
			return 0 // the send carries the transfer (its latency and its bytes)
		}
		stride = mesh.Stride(strategies.DimPP)
		if op.Kind == program.OpAllReduce {
			// The tied embedding's gradient all-reduce between the first and the last pipeline
			// ranks (Megatron-LM's embedding group): a ring of two ranks, two steps on the level
			// that joins them, each rank sending the op's SentBytes (the whole gradient).
			return c.link(c.HW.LevelFor((mesh.PP-1)*stride+1), program.RingSteps(op.Kind, op.Group), op.SentBytes)
		}
		return PipelineSendTime(c.HW, c.P.Strategy, op.SentBytes)
	default:
		stride = mesh.Stride(op.Dim)
	}
	// On shared cores the ranks arrive from computing: a blocking collective also costs the
	// measured meeting overhead of the ranks computing at once (hardware.MeetOverhead: the
	// program's ranks, which share the cores whatever the group; 0 for devices of their own).
	t := CollectiveTime(c.HW, op.Kind, op.Group, stride, op.FullBytes) + c.HW.Meeting(mesh.Devices())
	if c.P.Strategy.TensorLists && op.Dim == strategies.DimDP && c.P.Strategy.ZeRO == 3 && op.Phase != program.Optimizer &&
		(op.Kind == program.OpAllGather || op.Kind == program.OpReduceScatter) {
		// DeepSpeed's ZeRO-3 of 2021: a list collective, one copy per rank for each parameter.
		t += units.Seconds(float64(op.Group*len(op.Params)) * c.HW.Efficiency.ListCopyMicros * 1e-6)
	}
	return t
}

// Hidden is the part of comm, the time of collective ops[i] of a stage, that runs under compute
// beside it: a context-parallel ring under its attention (ringHidden), and with
// Strategy.TPOverlap a backward tensor-parallel collective under a product of a neighbouring
// linear op, as Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication overlaps them
// (megatron/core/tensor_parallel/layers.py): the backward of a column-parallel linear computes the
// input gradient, launches its all-reduce over tp (reduce-scatter under sequence parallel) and
// computes the weight gradient while it runs; under sequence parallel it launches the all-gather
// of its saved input shard before the input gradient's product and waits for it before the weight
// gradient's. A linear's backward with an input gradient is two products of its FLOPs' halves,
// each half its time (Compute prices them at one product's efficiency). 0 for every other op.
// With Strategy.TPOverlapForward, sequence parallel's collectives are also split into chunks
// under the products beside them (chunkedHidden). What runs under the products slows them
// (OverlapSlowdown): a span h of communication under a product lengthens it by h·σ/(1+σ), so
// only h/(1+σ) of it is hidden.
func (c *Coster) Hidden(ops []program.Op, i int, comm units.Seconds) units.Seconds {
	return c.hidden(ops, i, comm) / units.Seconds(1+c.HW.Efficiency.OverlapSlowdown)
}

// OverlapSlowdown is σ of the hardware (hardware.Efficiency.OverlapSlowdown): while one of a
// rank's collectives runs beside its main sequence, the main sequence advances at 1/(1+σ).
func (c *Coster) OverlapSlowdown() float64 { return c.HW.Efficiency.OverlapSlowdown }

// slowedBy is how long work d of the main sequence takes from a moment when the rank's link has
// busy more seconds of communication left (0 when idle): at 1/(1+sigma) of its speed while the
// link runs, at full speed after.
func slowedBy(d, busy units.Seconds, sigma float64) units.Seconds {
	if sigma == 0 || busy <= 0 {
		return d
	}
	if slow := d * units.Seconds(1+sigma); slow <= busy {
		return slow
	}
	return d + busy*units.Seconds(sigma/(1+sigma))
}

// hidden is Hidden before the slowdown.
func (c *Coster) hidden(ops []program.Op, i int, comm units.Seconds) units.Seconds {
	op := &ops[i]
	if op.Dim == strategies.DimCP {
		return c.ringHidden(ops, i, comm)
	}
	st := &c.P.Strategy
	if !st.TPOverlap && !st.TPOverlapForward || op.Dim != strategies.DimTP || len(op.In) == 0 || len(op.Out) == 0 {
		return 0
	}
	if st.TPOverlapForward && st.SP {
		if h, ok := c.chunkedHidden(ops, i, comm); ok {
			return h
		}
	}
	if op.Phase != program.Backward {
		return 0
	}
	var l *program.Op
	switch op.Kind {
	case program.OpAllReduce, program.OpReduceScatter:
		if j := beside(ops, i, -1); j >= 0 && linearWithInputGrad(&ops[j]) && ops[j].Out[0] == op.In[0] {
			l = &ops[j]
		}
	case program.OpAllGather:
		if j := beside(ops, i, 1); j >= 0 && linearWithInputGrad(&ops[j]) && slices.Contains(ops[j].Saved, op.Out[0]) {
			l = &ops[j]
		}
	}
	if l == nil {
		return 0
	}
	return min(comm, c.Compute(l)/2)
}

// chunkedHidden is the part of comm, the time of sequence-parallel collective ops[i], that a
// decomposed overlap runs under the products beside it (Strategy.TPOverlapForward): the
// collective and the product are split into t = tp chunks, and each chunk's transfer runs under
// the product of a chunk already there, so that all but one chunk's product can hide
// communication: (t-1)/t of the products' time (Wang et al. 2023, ASPLOS '23, §3; Transformer
// Engine's userbuffers ring exchange, which NeMo's ub_tp_comm_overlap runs, and torchtitan's
// AsyncTP work the same way). It covers the forward's (and a recomputed forward's) all-gather
// under the column-parallel products that read its output, the forward's reduce-scatter under
// the row-parallel product that writes its input, and the backward's all-gather of an output
// gradient under the input-gradient half of the row-parallel backward that reads it; ok is false
// for other ops, which keep the backward rules of Hidden.
func (c *Coster) chunkedHidden(ops []program.Op, i int, comm units.Seconds) (hidden units.Seconds, ok bool) {
	op := &ops[i]
	share := units.Seconds(program.RingShare(op.Group))
	forward := func(o *program.Op) bool { return o.Phase == program.Forward || o.Recompute }
	isLinear := func(o *program.Op) bool { return o.Kind == program.OpLinear && forward(o) }
	switch {
	case op.Kind == program.OpAllGather && forward(op):
		var prod units.Seconds
		for j := beside(ops, i, 1); j >= 0 && isLinear(&ops[j]) && slices.Contains(ops[j].In, op.Out[0]); j = beside(ops, j, 1) {
			prod += c.Compute(&ops[j])
		}
		if prod > 0 {
			return min(comm, share*prod), true
		}
	case op.Kind == program.OpReduceScatter && forward(op):
		if j := beside(ops, i, -1); j >= 0 && isLinear(&ops[j]) && len(ops[j].Out) > 0 && ops[j].Out[0] == op.In[0] {
			return min(comm, share*c.Compute(&ops[j])), true
		}
	case op.Kind == program.OpAllGather && op.Phase == program.Backward:
		if j := beside(ops, i, 1); j >= 0 && linearWithInputGrad(&ops[j]) && len(ops[j].In) > 0 && ops[j].In[0] == op.Out[0] {
			return min(comm, share*c.Compute(&ops[j])/2), true
		}
	}
	return 0, false
}

// beside is the index of the op next to ops[i] in direction dir (+1 after, -1 before), past the
// data-parallel collectives between them (ZeRO-3's parameter gathers and gradient
// reduce-scatters, which run on their own link and stream), or -1 at either end.
func beside(ops []program.Op, i, dir int) int {
	for j := i + dir; j >= 0 && j < len(ops); j += dir {
		if !(ops[j].Kind.IsComm() && ops[j].Dim == strategies.DimDP) {
			return j
		}
	}
	return -1
}

// ringHidden is the part of comm, the time of context-parallel collective ops[i], that a ring
// attention runs under its blockwise products. The Program gathers the keys and values over cp
// before the attention, again before its backward (program's seqGathers: the ring keeps only its
// own chunk), and reduce-scatters their gradients after it; ring attention passes them around
// the ring in cp - 1 steps instead, each step's transfer under the products of the block received
// before it, so only the last block's products have no transfer to hide (Liu et al. 2023, "Ring
// Attention with Blockwise Transformers", arXiv:2310.01889, §3; Transformer Engine's context
// parallel, which Megatron-Core and NeMo run, exchanges KV chunks point to point overlapped with
// the attention of the previous chunk, and PyTorch's context_parallel rotates them with
// asynchronous send/receive). A forward gather hides min(comm, (cp-1)/cp of the attention's
// time); in backward the keys' and values' gather and their gradients' reduce-scatter share
// (cp-1)/cp of the attention backward's time, the gather first (the ring carries both in each
// step). Only with a blockwise (flash) kernel; exec does not run context parallel.
func (c *Coster) ringHidden(ops []program.Op, i int, comm units.Seconds) units.Seconds {
	op := &ops[i]
	if !c.P.Strategy.FusedAttention() || op.Group <= 1 {
		return 0
	}
	share := func(att *program.Op) units.Seconds {
		return c.Compute(att) * units.Seconds(program.RingShare(op.Group))
	}
	// gathers reports whether g is a context-parallel gather that attention att reads next.
	gathers := func(g, att *program.Op) bool {
		if g.Kind != program.OpAllGather || g.Dim != strategies.DimCP || att.Kind != program.OpAttention || len(g.Out) == 0 {
			return false
		}
		if att.Differentiates() {
			return slices.Contains(att.Saved, g.Out[0])
		}
		return slices.Contains(att.In, g.Out[0])
	}
	switch op.Kind {
	case program.OpAllGather: // the forward's, the recomputed forward's and the backward's
		if i+1 < len(ops) && gathers(op, &ops[i+1]) {
			return min(comm, share(&ops[i+1]))
		}
	case program.OpReduceScatter: // the KV gradients of the attention's backward just before
		if i > 0 && ops[i-1].Kind == program.OpAttention && ops[i-1].Differentiates() {
			att := &ops[i-1]
			left := share(att)
			if i > 1 && gathers(&ops[i-2], att) {
				left -= min(c.Comm(&ops[i-2]), left)
			}
			return min(comm, left)
		}
	}
	return 0
}

// linearWithInputGrad reports whether op is a linear's backward that computes its input's gradient.
func linearWithInputGrad(op *program.Op) bool {
	return op.Kind == program.OpLinear && op.Differentiates() && op.GradInput && len(op.Out) > 0 && op.Out[0] >= 0
}

// PipelineLevel is the topology level on which pipeline sends are priced: the level that holds
// all stages. When the stages of one pipeline span several nodes, some pair of neighbouring stages
// crosses between nodes (with tp x dp x cp = 4 on 8-GPU nodes, stages 1 and 2 do), and the
// slowest pair sets the pace of the whole pipeline.
func PipelineLevel(hw *hardware.Hardware, mesh strategies.Mesh) int {
	return hw.LevelFor(mesh.Devices())
}

func (c *Coster) link(level, steps int, bytes units.Bytes) units.Seconds {
	l := c.HW.Levels[level]
	return units.Seconds(steps)*l.Latency + units.Seconds(float64(bytes)/(float64(l.Bandwidth)*l.Efficiency))
}

// compose prices every stage of the Coster's Program and composes the step.
func (c *Coster) compose(t *Totals) ([]Memory, error) {
	p := c.P
	pieces := make([]Piece, len(p.Stages))
	for i, s := range p.Stages {
		pieces[i] = c.Piece(s)
	}
	return compose(p.Strategy, p.Microbatches, p.ParamBytes, p.GradBytes, p.OptBytes, pieces, t, composeOpts{ranks: true, sigma: c.OverlapSlowdown()})
}

// Predict prices program p on hw.
func Predict(p *program.Program, hw *hardware.Hardware) (*Result, error) {
	c, err := NewCoster(p, hw)
	if err != nil {
		return nil, err
	}
	st := p.Strategy
	var t Totals
	if _, err := c.compose(&t); err != nil {
		return nil, err
	}
	t.FLOPs.Model = program.ModelFLOPs(p.Model, st.GBS, st.Seq)
	t.finish(st, hw, c.peak)
	return t.result(p.Model.Name, st, planName(p), hw, c.peak, p.Microbatches, p.Model.Transformer != nil), nil
}

// assumptions lists what Predict and Estimate assume, in the same words.
func assumptions(st strategies.Strategy, hw *hardware.Hardware, peak units.FLOPsPerSecond, microbatches int, attention bool) []string {
	var a []string
	if st.Schedule == strategies.ScheduleInterleaved {
		a = append(a, fmt.Sprintf("interleaved 1F1B with %d chunks per device: bubble (p-1)/(v m) = %.3g of the compute",
			st.VPP, float64(st.Mesh.PP-1)/float64(st.VPP)/float64(microbatches)))
	}
	a = append(a,
		fmt.Sprintf("GEMM efficiency %.3g x f/(f + %.3g FLOPs) of %v peak; elementwise ops at %.2g of %v",
			hw.Efficiency.GEMMLimit(), float64(hw.Efficiency.GEMMHalfFLOPs), peak, hw.Efficiency.MemMax, hw.Device.MemBandwidth))
	switch {
	case attention && st.FusedAttention():
		k, _ := flashKernel(st)
		a = append(a, fmt.Sprintf("attention by %s at %.3g of peak: the causal half of the s x s products, backward 2.5x the forward, no s x s activations; hardware FLOPs count that half and model FLOPs the full products, so HFU can be below MFU", k.Name, k.Fraction(hw.Efficiency)))
	case attention && (st.Recompute == strategies.RecomputeNone || st.Recompute == strategies.RecomputeOp):
		a = append(a, "eager attention: separate kernels for the products, softmax and dropout, the s x s probabilities kept for backward")
	case attention:
		a = append(a, fmt.Sprintf("eager attention: separate kernels for the products, softmax and dropout, the s x s probabilities recomputed in backward (recompute=%s)", st.Recompute))
	}
	a = append(a, fmt.Sprintf("schedule %s; %d microbatches of %d per pipeline; dp gradient overlap %v", st.Schedule, microbatches, st.MBS, st.Overlap))
	if st.TensorLists && st.ZeRO == 3 {
		a = append(a, fmt.Sprintf("ZeRO-3 collectives over tensor lists (tensorlists=on, DeepSpeed's ZeRO-3 of 2021): each gather and reduce-scatter also pays dp x its parameters copies of %.3g us", hw.Efficiency.ListCopyMicros))
	}
	if st.TPOverlapForward && st.SP && st.Mesh.TP > 1 {
		return append(a, "sequence parallel's all-gathers and reduce-scatters split into tp chunks under the products beside them, forward and backward (tpoverlap=full: Transformer Engine's userbuffers, torchtitan's AsyncTP), and the backward's under the column-parallel linears' products; the pipeline communication on the critical path")
	}
	if st.TPOverlap && st.Mesh.TP > 1 {
		return append(a, "backward tensor-parallel collectives under the column-parallel linears' products (tpoverlap=on, Megatron-LM's asynchronous communication); the forward's tensor-parallel and the pipeline communication on the critical path")
	}
	return append(a, "tensor-parallel and pipeline communication on the critical path, not overlapped with compute")
}

func planName(p *program.Program) string {
	if p.Strategy.Mesh.TP == 1 {
		return "none"
	}
	if p.Strategy.Plan == nil {
		return "megatron"
	}
	return p.Strategy.Plan.String()
}
