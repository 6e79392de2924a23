package strategies

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/model"
)

// Recompute modes (Korthikanti et al. 2022 §4): none keeps every activation; selective recomputes the
// attention core (softmax and its inputs) in backward; full keeps only each layer's input and reruns
// the layer's forward in backward. op is PyTorch's per-op selective activation checkpointing as
// torchtitan sets it (selective_ac_option "op", torchtitan/parallelisms/parallelize_llama.py,
// Dec 2024): each layer keeps its input, the outputs of its attention and of every other matrix
// product (the first, third, ...), and replays the rest of its forward in backward. The planner
// does not search it (see RecomputeModes); a strategy may state it.
type Recompute string

const (
	RecomputeNone      Recompute = "none"
	RecomputeSelective Recompute = "selective"
	RecomputeFull      Recompute = "full"
	RecomputeOp        Recompute = "op"
)

// Schedule is a pipeline schedule (Narayanan et al. 2021 §2.2).
type Schedule string

// Pipeline schedules.
const (
	ScheduleGPipe       Schedule = "gpipe"
	Schedule1F1B        Schedule = "1f1b"
	ScheduleInterleaved Schedule = "interleaved"
)

// Precisions. Mixed is bf16 compute with fp32 master weights and Adam moments (Rajbhandari et al.
// 2020 §3.1: 2 + 2 + 12 bytes per parameter); fp32 is what exec runs. FP8 is mixed with the
// Linear layers' matrix products in FP8 (Transformer Engine, torchao Float8 linears): the same
// bytes per parameter, the products at the hardware's FP8 rate (costmodel prices it).
type Precision string

// Precisions.
const (
	PrecisionMixed Precision = "mixed"
	PrecisionFP32  Precision = "fp32"
	PrecisionFP8   Precision = "fp8"
)

// Precisions lists every precision the strategy key precision= and tpsim's --precision flag
// accept, in the order their messages list them.
var Precisions = []Precision{PrecisionMixed, PrecisionFP32, PrecisionFP8}

// ParsePrecision reads a precision name (case-insensitive), one of Precisions. The error names
// key (as "precision" for the strategy key or "--precision" for the flag) and the valid values.
func ParsePrecision(key, v string) (Precision, error) {
	return oneOf(key, strings.TrimSpace(v), Precisions...)
}

// Attention kernels. Eager runs the attention core as separate kernels (two batched products,
// softmax, dropout), keeping the s x s probabilities for backward, as PyTorch's eager attention
// and Megatron-LM's unfused path do. Flash is FlashAttention-2 (Dao 2023): one fused kernel that
// keeps only the output and the softmax's log-sum-exp, skips the masked half of a causal product
// and recomputes the scores in backward (5 products for the forward's 2, §4.1). Flash1 is the
// kernel's first generation, FlashAttention (Dao et al. 2022) or its Triton port (the
// attn_impl triton of MosaicML's llm-foundry): the same algorithm, values, FLOPs and memory, at a
// lower fraction of peak (FlashAttention-2 is 1.7-3.0x faster than FlashAttention and 1.3-2.5x
// faster than its Triton port on A100, Dao 2023 §4.1), so only its price differs.
type Attention string

// Attention kernels.
const (
	AttentionEager  Attention = "eager"
	AttentionFlash  Attention = "flash"
	AttentionFlash1 Attention = "flash1"
)

// Kernels is how the software stack writes the RMSNorm and the rotary position embedding.
// KernelsFused runs each as one kernel: Megatron-LM, NeMo and Transformer Engine (Apex's and TE's
// fused norms, TE's fused rotary embedding), torchtitan's norm_type "fused_rmsnorm". KernelsEager
// runs them as the PyTorch tensor ops their modules are written in, one kernel per op, as
// torchtitan's default norm_type "rmsnorm" (torchtitan/models/norms.py RMSNorm: x.float(), pow,
// mean, rsqrt, mul, type_as, mul by the weight; its Llama configs set it, train_configs/
// llama3_8b.toml) and its complex-valued apply_rotary_emb, or Hugging Face transformers'
// LlamaRMSNorm and apply_rotary_pos_emb do. LayerNorm is one kernel either way (PyTorch's native
// layer_norm). Under torch.compile (Strategy.Compile) Inductor fuses the eager ops again.
type Kernels string

