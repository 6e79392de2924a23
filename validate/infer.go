package validate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// The rules by which validate fills in what a record does not say. Each rule that fires adds a
// line to the row's assumed list, so a reader sees every value tpsim supplied.

// Software stacks (Family): they decide the architecture details the records do not give, the
// defaults of the run, and how TFLOP/s are counted.
const (
	FamilyMPT        = "mpt"        // MosaicML llm-foundry (Composer + FSDP)
	FamilyBLOOM      = "bloom"      // BigScience Megatron-DeepSpeed
	FamilyMegatron   = "megatron"   // NVIDIA Megatron-LM 2019-2022 and DeepSpeed-Megatron (MT-NLG)
	FamilyNeMo       = "nemo"       // NVIDIA NeMo 24.x on Megatron-Core
	FamilyTorchtitan = "torchtitan" // PyTorch torchtitan (FSDP2)
	FamilyGPT        = "gpt"        // anything else: a GPT as Megatron-LM builds it
)

// Family is the software lineage of a record's source.
func Family(r *Record) string {
	text := strings.ToLower(r.Source.Title + " " + r.Source.Repo + " " + r.Model.Name)
	switch {
	case strings.Contains(text, "torchtitan"):
		return FamilyTorchtitan
	case strings.Contains(text, "nemo"):
		return FamilyNeMo
	case strings.Contains(text, "llm-foundry") || strings.Contains(text, "mpt"):
		return FamilyMPT
	case strings.Contains(text, "bloom") || strings.Contains(text, "bigscience"):
		return FamilyBLOOM
	case strings.Contains(text, "narayanan") || strings.Contains(text, "megatron") || strings.Contains(text, "shoeybi") || strings.Contains(text, "smith et al"):
		return FamilyMegatron
	}
	return FamilyGPT
}

// Software stacks a fitted value may be declared per (hardware.Efficiency.GEMMAchievedByStack):
// the one that ran the record, as its source says.
const (
	StackMegatron   = "megatron-lm" // NVIDIA Megatron-LM's own runs
	StackDeepSpeed  = "deepspeed"   // DeepSpeed with Megatron (ZeRO-3, MT-NLG, BLOOM's Megatron-DeepSpeed)
	StackLLMFoundry = "llm-foundry" // MosaicML llm-foundry (Composer + FSDP)
	StackNeMo       = "nemo"        // NVIDIA NeMo on Megatron-Core
	StackTorchtitan = "torchtitan"  // PyTorch torchtitan
)

// Stack is the software stack that ran a record: DeepSpeed where the source or notes say so
// (Narayanan et al.'s ZeRO-3 rows ran "ZeRO-3 via DeepSpeed integrated into Megatron"; MT-NLG
// is "DeepSpeed and Megatron"; BLOOM ran Megatron-DeepSpeed), else the family's own; "" for a
// GPT of no named stack.
func Stack(r *Record) string {
	text := strings.ToLower(r.Source.Title + " " + r.Notes)
	switch fam := Family(r); {
	case fam == FamilyBLOOM:
		return StackDeepSpeed
	case fam == FamilyMegatron && strings.Contains(text, "deepspeed"):
		return StackDeepSpeed
	case fam == FamilyMegatron:
		return StackMegatron
	case fam == FamilyMPT:
		return StackLLMFoundry
	case fam == FamilyNeMo:
		return StackNeMo
	case fam == FamilyTorchtitan:
		return StackTorchtitan
	}
	return ""
}

// arXivID finds an arXiv identifier of the YYMM.NNNNN form, whose first two digits are the year.
var arXivID = regexp.MustCompile(`arxiv:(\d{2})(\d{2})\.\d{4,5}`)

