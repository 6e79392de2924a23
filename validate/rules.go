package validate

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// ruleCase is what the strategy rules read of one record, and what they have decided so far.
type ruleCase struct {
	r              *Record
	m              *model.Model
	fam            string
	tp, pp, dp, cp int
	gbs            int
	notes          string // the record's notes, in lower case
	// zero is the ZeRO stage decided so far; zeroStated whether the record (or its software's
	// rule) gave it.
	zero       int
	zeroStated bool
	// keys are the strategy keys decided (strategies.ParseFix form), assumed the lines that say
	// what was assumed, in the order the rules ran.
	keys, assumed []string
}

// set appends a strategy key ("" none) and assumption lines.
func (c *ruleCase) set(key string, assumed ...string) {
	if key != "" {
		c.keys = append(c.keys, key)
	}
	c.assumed = append(c.assumed, assumed...)
}

// strategyRule is one named rule of a record's strategy: where it holds, the key it sets and what
// it assumes, and the source of the software's behaviour it follows.
type strategyRule struct {
	Name   string
	Source string
	// When says whether the rule holds; nil: always (a knob's last, default rule).
	When func(c *ruleCase) bool
	// Key is the strategy key set ("" none) and Assumed the line added to the row's assumed list
	// ("" none), when both are fixed; Apply does what depends on the record.
	Key, Assumed string
	Apply        func(c *ruleCase)
}

// knobRules are the rules of one knob: the first that holds applies, as a switch.
type knobRules struct {
	Knob  string
	Rules []strategyRule
}