// Kernel implementations of the norms and the rotary embedding.
const (
	KernelsFused Kernels = "fused"
	KernelsEager Kernels = "eager"
)

// EagerKernels reports whether the stack runs an RMSNorm (and the rotary embedding) as separate
// eager kernels: kernels=eager without torch.compile.
func (st Strategy) EagerKernels() bool { return st.Kernels == KernelsEager && !st.Compile }

// FusedAttention reports whether the attention core is a FlashAttention kernel of either
// generation: one fused kernel that keeps the output and the log-sum-exp only.
func (st Strategy) FusedAttention() bool {
	return st.Attention == AttentionFlash || st.Attention == AttentionFlash1
}

// Optimizer is the training optimizer.
type Optimizer string

// Optimizers.
const (
	OptimizerAdam Optimizer = "adam"
	OptimizerSGD  Optimizer = "sgd"
)

// Strategy is how a model is split and trained. The zero value is not valid; use Default or Parse.
type Strategy struct {
	Mesh Mesh `json:"-"`
	// MBS is the microbatch in samples per data-parallel rank; GBS the global batch in samples (0 =
	// the model's batch). The step runs GBS/(DP*MBS) microbatches on each pipeline.
	MBS int `json:"mbs"`
	GBS int `json:"gbs"`
	// Seq overrides the model's sequence length when positive.
	Seq       int       `json:"seq"`
	ZeRO      int       `json:"zero"`
	Recompute Recompute `json:"recompute"`
	SP        bool      `json:"sp"`
	Schedule  Schedule  `json:"schedule"`
	VPP       int       `json:"vpp"`
	Precision Precision `json:"precision"`
	Optimizer Optimizer `json:"optimizer"`
	// Attention is the attention kernel: AttentionEager, AttentionFlash or AttentionFlash1.
	Attention Attention `json:"attn"`
	// Overlap lets data-parallel gradient reduction run under backward (PyTorch DDP's default).
	Overlap bool `json:"overlap"`
	// BucketBytes is the data-parallel gradient bucket size (PyTorch DDP default 25 MiB).
	BucketBytes int64 `json:"bucket_bytes"`
	// TPOverlap runs the backward's tensor-parallel collectives of a column-parallel linear under
	// its products, as Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication does
	// (megatron/core/tensor_parallel/layers.py): the input gradient's all-reduce (reduce-scatter
	// under sequence parallel) under the weight-gradient product, and sequence parallel's
	// re-gather of the input under the input-gradient product. Off by default (PyTorch's
	// parallelize_module runs them in order); exec does not execute it.
	TPOverlap bool `json:"tp_overlap"`
	// TPOverlapForward also runs sequence parallel's forward collectives under the products
	// beside them (tpoverlap=full, which implies TPOverlap): each all-gather under the
	// column-parallel products that read it, each reduce-scatter under the row-parallel product
	// that writes it, and in backward the gradient's all-gather under the row-parallel input
	// gradient's product, each split into tp chunks so that one chunk's transfer runs under
	// another's product (Wang et al. 2023, "Overlap Communication with Dependent Computation via
	// Decomposition in Large Deep Learning Models", ASPLOS '23; Transformer Engine's userbuffers,
	// NeMo's ub_tp_comm_overlap; torchtitan's AsyncTP). Only under sequence parallel; exec does
	// not execute it.
	TPOverlapForward bool `json:"tp_overlap_forward"`
	// TensorLists runs ZeRO-3's parameter gathers and gradient reduce-scatters through
	// torch.distributed's collectives over lists of tensors, one tensor per rank, as DeepSpeed's
	// ZeRO-3 of 2021 did (deepspeed/runtime/zero/partition_parameters.py: _allgather_params
	// copies each parameter's slice out of every rank's partition, _reduce_scatter_gradient hands
	// a list of one slice per rank to reduce_scatter): each collective also pays group size x
	// its parameters copies (hardware.Efficiency.ListCopyMicros each). That engine also released
	// a submodule's parameters after every forward, so under recompute the recomputed forward and
	// the backward gather them once each (program.Lower), where FSDP and later DeepSpeed gather
	// once for both. Off by default (one flat buffer per collective, as FSDP and later
	// DeepSpeed); exec does not execute it.
	TensorLists bool `json:"tensor_lists"`
	// Prefetch is how many ZeRO-3 units (program.PrefetchUnit: transformer layers, the
	// embedding, the head) ahead of the one computing may have their parameter gathers in
	// flight: the gathers of a unit may start once the unit Prefetch before it has started. The
	// default, 1, is PyTorch FSDP's: its backward prefetch (BackwardPrefetch.BACKWARD_PRE) issues
	// the next unit's all-gather as the current unit's backward starts, and limit_all_gathers
	// holds the forward to the current and the next unit (torch/distributed/fsdp docs; FSDP2
	// prefetches one unit in both). Each prefetched unit's gathered parameters are held while
	// it waits; without overlap every gather blocks and nothing is prefetched.
	Prefetch int `json:"prefetch"`
	// Fusion runs the bias, dropout and residual add that close each attention and MLP block as
	// one kernel, as Megatron-LM does by default (--bias-dropout-fusion: bias_dropout_add_fused_train,
	// a torch.jit.script function in megatron/model/transformer.py; Megatron-Core keeps it): it
	// reads the branch and the residual once and writes the sum and the dropout mask, where
	// separate kernels write and read back two intermediate tensors. The backward is unchanged
	// (the masked scale and the bias gradient's sum are the same kernels). Off by default
	// (PyTorch eager); exec does not execute it.
	Fusion bool `json:"fusion"`
	// Compile runs the model under torch.compile: Inductor fuses each chain of pointwise ops and
	// normalizations between the matrix products, attention and collectives into one kernel, in
	// forward and backward (Ansel et al. 2024, PyTorch 2, ASPLOS '24), which reads its inputs
	// once and writes only what later ops read (program.Stage's compileFusion); it subsumes
	// Fusion. torchtitan's recipes turn it on (--training.compile). Off by default (PyTorch
	// eager); exec does not execute it.
	Compile bool `json:"compile"`
	// Kernels is how the stack writes the RMSNorm and the rotary embedding (see Kernels): one
	// fused kernel each (the default) or eager PyTorch ops; exec does not execute eager.
	Kernels Kernels `json:"kernels"`
	// Plan is the tensor-parallel plan; nil means the model family's Megatron plan when tp > 1.
	Plan *Plan `json:"-"`
}