// SourceYear is the year of a record's source where its title or notes give it: the year of an
// arXiv identifier (arXiv:2104.04473 is April 2021); 0 when neither names one.
func SourceYear(r *Record) int {
	if m := arXivID.FindStringSubmatch(strings.ToLower(r.Source.Title + " " + r.Notes)); m != nil {
		y, _ := strconv.Atoi(m[1])
		return 2000 + y
	}
	return 0
}

// Source is the short name of a record's source: its title up to the first comma or
// parenthesis (the two NeMo 24.07 table titles are one source).
func Source(r *Record) string {
	t := r.Source.Title
	if i := strings.IndexAny(t, ",("); i > 0 {
		t = t[:i]
	}
	t = strings.TrimSpace(t)
	if t == "" {
		return "(no source)"
	}
	return t
}

// GPUType is the GPU a record ran on, the unit the fitted parameters are declared per: "a100"
// for both A100 parts (the 40 GB part computes as the 80 GB one), else the preset's name
// ("h100-sxm", "h100-96g": the 96 GB part ran at a 500 W power limit, so its achieved rates are
// its own).
func GPUType(hwName string) string {
	if strings.HasPrefix(hwName, "a100") {
		return "a100"
	}
	return hwName
}

// Chip is the die a GPU type is built on: GPU types of one chip share a fitted value when one of
// them has no training rows (fit.go).
func Chip(gpuType string) string {
	switch {
	case strings.HasPrefix(gpuType, "a100"):
		return "ga100"
	case strings.HasPrefix(gpuType, "h100"), strings.HasPrefix(gpuType, "h200"):
		return "gh100"
	}
	return gpuType
}

// PresetFunc returns a fresh copy of a hardware preset by name; the fit passes one that sets
// trial values.
type PresetFunc func(name string) (*hardware.Hardware, error)

// recordHardware maps a record's GPU to a preset. The A100 40 GB is the a100-80g preset with the
// 40 GB part's memory and bandwidth (data/hardware.json A100-SXM4-40GB: 40 GB HBM2, 1555 GB/s,
// same 312 TFLOP/s; NVIDIA A100 datasheet); everything else about a DGX A100 node is the same.
// The H100 with 94-96 GB of HBM2e (torchtitan's Grand Teton runs) is its own preset, h100-96g.
// A stated inter-node network that is not the preset's replaces the preset's top level's
// bandwidth (networkBandwidth). It returns the hardware, what it assumed, or why there is none.
func recordHardware(r *Record, preset PresetFunc) (*hardware.Hardware, []string, string) {
	gpu := strings.ToLower(r.Hardware.GPU)
	var assumed []string
	mem := 0.0
	if r.Hardware.MemoryGB != nil {
		mem = *r.Hardware.MemoryGB
	}
	var name string
	forty := false
	switch {
	case strings.Contains(gpu, "a100"):
		name = "a100-80g"
		switch {
		case mem == 40 || (mem == 0 && strings.Contains(gpu, "40gb") && !strings.Contains(gpu, "80gb")):
			forty = true
			if mem == 0 {
				assumed = append(assumed, "GPU memory not stated: A100 40 GB, as the record suggests")
			}
		case mem == 80 || strings.Contains(gpu, "80gb"):
		case mem == 0:
			assumed = append(assumed, "GPU memory not stated: A100 80 GB (the 40 GB part computes at the same peak)")
		default:
			return nil, nil, fmt.Sprintf("A100 with %g GB: tpsim has presets for the 40 and 80 GB parts only", mem)
		}
	case strings.Contains(gpu, "h100") && !strings.Contains(gpu, "pcie") && !strings.Contains(gpu, " nvl"):
		name = "h100-sxm"
		if mem == 94 || mem == 96 || strings.Contains(gpu, "hbm2e") {
			name = "h100-96g"
		}
	case strings.Contains(gpu, "h200"):
		name = "h200"
	default:
		return nil, nil, fmt.Sprintf("no hardware preset for %q (presets: %s)", r.Hardware.GPU, strings.Join(hardware.Names(), ", "))
	}
	hw, err := preset(name)
	if err != nil {
		return nil, nil, err.Error()
	}
	if forty {
		hw.Name = "a100-40g"
		hw.Device.Name = "NVIDIA A100-SXM4-40GB"
		hw.Device.Memory = 40e9
		hw.Device.MemBandwidth = 1555e9
		hw.Source += " Derived by tpsim validate for the 40 GB part: memory 40e9 bytes and 1555 GB/s (validate/data/hardware.json A100-SXM4-40GB, NVIDIA A100 datasheet)."
	}
	if n := r.Hardware.GPUsPerNode; n != nil && len(hw.Levels) > 1 && *n != hw.Levels[0].Size {
		assumed = append(assumed, fmt.Sprintf("%d GPUs per node priced as the preset's %d", *n, hw.Levels[0].Size))
	}
	if l := r.Hardware.InterNode; l != nil && len(hw.Levels) > 1 {
		top := &hw.Levels[len(hw.Levels)-1]
		gpn := hw.Levels[0].Size
		if r.Hardware.GPUsPerNode != nil {
			gpn = *r.Hardware.GPUsPerNode
		}
		bw, how := networkBandwidth(*l, gpn)
		switch {
		case bw > 0 && math.Abs(bw/float64(top.Bandwidth)-1) > 0.01:
			assumed = append(assumed, fmt.Sprintf("inter-node network as the record states it: %s = %.2f GB/s per GPU, over %s's %.0f GB/s", how, bw/1e9, name, float64(top.Bandwidth)/1e9))
			top.Bandwidth = units.BytesPerSecond(bw)
		case bw == 0:
			assumed = append(assumed, fmt.Sprintf("inter-node link %q gives no rate: priced as %s's %s at %.0f GB/s per GPU", *l, name, top.Name, float64(top.Bandwidth)/1e9))
		}
	}
	return hw, assumed, ""
}