// strategyRules are recordStrategy's rules, knob by knob, in the order they run (and their keys
// and assumptions are listed). Knobs no rule decides are left to tpsim's search.
var strategyRules = []knobRules{
	{"zero", []strategyRule{
		{Name: "ZeRO stage as stated", Source: "the record",
			When: func(c *ruleCase) bool { return c.r.Parallel.ZeRO != nil }, Apply: func(c *ruleCase) { c.zero = *c.r.Parallel.ZeRO }},
		{Name: "FSDP is ZeRO-3", Source: "the record (fsdp: true): FSDP's full sharding is ZeRO stage 3",
			When: func(c *ruleCase) bool { return c.r.Parallel.FSDP != nil && *c.r.Parallel.FSDP }, Apply: func(c *ruleCase) { c.zero = 3 }},
		{Name: "NeMo's distributed optimizer",
			Source: "Megatron-Core 2024 as NeMo 24.x runs it uses the distributed optimizer (NeMo's performance recipes set use_distributed_optimizer)",
			When:   func(c *ruleCase) bool { return c.fam == FamilyNeMo && c.dp*c.cp > 1 },
			Apply:  func(c *ruleCase) { c.zero = 1 }, Assumed: "ZeRO stage not stated: 1, Megatron-Core's distributed optimizer as NeMo 24.x runs it"},
		{Name: "ZeRO stage not stated", Source: "none: decided below (zero=0)", Apply: func(c *ruleCase) { c.zeroStated = false }},
	}},
	{"zero under torchtitan", []strategyRule{
		{Name: "torchtitan FSDP over one dp rank", Source: "torchtitan shards over dp x cp, which tpsim cannot express",
			When:    func(c *ruleCase) bool { return c.zero == 3 && c.fam == FamilyTorchtitan && c.dp == 1 },
			Apply:   func(c *ruleCase) { c.zero = 0 },
			Assumed: "FSDP over one data-parallel rank: priced as no sharding (torchtitan shards over dp x cp, which tpsim cannot express); " + noMemory},
		{Name: "torchtitan FSDP with pp", Source: "torchtitan: reshard_after_forward off under pp",
			When:    func(c *ruleCase) bool { return c.zero == 3 && c.fam == FamilyTorchtitan && c.pp > 1 },
			Apply:   func(c *ruleCase) { c.zero = 1 },
			Assumed: "FSDP with pipeline parallel: torchtitan keeps the parameters gathered across the microbatches (reshard_after_forward off under pp), priced as ZeRO-1 (tpsim's ZeRO-3 does not combine with pp); " + noMemory},
	}},
	{"overlap", []strategyRule{
		{Name: "Megatron-LM reduces gradients after backward",
			Source: `Korthikanti et al. 2022 §6.3: "we do not use any overlapping of gradient all-reduces with back-propagation"; ` +
				"DeepSpeed's pipeline engine reduces after the last microbatch's backward (deepspeed/runtime/pipe/schedule.py: ReduceTiedGrads, ReduceGrads, OptimizerStep) " +
				"and its ZeRO overlaps by default only at stage 3 (deepspeed/runtime/zero/config.py, overlap_comm_valid: stage == 3)",
			When: func(c *ruleCase) bool { return (c.fam == FamilyMegatron || c.fam == FamilyBLOOM) && c.zero < 3 }, Key: "overlap=off",
			Assumed: "data-parallel gradient reduction after backward, not overlapped (Megatron-LM, Korthikanti et al. 2022 §6.3; DeepSpeed's pipeline engine and ZeRO below stage 3)"},
		{Name: "DeepSpeed 2021's synchronous ZeRO-3",
			Source: `DeepSpeed's ZeRO-3 of 2021 fetched each module's parameters when the module ran and waited for them: every all-gather synchronized the device on the one before it ` +
				`(deepspeedai/DeepSpeed PR #1188, June 2021: "the async version is not async at all, because each all_gather calls torch.cuda.synchronize()"), ` +
				`and its prefetch traced modules off by one until PR #1170 (issue #1069, "Performance Degradation with ZERO Stage 3"); an overlapped prefetch came later, ` +
				"with the stage-3 rework of PR #1453 (under review in November 2021). Its collectives went through torch.distributed's tensor-list forms: _allgather_params " +
				"gathered into one slice per rank and copied each parameter's piece out of each of them, _reduce_scatter_gradient gave reduce_scatter a list of one slice per rank, " +
				"per parameter (deepspeed/runtime/zero/partition_parameters.py of that year)",
			When: func(c *ruleCase) bool {
				return Stack(c.r) == StackDeepSpeed && c.zero == 3 && SourceYear(c.r) > 0 && SourceYear(c.r) <= 2021
			},
			Apply: func(c *ruleCase) {
				c.set("overlap=off", "ZeRO-3 parameter gathers and gradient reduce-scatters not overlapped with compute (DeepSpeed's 2021 stage 3 synchronized each all-gather: DeepSpeed PR #1188, issue #1069)")
				c.set("tensorlists=on", "ZeRO-3 collectives over lists of one tensor per rank, a copy per rank and parameter (DeepSpeed 2021's partition_parameters.py: _allgather_params, _reduce_scatter_gradient)")
			}},
		{Name: "DeepSpeed ZeRO-3 overlaps", Source: "deepspeed/runtime/zero/config.py: overlap_comm's default at stage 3",
			When: func(c *ruleCase) bool { return c.fam == FamilyMegatron || c.fam == FamilyBLOOM }, Key: "overlap=on",
			Assumed: "data-parallel reduction overlapped with backward (DeepSpeed ZeRO-3's default overlap_comm)"},
		{Name: "NeMo overlaps the gradient reduction", Source: "NeMo's performance recipes set overlap_grad_reduce and overlap_param_gather",
			When: func(c *ruleCase) bool { return c.fam == FamilyNeMo }, Key: "overlap=on",
			Assumed: "data-parallel reduction overlapped with backward (Megatron-Core overlap_grad_reduce, NeMo's performance recipes)"},
		{Name: "PyTorch DDP and FSDP overlap", Source: "PyTorch DDP's and FSDP's default", Key: "overlap=on",
			Assumed: "data-parallel gradient reduction overlapped with backward (PyTorch DDP and FSDP default)"},
	}},
	{"tpoverlap", []strategyRule{
		{Name: "NeMo 24.07's userbuffers", Source: "NeMo-Framework-Launcher's configurations of the models in nemoUserbuffers (ub_tp_comm_overlap: true)",
			When: func(c *ruleCase) bool {
				return c.tp > 1 && c.fam == FamilyNeMo && nemoUserbuffers[strings.ToLower(c.r.Model.Name)] && strings.Contains(c.r.Source.Title, "24.07")
			},
			Key:     "tpoverlap=full",
			Assumed: "tensor-parallel communication overlap (ub_tp_comm_overlap, Transformer Engine's userbuffers) on, as NeMo-Framework-Launcher's configuration of this model sets it: sequence parallel's all-gathers and reduce-scatters in chunks under the products beside them, forward and backward"},
		{Name: "Megatron's asynchronous tensor-parallel communication",
			Source: "Megatron-LM's column-parallel linears run the backward's tensor-parallel collectives under their products (LinearWithGradAccumulationAndAsyncCommunication, " +
				"megatron/core/tensor_parallel/layers.py): Megatron-Core as NeMo 24.x runs it, and Megatron-LM from 2022 (Korthikanti et al. 2022's code)",
			When: func(c *ruleCase) bool {
				return c.tp > 1 && (c.fam == FamilyNeMo || Stack(c.r) == StackMegatron && SourceYear(c.r) >= 2022)
			},
			Key:     "tpoverlap=on",
			Assumed: "backward tensor-parallel collectives under the linears' products (Megatron-LM's asynchronous tensor-parallel communication; Megatron-Core's default)"},
		{Name: "torchtitan 2D without AsyncTP", Source: "the record's notes, which start with the row's own configuration",
			When: func(c *ruleCase) bool {
				label, _, _ := strings.Cut(c.notes, ".")
				return c.tp > 1 && c.fam == FamilyTorchtitan && !strings.Contains(label, "asynctp") && strings.Contains(label, "2d")
			},
			Assumed: "2D without AsyncTP, as the row says (its table's other row adds it): tensor-parallel collectives not overlapped"},
		{Name: "torchtitan's AsyncTP", Source: "the record's notes (AsyncTP: forward and backward collectives in chunks under the products)",
			When: func(c *ruleCase) bool {
				return c.tp > 1 && c.fam == FamilyTorchtitan && strings.Contains(c.notes, "asynctp")
			},
			Key:     "tpoverlap=full",
			Assumed: "AsyncTP, as the record says: sequence parallel's all-gathers and reduce-scatters in chunks under the products beside them, forward and backward"},
	}},
	{"fusion", []strategyRule{
		{Name: "Megatron's bias-dropout fusion",
			Source: "Megatron-LM's --bias-dropout-fusion is on unless disabled (megatron/arguments.py: --no-bias-dropout-fusion, store_false), " +
				"in Megatron-DeepSpeed (BLOOM, MT-NLG) and in Megatron-Core (NeMo) too",
			When: func(c *ruleCase) bool { return c.fam == FamilyMegatron || c.fam == FamilyBLOOM || c.fam == FamilyNeMo }, Key: "fusion=on",
			Assumed: "bias, dropout and residual add in one kernel (Megatron-LM's default --bias-dropout-fusion)"},
	}},
	{"compile", []strategyRule{
		{Name: "torch.compile as the record says", Source: "torchtitan's tables say which runs compiled the model (--training.compile)",
			When: func(c *ruleCase) bool { return strings.Contains(c.notes, "torch.compile") }, Key: "compile=on",
			Assumed: "torch.compile, as the record says: each chain of pointwise ops and norms one kernel"},
		{Name: "torchtitan's Table 2 compiles",
			Source: `the report's Table 2 is "FSDP + CP + torch.compile + Float8" by its caption (benchmarks/llama3_h100_202412_torchtitan.md), which its records' notes leave out`,
			When: func(c *ruleCase) bool {
				return c.fam == FamilyTorchtitan && c.r.Source.Location == "Table 2" && strings.Contains(c.r.Source.Title, "llama3_h100_202412")
			},
			Key:     "compile=on",
			Assumed: "torch.compile, as the report's Table 2 caption says (FSDP + CP + torch.compile + Float8): each chain of pointwise ops and norms one kernel"},
	}},
	{"kernels", []strategyRule{
		{Name: "eager RMSNorm and rotary embedding", Source: "kernels (the software's own norm and rotary kernels)",
			Apply: func(c *ruleCase) {
				if k, why := kernels(c.r, c.m); k == strategies.KernelsEager {
					c.set("kernels="+string(k), why)
				}
			}},
	}},
	{"attn", []strategyRule{
		{Name: "attention kernel", Source: "attention (the source's software and year)",
			Apply: func(c *ruleCase) { attn, why := attention(c.r); c.set("attn="+string(attn), why) }},
	}},
	{"zero key", []strategyRule{
		{Name: "ZeRO stage as decided", Source: "the rules above; not stated: 0, no optimizer sharding",
			Apply: func(c *ruleCase) {
				c.set(fmt.Sprintf("zero=%d", c.zero))
				if !c.zeroStated {
					c.set("", "ZeRO stage not stated: 0 (no optimizer sharding)")
				}
			}},
	}},
	{"sp", []strategyRule{
		{Name: "sequence parallel as stated", Source: "the record",
			When:  func(c *ruleCase) bool { return c.r.Parallel.SP != nil },
			Apply: func(c *ruleCase) { c.set("sp=" + map[bool]string{true: "on", false: "off"}[*c.r.Parallel.SP]) }},
		{Name: "NeMo's sequence parallel", Source: "NeMo's recipes set sequence_parallel whenever tp > 1",
			When: func(c *ruleCase) bool { return c.fam == FamilyNeMo && c.tp > 1 }, Key: "sp=on",
			Assumed: "sequence parallel not stated: on, as NeMo's recipes set it whenever tp > 1"},
		{Name: "torchtitan's sequence parallel", Source: "torchtitan's parallelize_llama: SequenceParallel on the norms",
			When: func(c *ruleCase) bool { return c.fam == FamilyTorchtitan && c.tp > 1 }, Key: "sp=on",
			Assumed: "sequence parallel not stated: on, as torchtitan's tensor-parallel plan shards the norms' activations by sequence (SequenceParallel in parallelize_llama)"},
		{Name: "no sequence parallel", Source: "Megatron-LM's default (--sequence-parallel off)", Key: "sp=off",
			Apply: func(c *ruleCase) {
				if c.tp > 1 {
					c.set("", "sequence parallel not stated: off")
				}
			}},
	}},
	{"precision", []strategyRule{
		{Name: "precision", Source: "precision (the record's precision, else its software's)",
			Apply: func(c *ruleCase) {
				if prec, why := precision(c.r); why != "" {
					c.set("precision="+string(prec), why)
				}
			}},
	}},
	{"recompute", []strategyRule{
		{Name: "torchtitan's selective recompute is per op",
			Source: `torchtitan's selective_ac_option "op", its default (torchtitan/parallelisms/parallelize_llama.py)`,
			When: func(c *ruleCase) bool {
				return c.fam == FamilyTorchtitan && strings.HasPrefix(statedRecompute(c), "selective")
			},
			Key: "recompute=op",
			Assumed: "selective recompute in torchtitan: per-op checkpointing (selective_ac_option \"op\", its default: each layer keeps its input, attention's output and every other matrix product's, " +
				"torchtitan/parallelisms/parallelize_llama.py), priced as recompute=op"},
		{Name: "selective recompute as stated", Source: "the record",
			When: func(c *ruleCase) bool { return strings.HasPrefix(statedRecompute(c), "selective") }, Key: "recompute=selective"},
		{Name: "full recompute as stated", Source: "the record",
			When: func(c *ruleCase) bool { return strings.HasPrefix(statedRecompute(c), "full") }, Key: "recompute=full"},
		{Name: "no recompute as stated", Source: "the record",
			When: func(c *ruleCase) bool { return c.r.Parallel.Recompute != nil }, Key: "recompute=none"},
		{Name: "Megatron-LM recomputes", Source: "Megatron-LM's GPT example scripts (--checkpoint-activations) and its Eq. 3, which counts it",
			When: func(c *ruleCase) bool { return c.fam == FamilyMegatron }, Key: "recompute=full",
			Assumed: "recompute not stated: full, as Megatron-LM's GPT example scripts run it (--checkpoint-activations) and its TFLOP/s formula (Eq. 3) counts it"},
		{Name: "NeMo's SFT does not recompute",
			Source: "NeMo-Framework-Launcher's SFT configuration (launcher_scripts/conf/peft/llama/sft.yaml at 97f45c18: activations_checkpoint_granularity null), which the SFT scripts for these rows do not override",
			When:   func(c *ruleCase) bool { return nemoSFT(c.r) }, Key: "recompute=none",
			Assumed: "recompute not stated: none, as NeMo's SFT configuration runs it (activations_checkpoint_granularity null); tpsim's memory estimate may exceed the device where the run kept FP8 weights (fp8_params), which tpsim does not model"},
	}},
	{"schedule", []strategyRule{
		{Name: "no pipeline", Source: "none needed: one stage", When: func(c *ruleCase) bool { return c.pp <= 1 }, Key: "schedule=1f1b"},
		{Name: "NeMo's SFT interleaves one layer per chunk",
			Source: "NeMo 24.07's SFT rows ran NeMo-Framework-Launcher's examples/peft/llama/h100 scripts (commit 97f45c18, June 2024): " +
				"13B on 8 GPUs with pp 4 and virtual_pipeline_model_parallel_size 10, 70B on 16 with pp 4 and 20, one layer per model chunk both",
			When: func(c *ruleCase) bool {
				return c.r.Parallel.Interleaved == nil && nemoSFT(c.r) && c.m.Transformer != nil && c.m.Transformer.Layers%c.pp == 0
			},
			Apply: func(c *ruleCase) {
				vpp := c.m.Transformer.Layers / c.pp
				c.set("schedule=interleaved")
				c.set(fmt.Sprintf("vpp=%d", vpp), fmt.Sprintf("pipeline schedule not stated: interleaved with one layer per model chunk (vpp %d), as NeMo-Framework-Launcher's SFT scripts for these rows set it (examples/peft/llama/h100)", vpp))
			}},
		{Name: "interleaved as stated", Source: "the record",
			When: func(c *ruleCase) bool { return c.r.Parallel.Interleaved != nil && *c.r.Parallel.Interleaved },
			Apply: func(c *ruleCase) {
				c.set("schedule=interleaved")
				if c.r.Parallel.VirtualStages != nil {
					c.set(fmt.Sprintf("vpp=%d", *c.r.Parallel.VirtualStages))
				}
			}},
		{Name: "1F1B", Source: "Megatron-LM's and DeepSpeed's default schedule", Key: "schedule=1f1b",
			Apply: func(c *ruleCase) {
				if c.r.Parallel.Interleaved == nil {
					c.set("", "pipeline schedule not stated: 1F1B (Megatron-LM's and DeepSpeed's default)")
				}
			}},
	}},
	{"mbs", []strategyRule{
		{Name: "microbatch as stated", Source: "the record",
			When:  func(c *ruleCase) bool { return c.r.Parallel.Microbatch != nil },
			Apply: func(c *ruleCase) { c.set(fmt.Sprintf("mbs=%d", *c.r.Parallel.Microbatch)) }},
		{Name: "torchtitan's one microbatch per stage",
			Source: `torchtitan's pipeline_parallel_microbatches defaults to the number of stages (config_manager.py: "The default value will be the number of pipeline stages, if unspecified"; ` +
				"parallelisms/pipeline_llama.py, n_microbatches = pipeline_parallel_degree)",
			When: func(c *ruleCase) bool { return c.fam == FamilyTorchtitan && c.pp > 1 && c.gbs%(c.dp*c.pp) == 0 },
			Apply: func(c *ruleCase) {
				mbs := c.gbs / (c.dp * c.pp)
				c.set(fmt.Sprintf("mbs=%d", mbs), fmt.Sprintf("pipeline microbatches not stated: %d, torchtitan's default of one per stage (pipeline_parallel_microbatches = pp), so microbatch %d", c.pp, mbs))
			}},
		{Name: "microbatch from gradient accumulation", Source: "the record's global batch and grad_accum",
			When: func(c *ruleCase) bool {
				ga := c.r.Parallel.GradAccum
				return ga != nil && *ga > 0 && c.gbs%(c.dp**ga) == 0
			},
			Apply: func(c *ruleCase) {
				ga := *c.r.Parallel.GradAccum
				c.set(fmt.Sprintf("mbs=%d", c.gbs/(c.dp*ga)), fmt.Sprintf("microbatch from the global batch and gradient accumulation: %d / (dp %d x %d)", c.gbs, c.dp, ga))
			}},
	}},
}

// statedRecompute is the record's recompute, trimmed and in lower case ("" when not stated).
func statedRecompute(c *ruleCase) string {
	if c.r.Parallel.Recompute == nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(*c.r.Parallel.Recompute))
}

// applyRules runs the knobs' rules on c (strategyRules): for each knob, the first rule that holds.
func applyRules(c *ruleCase, knobs []knobRules) {
	for _, k := range knobs {
		for _, rule := range k.Rules {
			if rule.When != nil && !rule.When(c) {
				continue
			}
			c.set(rule.Key)
			if rule.Apply != nil {
				rule.Apply(c)
			}
			c.set("", nonEmpty(rule.Assumed)...)
			break
		}
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