// DefaultBucketBytes is torch.nn.parallel.DistributedDataParallel's bucket_cap_mb = 25.
const DefaultBucketBytes = 25 << 20

// Default returns a strategy on mesh with every option at its default: one sample per microbatch,
// the model's batch, no ZeRO, no recompute, no sequence parallel, 1F1B, mixed precision Adam, DP
// overlap on, eager attention, the Megatron plan.
func Default(mesh Mesh) Strategy {
	return Strategy{Mesh: mesh, MBS: 1, Recompute: RecomputeNone, Schedule: Schedule1F1B, VPP: 1,
		Precision: PrecisionMixed, Optimizer: OptimizerAdam, Attention: AttentionEager, Overlap: true, BucketBytes: DefaultBucketBytes, Prefetch: 1, Kernels: KernelsFused}
}

// OptionKeys lists the keys Parse accepts besides the mesh dimensions.
var OptionKeys = []string{"mbs", "gbs", "seq", "zero", "recompute", "sp", "schedule", "vpp", "precision", "optimizer", "attn", "overlap", "bucket_mb", "tpoverlap", "tensorlists", "prefetch", "fusion", "compile", "kernels"}

// Parse reads a strategy such as "dp=24,tp=8,pp=8,mbs=1,gbs=2304,recompute=full,sp=off,zero=0".
// Mesh dimensions and options may come in any order; what is not given keeps its Default value.
func Parse(s string) (Strategy, error) {
	st := Default(Mesh{1, 1, 1, 1})
	s = strings.TrimSpace(s)
	if s == "" {
		return st, fmt.Errorf("strategies: empty strategy; write it as \"dp=8,tp=8,mbs=1\" (mesh dimensions %s; options %s)",
			strings.Join(DimNames(), ", "), strings.Join(OptionKeys, ", "))
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, err := splitKV(part)
		if err != nil {
			return st, err
		}
		if isMeshDim(k) {
			if err := setMeshDim(&st.Mesh, k, v, seen); err != nil {
				return st, err
			}
			continue
		}
		if seen[k] {
			return st, fmt.Errorf("strategies: option %q given twice", k)
		}
		seen[k] = true
		if err := st.set(k, v); err != nil {
			return st, err
		}
	}
	if st.VPP > 1 && !seen["schedule"] {
		// Model chunks are the interleaved schedule's: vpp > 1 implies it.
		st.Schedule = ScheduleInterleaved
	}
	return st, nil
}