// The rates a link description can state: "8x 200 Gb/s ... per node", "400 Gb/s per GPU",
// "1600 Gb/s node-to-node", "100 GB/s total per server", and Omni-Path links, whose rate the
// records do not give: Intel's Omni-Path Architecture 100 Series runs 100 Gb/s per port (Intel
// OPA 100 Series product brief), so BLOOM's 4 OPA links per 8-GPU node are 50 GB/s, 6.25 GB/s per
// GPU (Le Scao et al. 2022 §A.2 lists the same Jean Zay fabric).
var (
	linkCountRate = regexp.MustCompile(`(\d+)\s*x\s*(\d+(?:\.\d+)?)\s*gb/s`)
	linkRate      = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(gb/s|gbps|gbit/s)`)
	linkGBRate    = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*gb/s total per (?:server|node)`)
	opaLinks      = regexp.MustCompile(`(\d+)\s+opa links? per node`)
)

// networkBandwidth reads a per-GPU bandwidth in bytes/s from a link description, and how; 0
// when it states no rate.
func networkBandwidth(desc string, gpusPerNode int) (float64, string) {
	d := strings.ToLower(desc)
	gpn := float64(max(gpusPerNode, 1))
	if m := opaLinks.FindStringSubmatch(d); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		return n * 100e9 / 8 / gpn, fmt.Sprintf("%s x 100 Gb/s Omni-Path (OPA 100 Series) per %d-GPU node", m[1], gpusPerNode)
	}
	// GB/s (bytes) totals first: the case of the bytes unit matters, so look at the original.
	if m := linkGBRate.FindStringSubmatch(d); m != nil && strings.Contains(desc, "GB/s") {
		v, _ := strconv.ParseFloat(m[1], 64)
		return v * 1e9 / gpn, fmt.Sprintf("%s GB/s per %d-GPU node", m[1], gpusPerNode)
	}
	if m := linkCountRate.FindStringSubmatch(d); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		v, _ := strconv.ParseFloat(m[2], 64)
		return n * v * 1e9 / 8 / gpn, fmt.Sprintf("%s x %s Gb/s per %d-GPU node", m[1], m[2], gpusPerNode)
	}
	if m := linkRate.FindStringSubmatch(d); m != nil {
		v, _ := strconv.ParseFloat(m[1], 64)
		if strings.Contains(d, "per gpu") {
			return v * 1e9 / 8, fmt.Sprintf("%s Gb/s per GPU", m[1])
		}
		if strings.Contains(d, "node-to-node") || strings.Contains(d, "per node") {
			return v * 1e9 / 8 / gpn, fmt.Sprintf("%s Gb/s per %d-GPU node", m[1], gpusPerNode)
		}
	}
	return 0, ""
}

