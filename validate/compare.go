// Package validate compares tpsim's predictions with published training runs: it reads files of
// run records (data/README.md), fills in what a record does not say by stated rules (each one
// printed in the row's assumed list), prices each run with the cost model on its GPU's hardware
// preset, and reports the error per row, per source, per GPU type and per metric, and for
// measured peak memory. Fit calibrates the presets' declared achieved fractions on the training
// records (fit.go).
package validate

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// Metrics, in the order a record's measurement is chosen: step time, throughput, then TFLOP/s
// counted the source's way, then MFU.
const (
	StepTime          = "step_time_s"
	TokensPerS        = "tokens_per_s"
	TokensPerSPerGPU  = "tokens_per_s_per_gpu"
	TFLOPs            = "tflops_per_gpu"
	ModelTFLOPsPerGPU = "model_tflops_per_gpu"
	MFU               = "mfu"
)

// Metrics lists the metrics in the order they are chosen.
var Metrics = []string{StepTime, TokensPerS, TokensPerSPerGPU, TFLOPs, ModelTFLOPsPerGPU, MFU}

// Memory is a record's measured peak memory per GPU against tpsim's predicted peak.
type Memory struct {
	PublishedGiB float64 `json:"published_gib"`
	PredictedGiB float64 `json:"predicted_gib"`
	APE          float64 `json:"ape"`
}

// Row is one compared record; the JSON keys are those of `tpsim validate --json`.
type Row struct {
	ID        string   `json:"id"`
	Source    string   `json:"source"`
	GPU       string   `json:"gpu"`
	Hardware  string   `json:"hardware"`
	Strategy  string   `json:"strategy"`
	Metric    string   `json:"metric"`
	Published float64  `json:"published"`
	Predicted float64  `json:"predicted"`
	APE       float64  `json:"ape"`
	Memory    *Memory  `json:"memory,omitempty"`
	Assumed   []string `json:"assumed"`

	// PubStep and PredStep are the step times the published and predicted figures imply.
	PubStep  float64 `json:"-"`
	PredStep float64 `json:"-"`
}

// Options are how Compare prices a record.
type Options struct {
	// Preset returns the hardware preset of a name; nil is hardware.Preset.
	Preset PresetFunc
}

func (o Options) preset() PresetFunc {
	if o.Preset != nil {
		return o.Preset
	}
	return hardware.Preset
}

// intField returns a parallel field, else the same key under derived.
func intField(r *Record, v *int, key string) (int, bool) {
	if v != nil {
		return *v, true
	}
	if f, ok := number(r.Derived, key); ok && f == math.Trunc(f) && f >= 1 {
		return int(f), true
	}
	return 0, false
}