// Short prints st completely and canonically in Parse's form, shorter than String: the mesh
// dimensions above 1, mbs and gbs always, seq when set (always, for a resolved transformer), and
// every other option where it differs from Default (schedule, vpp, zero, recompute, sp,
// precision, optimizer, attn, overlap, bucket_mb, tpoverlap, tensorlists, prefetch, fusion).
// Parse(st.Short()) is st for a resolved st without a tensor-parallel plan.
func (st Strategy) Short() string {
	d := Default(st.Mesh)
	parts := []string{st.Mesh.String(), "mbs=" + strconv.Itoa(st.MBS), "gbs=" + strconv.Itoa(st.GBS)}
	add := func(differs bool, kv string) {
		if differs {
			parts = append(parts, kv)
		}
	}
	add(st.Seq != 0, "seq="+strconv.Itoa(st.Seq))
	add(st.ZeRO != d.ZeRO, "zero="+strconv.Itoa(st.ZeRO))
	add(st.Recompute != d.Recompute, "recompute="+string(st.Recompute))
	add(st.SP != d.SP, "sp=on")
	add(st.Schedule != d.Schedule, "schedule="+string(st.Schedule))
	add(st.VPP != d.VPP, "vpp="+strconv.Itoa(st.VPP))
	add(st.Precision != d.Precision, "precision="+string(st.Precision))
	add(st.Optimizer != d.Optimizer, "optimizer="+string(st.Optimizer))
	add(st.Attention != d.Attention, "attn="+string(st.Attention))
	add(st.Overlap != d.Overlap, "overlap=off")
	add(st.BucketBytes != d.BucketBytes, "bucket_mb="+strconv.Itoa(int(st.BucketBytes>>20)))
	add(st.TPOverlap != d.TPOverlap || st.TPOverlapForward != d.TPOverlapForward, "tpoverlap="+st.tpOverlapName())
	add(st.TensorLists != d.TensorLists, "tensorlists=on")
	add(st.Prefetch != d.Prefetch, "prefetch="+strconv.Itoa(st.Prefetch))
	add(st.Fusion != d.Fusion, "fusion=on")
	add(st.Compile != d.Compile, "compile=on")
	add(st.Kernels != d.Kernels, "kernels="+string(st.Kernels))
	return strings.Join(parts, ",")
}

func oneOf[T ~string](k, v string, valid ...T) (T, error) {
	v = strings.ToLower(v)
	names := make([]string, len(valid))
	for i, x := range valid {
		if v == string(x) {
			return x, nil
		}
		names[i] = string(x)
	}
	return "", fmt.Errorf("strategies: %s=%q is not valid; use one of %s", k, v, strings.Join(names, ", "))
}

func onOff(k, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("strategies: %s=%q is not valid; use on or off", k, v)
}