// recordModel builds the record's model. The records give sizes only; the rest follows the
// source's software (Family):
//   - Megatron-LM GPTs have biases, learned positions, tied embeddings and dropout 0.1
//     (Megatron-LM's defaults; Shoeybi et al. 2019);
//   - MPT as llm-foundry's benchmark tables ran it has tied embeddings and no dropout
//     (scripts/train/yamls/pretrain/mpt-*.yaml), and biases and a learned position table of the
//     sequence length (the yamls set neither no_bias nor ALiBi, and MPTConfig's defaults keep
//     biases and learned positions): with them the tables' NumParams come out exactly
//     (TestMPTParams);
//   - BLOOM has biases, ALiBi, tied embeddings and no dropout (Le Scao et al. 2022);
//   - NeMo 24.x and torchtitan models named Llama are Llama (RMSNorm, SwiGLU of the given width,
//     rotary positions, no biases, untied output head, no dropout: Touvron et al. 2023 §2.2);
//     NeMo's Nemotron is Nemotron-4 (no biases, rotary, untied, 256,000-token vocabulary;
//     Nemotron-4 15B report, arXiv:2402.16819 §2; its squared-ReLU MLP is priced as GELU's, the
//     same products); NeMo's GPT3 is GPT-3 as Megatron-Core builds it (biases, learned
//     positions, tied, GPT-2's 50,257-token vocabulary padded to 50,304, a multiple of 128, as
//     Megatron pads it; no dropout in NeMo's performance recipes).
//
// The MLP is 4h with GELU unless the record gives ffn.
func recordModel(r *Record, gbs int) (*model.Model, []string, string) {
	mm := r.Model
	fam := Family(r)
	name := strings.ToLower(mm.Name)
	llama := (fam == FamilyNeMo || fam == FamilyTorchtitan) && strings.Contains(name, "llama")
	nemotron := fam == FamilyNeMo && strings.Contains(name, "nemotron")
	gpt3 := fam == FamilyNeMo && strings.Contains(name, "gpt3")
	var assumed []string
	vocab := 0
	switch {
	case mm.Vocab != nil:
		vocab = *mm.Vocab
	case nemotron:
		vocab = 256000
		assumed = append(assumed, "vocabulary not given: Nemotron-4's 256,000 tokens (arXiv:2402.16819 §2)")
	case gpt3:
		vocab = 50304
		assumed = append(assumed, "vocabulary not given: GPT-2's 50,257 tokens padded to 50,304 (a multiple of 128, as Megatron pads it)")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"layers", mm.Layers}, {"hidden", mm.Hidden}, {"heads", mm.Heads}, {"seq_len", mm.Seq}, {"vocab", &vocab}} {
		if f.v == nil || *f.v <= 0 {
			return nil, nil, fmt.Sprintf("model %s not given", f.name)
		}
	}
	h, heads := *mm.Hidden, *mm.Heads
	if h%heads != 0 {
		return nil, nil, fmt.Sprintf("hidden %d is not a multiple of %d heads", h, heads)
	}
	t := model.Transformer{Hidden: h, Layers: *mm.Layers, Heads: heads, KVHeads: heads, HeadDim: h / heads,
		Vocab: vocab, Seq: *mm.Seq, Batch: gbs, Tied: true}
	if mm.KVHeads != nil {
		t.KVHeads = *mm.KVHeads
	}
	if mm.FFN != nil {
		t.FFN = *mm.FFN
	} else {
		t.FFN = 4 * h
		assumed = append(assumed, fmt.Sprintf("MLP width not given: 4h = %d", t.FFN))
	}
	family := "gpt"
	switch {
	case llama:
		t.Gated, t.RMSNorm, t.Tied = true, true, false
		family = "llama"
		assumed = append(assumed, "Llama architecture: RMSNorm, SwiGLU, rotary positions, no biases, untied output head, no dropout")
	case nemotron:
		t.Tied = false
		assumed = append(assumed, "Nemotron-4 architecture: LayerNorm, no biases, rotary positions, untied output head, no dropout; its squared-ReLU MLP priced as GELU's (the same products)")
	case gpt3:
		t.Bias, t.Learned = true, true
		assumed = append(assumed, "GPT-3 as Megatron-Core builds it: biases, learned positions, tied embeddings, no dropout (NeMo's performance recipes)")
	case fam == FamilyMPT:
		t.Bias, t.Learned = true, true
		assumed = append(assumed, "MPT architecture as llm-foundry benchmarked it: biases, learned positions, tied embeddings, no dropout (what gives the tables' parameter counts)")
	case fam == FamilyBLOOM:
		t.Bias = true
		assumed = append(assumed, "BLOOM architecture: biases, ALiBi (no position embeddings), tied embeddings, no dropout")
	default:
		t.Bias, t.Learned, t.Dropout = true, true, 0.1
		assumed = append(assumed, "GPT architecture as Megatron-LM builds it: biases, learned positions, tied embeddings, dropout 0.1")
	}
	m, err := t.Build(mm.Name, family)
	if err != nil {
		return nil, nil, err.Error()
	}
	return m, assumed, ""
}