// recordStrategy turns the record's parallel configuration into a strategy. Knobs the record omits
// follow the source's software where it has a default, and are otherwise chosen by tpsim's search
// among the values that fit (the fastest, as the sources tuned their runs for throughput); each
// is named in assumed. The measured figures are never used to choose anything.
func recordStrategy(r *Record, m *model.Model, hw *hardware.Hardware, gbs int, assumedGBS string) (strategies.Strategy, []string, string) {
	p := r.Parallel
	tp, _ := intField(r, p.TP, "tp")
	pp, _ := intField(r, p.PP, "pp")
	dp, _ := intField(r, p.DP, "dp")
	cp := 1
	if p.CP != nil {
		cp = *p.CP
	}
	// What the source's software does, where the record does not say: strategyRules, each
	// rule with its source.
	c := &ruleCase{r: r, m: m, fam: Family(r), tp: tp, pp: pp, dp: dp, cp: cp, gbs: gbs, notes: strings.ToLower(r.Notes), zeroStated: true}
	if assumedGBS != "" {
		c.set("", assumedGBS)
	}
	c.set(fmt.Sprintf("pp=%d,dp=%d,cp=%d,tp=%d", pp, dp, cp, tp))
	applyRules(c, strategyRules)
	keys, assumed := c.keys, c.assumed
	fix, err := strategies.ParseFix(strings.Join(keys, ","))
	if err != nil {
		return strategies.Strategy{}, nil, err.Error()
	}
	space, err := strategies.Enumerate(m, tp*pp*dp*cp, strategies.EnumerateOptions{GBS: gbs, Seq: *r.Model.Seq, Fix: fix})
	if err != nil {
		return strategies.Strategy{}, nil, err.Error()
	}
	if len(space.Candidates) == 0 {
		// Say which rule, with Validate's own message for the record's configuration.
		st := fix.Strategy
		st.GBS, st.Seq = gbs, *r.Model.Seq
		if st.MBS < 1 || gbs%(dp*st.MBS) != 0 {
			st.MBS = 1
		}
		if err := st.Resolve(m).Validate(m); err != nil {
			return strategies.Strategy{}, nil, "tpsim cannot express the configuration: " + err.Error()
		}
		return strategies.Strategy{}, nil, "tpsim cannot express the configuration: " + strings.Join(strategies.SortedReasons(space.Rejected), ", ")
	}
	if len(space.Candidates) == 1 {
		return space.Strategy(0), assumed, ""
	}
	ev, err := search.NewEvaluator(m, hw, space, tp*pp*dp*cp)
	if err != nil {
		return strategies.Strategy{}, nil, err.Error()
	}
	evals := ev.Evaluate()
	res, err := search.Rank(space, evals, search.Time, 1)
	if err != nil {
		return strategies.Strategy{}, nil, err.Error()
	}
	pick := -1
	if len(res.Top) > 0 {
		pick = res.Top[0]
	} else {
		// None fits by tpsim's estimate: the one that needs the least memory (out-of-memory
		// evaluations keep their peak only), or, when the closed form prices none (uneven
		// pipeline stages), the first.
		for i, e := range evals {
			if e.Priced && (pick < 0 || e.Peak < evals[pick].Peak) {
				pick = i
			}
		}
		if pick < 0 {
			pick = 0
		}
	}
	st := space.Strategy(pick)
	var chose []string
	if !fix.Has("mbs") {
		chose = append(chose, fmt.Sprintf("microbatch %d", st.MBS))
	}
	if !fix.Has("recompute") {
		chose = append(chose, "recompute "+string(st.Recompute))
	}
	if st.Schedule == strategies.ScheduleInterleaved && !fix.Has("vpp") {
		chose = append(chose, fmt.Sprintf("%d model chunks per device (vpp)", st.VPP))
	}
	fits := "the fastest that fits in memory by tpsim's estimate"
	if len(res.Top) == 0 {
		fits = "the smallest; tpsim predicts none of the choices fits in memory"
	}
	assumed = append(assumed, fmt.Sprintf("%s %d options: %s (%s)", ChosenBySearch, len(space.Candidates), strings.Join(chose, ", "), fits))
	return st, assumed, ""
}

// nemoUserbuffers lists the models of NeMo 24.07's performance tables (records whose source title
// names 24.07) that ran with ub_tp_comm_overlap: true, as NeMo-Framework-Launcher's training
// configurations of that release set it (launcher_scripts/conf/training/*/*.yaml at fee1762f, 2024-08-02, which its
// examples/training/*/h100 scripts for these rows load: gpt3/20b, llama/llama2_70b,
// llama/llama3_70b, nemotron/nemotron_8b and nemotron_22b true; gpt3/175b and
// nemotron/nemotron_340b false) and its SFT script for Llama 2 70B
// (examples/peft/llama/h100/70b_2node.sh, peft.model.ub_tp_comm_overlap=true).
var nemoUserbuffers = map[string]bool{"gpt3-20b": true, "llama2-70b": true, "llama3-70b": true, "nemotron-8b": true, "nemotron-22b": true}

// nemoSFT reports whether r is a supervised fine-tuning row of NeMo's performance summary (its
// Finetuning table's SFT rows).
func nemoSFT(r *Record) bool {
	return Family(r) == FamilyNeMo && strings.Contains(strings.ToLower(r.Source.Location+" "+r.ID), "sft")
}

// noMemory ends the assumption line of a run priced with other sharding than it ran: its
// measured memory is not compared.
const noMemory = "its measured memory is not compared"

// ChosenBySearch starts the assumption line of knobs tpsim's search chose.
const ChosenBySearch = "not stated, chosen by search among"

// measurement is the metric a record is compared on and its value.
func measurement(r *Record) (string, float64) {
	for _, k := range Metrics {
		if v, ok := number(r.Measured, k); ok && v > 0 {
			return k, v
		}
	}
	return "", 0
}

// Compare predicts one record. It returns the row, or why the record was skipped.
func Compare(r *Record, o Options) (*Row, string) {
	c, why := Prepare(r, o)
	if why != "" {
		return nil, why
	}
	hw, err := c.Hardware(o.preset())
	if err != nil {
		return nil, err.Error()
	}
	return c.Price(hw)
}