func (st *Strategy) set(k, v string) error {
	var err error
	switch k {
	case "mbs":
		st.MBS, err = positive(k, v)
	case "gbs":
		st.GBS, err = positive(k, v)
	case "seq":
		// Leaving seq out means the model's sequence; seq=0 written out is refused rather than
		// read as that default, which it would silently be (String and Short leave it out for a
		// model without a sequence, an MLP, so that their output parses back).
		if n, e := strconv.Atoi(strings.TrimSpace(v)); e == nil && n == 0 {
			return fmt.Errorf("strategies: seq=0 is not a sequence length; leave seq out to train at the model's own sequence length, or give a positive number of tokens, e.g. seq=4096")
		}
		st.Seq, err = positive(k, v)
	case "vpp":
		st.VPP, err = positive(k, v)
	case "bucket_mb":
		var n int
		n, err = positive(k, v)
		st.BucketBytes = int64(n) << 20
	case "zero":
		n, e := strconv.Atoi(v)
		if e != nil || n < 0 || n > 3 {
			return fmt.Errorf("strategies: zero=%q is not valid; use 0, 1, 2 or 3 (ZeRO stage)", v)
		}
		st.ZeRO = n
	case "recompute":
		st.Recompute, err = oneOf(k, v, RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeOp)
	case "schedule":
		st.Schedule, err = oneOf(k, v, ScheduleGPipe, Schedule1F1B, ScheduleInterleaved)
	case "precision":
		st.Precision, err = ParsePrecision(k, v)
	case "optimizer":
		st.Optimizer, err = oneOf(k, v, OptimizerAdam, OptimizerSGD)
	case "attn":
		st.Attention, err = oneOf(k, v, AttentionEager, AttentionFlash, AttentionFlash1)
	case "sp":
		st.SP, err = onOff(k, v)
	case "overlap":
		st.Overlap, err = onOff(k, v)
	case "tpoverlap":
		if strings.EqualFold(strings.TrimSpace(v), "full") {
			st.TPOverlap, st.TPOverlapForward = true, true
			break
		}
		if st.TPOverlap, err = onOff(k, v); err != nil {
			err = fmt.Errorf("strategies: %s=%q is not valid; use on (the backward's collectives under the products), full (the forward's too, under sequence parallel) or off", k, v)
		}
		st.TPOverlapForward = false
	case "tensorlists":
		st.TensorLists, err = onOff(k, v)
	case "prefetch":
		st.Prefetch, err = positive(k, v)
	case "fusion":
		st.Fusion, err = onOff(k, v)
	case "compile":
		st.Compile, err = onOff(k, v)
	case "kernels":
		st.Kernels, err = oneOf(k, v, KernelsFused, KernelsEager)
	default:
		keys := append(DimNames(), OptionKeys...)
		sort.Strings(keys)
		return fmt.Errorf("strategies: unknown option %q; valid keys: %s", k, strings.Join(keys, ", "))
	}
	return err
}

// tpOverlapName is the tpoverlap value Parse reads back: off, on (the backward's collectives) or
// full (the forward's too).
func (st Strategy) tpOverlapName() string {
	switch {
	case st.TPOverlapForward:
		return "full"
	case st.TPOverlap:
		return "on"
	}
	return "off"
}

// String prints every option, resolved, in the form Parse reads; seq only when it is set (a
// model without a sequence, an MLP, resolves to none, and Parse refuses seq=0).
func (st Strategy) String() string {
	onoff := map[bool]string{true: "on", false: "off"}
	seq := ""
	if st.Seq != 0 {
		seq = ",seq=" + strconv.Itoa(st.Seq)
	}
	return fmt.Sprintf("pp=%d,dp=%d,cp=%d,tp=%d,mbs=%d,gbs=%d%s,zero=%d,recompute=%s,sp=%s,schedule=%s,vpp=%d,precision=%s,optimizer=%s,attn=%s,overlap=%s,bucket_mb=%d,tpoverlap=%s,tensorlists=%s,prefetch=%d,fusion=%s,compile=%s,kernels=%s",
		st.Mesh.PP, st.Mesh.DP, st.Mesh.CP, st.Mesh.TP, st.MBS, st.GBS, seq, st.ZeRO, st.Recompute, onoff[st.SP],
		st.Schedule, st.VPP, st.Precision, st.Optimizer, st.Attention, onoff[st.Overlap], st.BucketBytes>>20, st.tpOverlapName(), onoff[st.TensorLists], st.Prefetch, onoff[st.Fusion], onoff[st.Compile], st.Kernels)
}