// precision is the strategy's precision for a record: FP8 where the record says FP8 or Float8
// (Transformer Engine's FP8 recipe, torchao's Float8 linears), else mixed BF16/FP16.
func precision(r *Record) (strategies.Precision, string) {
	p := strings.ToLower(r.Precision)
	if strings.Contains(p, "fp8") || strings.Contains(p, "float8") {
		return strategies.PrecisionFP8, "precision: FP8 Linear products (Transformer Engine / Float8 linears), the rest BF16, as the record says"
	}
	return strategies.PrecisionMixed, ""
}

// localBatch reads torchtitan's "Local batch size N per DP rank".
var localBatch = regexp.MustCompile(`local batch size (\d+) per dp rank`)

// globalBatch is the record's global batch, or one inferred by a stated rule:
//   - torchtitan's notes give the local batch per data-parallel rank: global = local x dp;
//   - NeMo's long-sequence table gives none: 8 sequences per data-parallel rank (NeMo's
//     long-context recipes, e.g. llama3_8b_64k, run global batch 512 over 64-256 data-parallel
//     ranks at microbatch 1; 8 per rank keeps the pipeline runs' bubble at (p-1)/8). Per-GPU
//     throughput without pipelining hardly depends on it.
func globalBatch(r *Record, dp int) (int, string, string) {
	if g := r.Parallel.GlobalBatch; g != nil {
		return *g, "", ""
	}
	if m := localBatch.FindStringSubmatch(strings.ToLower(r.Notes)); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n * dp, fmt.Sprintf("global batch not stated: the notes' local batch %d per data-parallel rank x dp %d = %d", n, dp, n*dp), ""
	}
	if Family(r) == FamilyNeMo {
		return 8 * dp, fmt.Sprintf("global batch not stated: 8 sequences per data-parallel rank = %d (NeMo long-context recipes)", 8*dp), ""
	}
	return 0, "", "global batch not stated"
}