// Case is a record made ready to price: its model, strategy and Program, and what was assumed
// to make them. Pricing it again on changed hardware (Price) is what the fit does; the knobs
// the search chose stay those chosen on the hardware Prepare saw.
type Case struct {
	Record  *Record
	Metric  string
	Pub     float64
	Preset  string // the hardware preset's name
	Stack   string // the software stack that ran it (Stack)
	prog    *program.Program
	m       *model.Model
	st      strategies.Strategy
	gbs     int
	assumed []string
}

// Prepare reads a record into a Case, or says why it cannot be compared.
func Prepare(r *Record, o Options) (*Case, string) {
	metric, pub := measurement(r)
	if metric == "" {
		return nil, "no measured step time, tokens/s (total or per GPU), TFLOP/s per GPU or MFU (a derived estimate is not a measurement)"
	}
	hw, assumedHW, why := recordHardware(r, o.preset())
	if why != "" {
		return nil, why
	}
	p := r.Parallel
	tp, okT := intField(r, p.TP, "tp")
	pp, okP := intField(r, p.PP, "pp")
	dp, okD := intField(r, p.DP, "dp")
	var missing []string
	for _, x := range []struct {
		ok   bool
		name string
	}{{okT, "tp"}, {okP, "pp"}, {okD, "dp"}} {
		if !x.ok {
			missing = append(missing, x.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("parallel degrees not stated: %s", strings.Join(missing, ", "))
	}
	if p.EP != nil && *p.EP > 1 {
		return nil, "expert parallel: tpsim prices dense models only"
	}
	cp := 1
	if p.CP != nil {
		cp = *p.CP
	}
	if r.Hardware.Count == nil {
		return nil, "GPU count not stated"
	}
	if n := *r.Hardware.Count; tp*pp*dp*cp != n {
		return nil, fmt.Sprintf("tp %d x pp %d x dp %d x cp %d = %d is not the %d GPUs of the record", tp, pp, dp, cp, tp*pp*dp*cp, n)
	}
	gbs, assumedGBS, why := globalBatch(r, dp)
	if why != "" {
		return nil, why
	}
	m, assumedM, why := recordModel(r, gbs)
	if why != "" {
		return nil, why
	}
	st, assumedS, why := recordStrategy(r, m, hw, gbs, assumedGBS)
	if why != "" {
		return nil, why
	}
	prog, err := program.Lower(m, st)
	if err != nil {
		return nil, err.Error()
	}
	c := &Case{Record: r, Metric: metric, Pub: pub, Preset: presetName(hw.Name), Stack: Stack(r), prog: prog, m: m, st: st, gbs: gbs,
		assumed: append(append(assumedHW, assumedM...), assumedS...)}
	return c, ""
}

// presetName is the preset a hardware name came from (the 40 GB A100 is derived from a100-80g).
func presetName(hwName string) string {
	if hwName == "a100-40g" {
		return "a100-80g"
	}
	return hwName
}

// Hardware is the case's hardware: the preset from presets with the record's own changes.
func (c *Case) Hardware(presets PresetFunc) (*hardware.Hardware, error) {
	hw, _, why := recordHardware(c.Record, presets)
	if why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	return hw, nil
}

// Price prices the case on hw and compares it with the record.
func (c *Case) Price(hw *hardware.Hardware) (*Row, string) {
	r, m, st, gbs, metric, pub := c.Record, c.m, c.st, c.gbs, c.Metric, c.Pub
	assumed := append([]string(nil), c.assumed...)
	if v, ok := hw.Efficiency.GEMMAchievedByStack[c.Stack]; ok && c.Stack != "" {
		hw.Efficiency = hw.Efficiency.ForStack(c.Stack)
		assumed = append(assumed, fmt.Sprintf("GEMMs at %s's achieved fraction of the matmul sweep's ceiling, %.3g (the preset's, fitted on that stack's runs)", c.Stack, v))
	}
	res, err := costmodel.Predict(c.prog, hw)
	if err != nil {
		return nil, err.Error()
	}
	n := float64(st.Mesh.Devices())
	seq := float64(st.Resolve(m).Seq)
	step := float64(res.Time.Step)
	if !res.Feasible {
		assumed = append(assumed, fmt.Sprintf("tpsim predicts %.1f GiB per device, more than the %.0f GB the run had: its memory model disagrees with the run", res.Memory.Peak.GiB(), float64(hw.Device.Memory)/1e9))
	}
	row := &Row{ID: r.ID, Metric: metric, Published: pub, Source: Source(r), GPU: GPUType(hw.Name), Strategy: search.Label(st), Hardware: hw.Name, PredStep: step}
	tokens := float64(gbs) * seq
	fam := Family(r)
	switch metric {
	case StepTime:
		row.Predicted, row.PubStep = step, pub
	case TokensPerS:
		row.Predicted, row.PubStep = res.TokensPerS, tokens/pub
	case TokensPerSPerGPU:
		row.Predicted, row.PubStep = res.TokensPerS/n, tokens/(pub*n)
	case TFLOPs, ModelTFLOPsPerGPU:
		var f float64
		if metric == TFLOPs && (fam == FamilyMegatron || fam == FamilyBLOOM) {
			f = sourceFLOPs(m.Transformer, gbs, int(seq))
			assumed = append(assumed, "TFLOP/s counted as Megatron-LM does (Narayanan et al. 2021 Eq. 3, recompute forward included)")
		} else {
			f = float64(res.FLOPs.Model)
			assumed = append(assumed, "TFLOP/s counted as model FLOPs (recompute not included; Megatron-Core's formula, full s x s attention)")
		}
		row.Predicted, row.PubStep = f/step/n/1e12, f/(pub*1e12)/n
	case MFU:
		peak, _ := hw.PeakFor("bf16")
		row.Predicted = res.MFU
		row.PubStep = float64(res.FLOPs.Model) / (pub * float64(peak) * n)
	}
	row.APE = math.Abs(row.Predicted-pub) / pub
	comparable := true
	for _, a := range c.assumed {
		comparable = comparable && !strings.HasSuffix(a, noMemory)
	}
	if gib, ok := measuredMemoryGiB(r); ok && comparable {
		pred := res.Memory.Peak.GiB()
		row.Memory = &Memory{PublishedGiB: gib, PredictedGiB: pred, APE: math.Abs(pred-gib) / gib}
	}
	row.Assumed = assumed
	return row, ""
}

// measuredMemoryGiB is a record's measured peak memory per GPU in GiB: memory_gb_max in the
// record's memory_unit (GiB or GB; GB when not stated).
func measuredMemoryGiB(r *Record) (float64, bool) {
	v, ok := number(r.Measured, "memory_gb_max")
	if !ok || v <= 0 {
		return 0, false
	}
	var unit string
	if raw, ok := r.Measured["memory_unit"]; ok {
		unit = strings.Trim(strings.TrimSpace(string(raw)), `"`)
	}
	if strings.EqualFold(unit, "GiB") {
		return v, true
	}
	return v * 1e9 / (1 << 30), true
}

// kernels is how the record's stack writes the RMSNorm and the rotary embedding
// (strategies.Kernels), and why: eager PyTorch ops for torchtitan, whose Llama configs set
// norm_type "rmsnorm" (train_configs/llama3_8b.toml; torchtitan/models/norms.py RMSNorm) and
// whose apply_rotary_emb is a complex product in fp32, and for Hugging Face transformers' Llama
// (LlamaRMSNorm, apply_rotary_pos_emb) unless the notes name Liger's fused kernels, which
// llm-foundry also runs for every model but its own MPT (hf_causal_lm loads the Hugging Face
// implementation); fused elsewhere (Megatron-LM, NeMo and Transformer Engine). A model m with
// LayerNorm and learned positions has neither op (PyTorch's layer_norm is one kernel), so it
// is fused either way and no assumption is printed. Under torch.compile the eager ops are fused
// again (strategies.Strategy.EagerKernels).
func kernels(r *Record, m *model.Model) (strategies.Kernels, string) {
	notes := strings.ToLower(r.Notes + " " + r.Source.Title + " " + r.Source.Repo)
	if t := m.Transformer; t == nil || !t.RMSNorm && t.Learned {
		return strategies.KernelsFused, ""
	}
	switch {
	case Family(r) == FamilyTorchtitan:
		return strategies.KernelsEager, "RMSNorm and rotary embedding as eager PyTorch ops (torchtitan's Llama configs set norm_type \"rmsnorm\"; its rotary embedding is a complex product in fp32), fused again where torch.compile ran"
	case strings.Contains(notes, "liger"):
		return strategies.KernelsFused, ""
	case Family(r) == FamilyMPT:
		return strategies.KernelsEager, "llm-foundry runs this model as Hugging Face transformers' implementation (hf_causal_lm): its RMSNorm and rotary embedding as eager PyTorch ops"
	case hfStack.MatchString(notes):
		return strategies.KernelsEager, "Hugging Face transformers' model: LlamaRMSNorm and apply_rotary_pos_emb as eager PyTorch ops"
	}
	return strategies.KernelsFused, ""
}

// hfStack matches notes that say the model ran as Hugging Face transformers' implementation.
var hfStack = regexp.MustCompile(`hugging ?face|\bhf transformers\b|\btransformers library\b`)

// attention is the attention kernel a record's run used, and the assumption line that says
// why. Notes that name a FlashAttention generation decide it. MosaicML's llm-foundry A100
// benchmark tables ran its Triton FlashAttention whatever their records' notes say: the MPT yamls
// set attn_impl triton (scripts/train/yamls/mpt/7b.yaml, pretrain/mpt-7b.yaml), and
// scripts/train/benchmarking/sweep.sh, which the README says lists all the tables' runs, made the
// A100 ones with llm-foundry v0.0.4 on torch 1.13.1 without --attn_impl, whose default in
// submit_benchmarks.py was triton (later versions default to flash and install FlashAttention-2
// for torch 2); v0.0.4 predates FlashAttention-2 (July 2023) in any case. NeMo 24.x runs
// Transformer Engine's fused attention (cuDNN's flash kernel) and torchtitan PyTorch SDPA's
// flash backend: both are fused attention, priced as attn=flash at the hardware's fused-attention
// fraction. Other notes that say FlashAttention are priced as FlashAttention-2; no mention is
// eager attention, as Megatron-LM ran it.
func attention(r *Record) (strategies.Attention, string) {
	notes := strings.ToLower(r.Notes)
	var gen string
	if m := flashGen.FindStringSubmatch(notes); m != nil {
		gen = m[1]
	}
	switch {
	case gen == "2":
		return strategies.AttentionFlash, "attention: FlashAttention-2, as the record's notes say"
	case gen == "1" || triton.MatchString(notes):
		return strategies.AttentionFlash1, "attention: FlashAttention-1 or its Triton port, as the record's notes say"
	case strings.Contains(r.Source.Repo, "llm-foundry") && strings.Contains(r.Source.Path, "benchmarking") && strings.Contains(strings.ToLower(r.Hardware.GPU), "a100"):
		return strategies.AttentionFlash1, "attention: llm-foundry's Triton FlashAttention (attn_impl triton), priced as FlashAttention-1: the MPT yamls set it, and the A100 tables were made with llm-foundry v0.0.4 on torch 1.13.1 (benchmarking/sweep.sh), whose submit_benchmarks.py defaulted to it and which predates FlashAttention-2; the notes' 'attn_impl flash' is the later default"
	case flash.MatchString(notes):
		return strategies.AttentionFlash, "attention: FlashAttention, as the record's notes say, priced as FlashAttention-2"
	case Family(r) == FamilyNeMo:
		return strategies.AttentionFlash, "attention not stated: Transformer Engine's fused (cuDNN flash) attention, Megatron-Core's default in NeMo 24.x, priced as fused attention"
	case Family(r) == FamilyTorchtitan:
		return strategies.AttentionFlash, "attention not stated: PyTorch SDPA's flash backend, torchtitan's default, priced as fused attention"
	}
	return strategies.AttentionEager, "attention kernel not stated: eager (unfused), as Megatron-LM ran it"
}

// The attention kernels notes name: FlashAttention by any spelling, its generation when given
// ("FlashAttention-2", "flash-attn v1", "flash_attn==2.4"; not the 128 of "FlashAttention
// 128-dim heads"), and the Triton port as llm-foundry configures it.
var (
	flash    = regexp.MustCompile(`flash[-_ ]?att(?:n|ention)\b|attn_impl[ :=]*["']?flash\b`)
	flashGen = regexp.MustCompile(`flash[-_ ]?att(?:n|ention)[-_ =]*(?:v|version )?([12])\b`)
	triton   = regexp.MustCompile(`attn_impl[ :=]*["']?triton\b|triton flash[-_ ]?att(?:n|ention)\b|flash[-_ ]?att(?:n|ention) (?:in|on) triton\b`)
)