// Resolve fills the options that depend on the model (global batch, sequence length) and returns
// the resolved strategy.
func (st Strategy) Resolve(m *model.Model) Strategy {
	if st.GBS == 0 {
		st.GBS = m.Batch
	}
	if st.Seq == 0 {
		st.Seq = m.Seq
	}
	return st
}

// MaxSeq and MaxBatch bound the sizes tpsim prices, so that element counts (a microbatch's
// attention scores are mbs x heads x seq^2) stay exact in int64.
const (
	MaxSeq   = 1 << 20
	MaxBatch = 1 << 24
)

// Microbatches is the number of microbatches each pipeline runs per step.
func (st Strategy) Microbatches() int { return st.GBS / (st.Mesh.DP * st.MBS) }

// Validate checks st against m and returns an error that names the fix. st must be Resolved.
func (st Strategy) Validate(m *model.Model) error {
	ms := st.Mesh
	if ms.PP < 1 || ms.DP < 1 || ms.CP < 1 || ms.TP < 1 {
		return fmt.Errorf("strategies: mesh %+v has a dimension below 1", ms)
	}
	if st.MBS < 1 || st.GBS < 1 {
		return fmt.Errorf("strategies: mbs=%d gbs=%d; both must be positive", st.MBS, st.GBS)
	}
	if st.GBS%(ms.DP*st.MBS) != 0 {
		return fmt.Errorf("strategies: global batch %d is not divisible by dp x mbs = %d x %d; use a global batch that is a multiple of %d, or dp x mbs among the divisors %s of %d",
			st.GBS, ms.DP, st.MBS, ms.DP*st.MBS, intsString(divisors(st.GBS)), st.GBS)
	}
	if st.Prefetch < 1 {
		return fmt.Errorf("strategies: prefetch=%d; ZeRO-3 prefetches at least the next unit: use prefetch=1 (FSDP's default) or more", st.Prefetch)
	}
	if st.ZeRO > 0 && ms.DP == 1 {
		return fmt.Errorf("strategies: zero=%d shards over the data-parallel dimension, but dp=1; use dp>1 or zero=0", st.ZeRO)
	}
	if st.ZeRO > 0 && ms.PP > 1 && st.ZeRO >= 2 {
		return fmt.Errorf("strategies: zero=%d with pipeline parallel is not supported (gradient sharding conflicts with gradient accumulation across microbatches, as DeepSpeed also forbids); use zero=0 or 1 with pp>1", st.ZeRO)
	}
	if st.Schedule == ScheduleInterleaved {
		if ms.PP == 1 {
			return fmt.Errorf("strategies: schedule=interleaved needs pp>1")
		}
	} else if st.VPP != 1 {
		return fmt.Errorf("strategies: vpp=%d needs schedule=interleaved; add schedule=interleaved (model chunks are the interleaved schedule's) or drop vpp", st.VPP)
	}
	if st.TPOverlapForward && ms.TP > 1 && !st.SP {
		return fmt.Errorf("strategies: tpoverlap=full overlaps sequence parallel's all-gathers and reduce-scatters with the products beside them; add sp=on, or use tpoverlap=on (the backward's collectives only)")
	}
	if st.SP && ms.TP == 1 {
		return fmt.Errorf("strategies: sp=on (sequence parallel) needs tp>1")
	}
	if st.MBS > MaxBatch || st.GBS > MaxBatch {
		return fmt.Errorf("strategies: mbs=%d gbs=%d; tpsim prices batches up to %d samples", st.MBS, st.GBS, MaxBatch)
	}
	t := m.Transformer
	if t == nil {
		if ms.PP > 1 || ms.CP > 1 {
			return fmt.Errorf("strategies: pipeline and context parallel split transformer layers and sequences; model %q has neither, use pp=1,cp=1", m.Name)
		}
		if st.SP {
			return fmt.Errorf("strategies: sp=on needs a sequence; model %q has none", m.Name)
		}
		if st.Recompute != RecomputeNone {
			return fmt.Errorf("strategies: recompute=%s applies to transformer layers; model %q has none, use recompute=none", st.Recompute, m.Name)
		}
		if st.Attention != AttentionEager {
			return fmt.Errorf("strategies: attn=%s chooses the attention kernel; model %q has no attention, use attn=eager", st.Attention, m.Name)
		}
		return nil
	}
	if st.Seq > MaxSeq {
		return fmt.Errorf("strategies: seq=%d is longer than the %d tokens tpsim prices; use seq<=%d", st.Seq, MaxSeq, MaxSeq)
	}
	valid := func(n int) []int {
		var out []int
		for _, d := range divisors(n) {
			if d <= 64 {
				out = append(out, d)
			}
		}
		return out
	}
	if t.Heads%ms.TP != 0 || t.KVHeads%ms.TP != 0 {
		return fmt.Errorf("strategies: tp=%d does not divide %d attention heads and %d key/value heads; try tp in %s",
			ms.TP, t.Heads, t.KVHeads, intsString(valid(gcd(t.Heads, t.KVHeads))))
	}
	if t.FFN%ms.TP != 0 {
		return fmt.Errorf("strategies: tp=%d does not divide the MLP width %d; try tp in %s", ms.TP, t.FFN, intsString(valid(gcd(t.FFN, gcd(t.Heads, t.KVHeads)))))
	}
	if t.Vocab%ms.TP != 0 {
		return fmt.Errorf("strategies: tp=%d does not divide the vocabulary %d; pad the vocabulary to a multiple of %d (Megatron pads to 128*tp) or try tp in %s",
			ms.TP, t.Vocab, ms.TP, intsString(valid(gcd(t.Vocab, gcd(t.Heads, t.KVHeads)))))
	}
	if t.Layers < ms.PP {
		return fmt.Errorf("strategies: pp=%d is more pipeline stages than the %d layers; use pp<=%d", ms.PP, t.Layers, t.Layers)
	}
	if st.Schedule == ScheduleInterleaved && t.Layers%ms.PP != 0 {
		return fmt.Errorf("strategies: the interleaved schedule needs pp=%d to divide the %d layers; try pp in %s", ms.PP, t.Layers, intsString(valid(t.Layers)))
	}
	if st.Schedule == ScheduleInterleaved && (t.Layers/ms.PP)%st.VPP != 0 {
		return fmt.Errorf("strategies: vpp=%d does not divide the %d layers per pipeline stage; try vpp in %s", st.VPP, t.Layers/ms.PP, intsString(divisors(t.Layers/ms.PP)))
	}
	if st.Schedule == ScheduleInterleaved && st.Microbatches()%ms.PP != 0 {
		return fmt.Errorf("strategies: the interleaved schedule needs the %d microbatches to be a multiple of pp=%d (Megatron-LM's rule); change gbs or mbs", st.Microbatches(), ms.PP)
	}
	if st.Seq%(ms.CP) != 0 || (st.SP && (st.Seq/ms.CP)%ms.TP != 0) {
		return fmt.Errorf("strategies: sequence length %d is not divisible by cp=%d (x tp=%d with sequence parallel); use a sequence length that is a multiple of %d",
			st.Seq, ms.CP, ms.TP, ms.CP*ms.TP)
	}
	if t.Learned && st.Seq > t.Seq {
		return fmt.Errorf("strategies: seq=%d is longer than the %d learned positions of %q; use seq<=%d", st.Seq, t.Seq, m.Name, t.Seq)
	}
	return windowFits(m, st.Seq)
}

// windowFits refuses a sequence longer than the model's sliding attention window: tpsim prices
// full causal attention, which is what windowed attention computes only while the sequence fits
// in the window (model.Transformer.Window). It also refuses a model tpsim cannot lower yet
// (mixture-of-experts, latent attention: model.Model.Lowerable), so every command that prices a
// model says so instead of pricing a dense transformer it is not.
func windowFits(m *model.Model, seq int) error {
	if err := m.Lowerable(); err != nil {
		return err
	}
	if t := m.Transformer; t != nil && t.Window > 0 && seq > t.Window {
		return fmt.Errorf("strategies: seq=%d is longer than the %d-token sliding attention window of %q; tpsim prices full causal attention, which such a model computes only within its window, so use seq<=%d", seq, t.Window, m.Name, t.Window)
	}
	return nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
