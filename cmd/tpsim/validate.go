package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

const validateHelp = `Usage: tpsim validate [flags]

Check the cost model against published training runs. For each record with enough information
(model sizes, GPU type and count, tp/pp/dp, global batch) tpsim predicts the run with the preset
hardware of its GPU and compares with what the record measured, counted the way the source counts
it: step time if the record measured it, else tokens/s, else TFLOP/s per GPU (Megatron-LM's
Eq. 3, which counts the recompute forward pass, for Megatron-LM, BLOOM and MT-NLG records; model
FLOPs otherwise), else MFU. It prints predicted against published with the absolute percentage
error (APE) per row, the mean (MAPE) and max per source and overall, the rows it skipped and why,
and what it assumed where a record is silent (microbatch, recompute, schedule, ...): the
architecture follows the source's software (Megatron-LM GPT, MPT, BLOOM), so does the attention
kernel (the one a record's notes name; for MosaicML's A100 tables the Triton FlashAttention their
scripts ran, priced as attn=flash1), Megatron-LM records that do not say run full recompute,
and knobs still missing are chosen by tpsim's own search (the fastest that fits, as the sources
tuned their runs for throughput). The measured figures are never used to choose anything.

The records are those of shared/validation/runs.json (see its README); any file of records in
that format works, so you can validate against your own runs.

Examples:
  tpsim validate
  tpsim validate --data ../shared/validation/runs.json --out validation
  tpsim validate --data my-runs.json --json
`

// validateDefaultData is runs.json as seen from the repository root.
const validateDefaultData = "../shared/validation/runs.json"

// validateOptions are the flags of tpsim validate.
type validateOptions struct {
	Data string
	Out  string
	JSON bool
}

func runValidate(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseValidate(args)
	if err == nil {
		err = o.run(stdout)
	}
	return finish("validate", fs, validateHelp, err, stdout, stderr)
}

func parseValidate(args []string) (*validateOptions, *pflag.FlagSet, error) {
	o := &validateOptions{}
	fs := newFlagSet("validate")
	fs.StringVar(&o.Data, "data", validateDefaultData, "JSON file of published runs (the format of shared/validation/runs.json)")
	fs.StringVar(&o.Out, "out", "", "directory to write validate.csv, validate.json and the figure (validate.png, validate.svg)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return o, fs, parseFlags(fs, args, 0)
}

// valRecord is one record of runs.json: the fields validate reads (others are ignored).
type valRecord struct {
	ID     string `json:"id"`
	Source struct {
		Title    string `json:"title"`
		Repo     string `json:"repo"`
		Path     string `json:"path"`
		Location string `json:"location"`
	} `json:"source"`
	Model struct {
		Name    string   `json:"name"`
		Params  *float64 `json:"params"`
		Layers  *int     `json:"layers"`
		Hidden  *int     `json:"hidden"`
		Heads   *int     `json:"heads"`
		KVHeads *int     `json:"kv_heads"`
		Seq     *int     `json:"seq_len"`
		Vocab   *int     `json:"vocab"`
		FFN     *int     `json:"ffn"`
	} `json:"model"`
	Hardware struct {
		GPU         string   `json:"gpu"`
		MemoryGB    *float64 `json:"gpu_memory_gb"`
		Count       *int     `json:"count"`
		GPUsPerNode *int     `json:"gpus_per_node"`
		InterNode   *string  `json:"inter_node_link"`
	} `json:"hardware"`
	Parallel struct {
		TP            *int    `json:"tp"`
		PP            *int    `json:"pp"`
		DP            *int    `json:"dp"`
		CP            *int    `json:"cp"`
		EP            *int    `json:"ep"`
		SP            *bool   `json:"sp"`
		ZeRO          *int    `json:"zero_stage"`
		FSDP          *bool   `json:"fsdp"`
		Recompute     *string `json:"recompute"`
		Microbatch    *int    `json:"microbatch"`
		GlobalBatch   *int    `json:"global_batch"`
		GradAccum     *int    `json:"grad_accum"`
		VirtualStages *int    `json:"virtual_stages"`
		Interleaved   *bool   `json:"interleaved"`
	} `json:"parallel"`
	Precision string                     `json:"precision"`
	Measured  map[string]json.RawMessage `json:"measured"`
	Derived   map[string]json.RawMessage `json:"derived"`
	Flags     []string                   `json:"flags"`
	Notes     string                     `json:"notes"`
}

// number returns a numeric field of a measured or derived object.
func valNumber(m map[string]json.RawMessage, key string) (float64, bool) {
	raw, ok := m[key]
	if !ok {
		return 0, false
	}
	var v *float64
	if json.Unmarshal(raw, &v) != nil || v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return 0, false
	}
	return *v, true
}

// Metrics, in the order a record's measurement is chosen.
const (
	valStepTime   = "step_time_s"
	valTokensPerS = "tokens_per_s"
	valTFLOPs     = "tflops_per_gpu"
	valMFU        = "mfu"
)

var valMetrics = []string{valStepTime, valTokensPerS, valTFLOPs, valMFU}

// valRow is one compared record; the JSON keys are those of `tpsim validate --json`.
type valRow struct {
	ID        string   `json:"id"`
	Metric    string   `json:"metric"`
	Published float64  `json:"published"`
	Predicted float64  `json:"predicted"`
	APE       float64  `json:"ape"`
	Assumed   []string `json:"assumed"`

	source   string
	strategy string
	hardware string
	// the step times the published and predicted figures imply, for the figure
	pubStep, predStep float64
}

// valSkip is a record that could not be compared.
type valSkip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// valSummary is the error over the compared rows.
type valSummary struct {
	N      int     `json:"n"`
	MAPE   float64 `json:"mape"`
	MaxAPE float64 `json:"max_ape"`
}

// valOutput is what --json prints.
type valOutput struct {
	Rows    []valRow   `json:"rows"`
	Skipped []valSkip  `json:"skipped"`
	Summary valSummary `json:"summary"`
}

func (o *validateOptions) run(w io.Writer) error {
	recs, err := valLoad(o.Data)
	if err != nil {
		return err
	}
	out := valAll(recs)
	var buf bytes.Buffer
	if o.JSON {
		err = writeJSON(&buf, out)
	} else {
		err = valWriteText(&buf, o.Data, recs, out)
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.Out != "" {
		return valWriteFiles(o.Out, out)
	}
	return nil
}

// valLoad reads a file of records.
func valLoad(path string) ([]valRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no file of runs at %s; run from the repository root (the default is %s, shared/validation/runs.json beside the checkout) or give --data PATH",
				path, validateDefaultData)
		}
		return nil, err
	}
	var recs []valRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of run records (the format of shared/validation/runs.json): %v", path, err)
	}
	for i, r := range recs {
		if r.ID == "" {
			return nil, fmt.Errorf("%s: record %d has no \"id\"", path, i)
		}
	}
	return recs, nil
}

// valAll compares every record.
func valAll(recs []valRecord) *valOutput {
	out := &valOutput{Rows: []valRow{}, Skipped: []valSkip{}}
	for i := range recs {
		row, reason := valCompare(&recs[i])
		if reason != "" {
			out.Skipped = append(out.Skipped, valSkip{ID: recs[i].ID, Reason: reason})
			continue
		}
		out.Rows = append(out.Rows, *row)
	}
	out.Summary = valSummarize(out.Rows)
	return out
}

func valSummarize(rows []valRow) valSummary {
	s := valSummary{N: len(rows)}
	for _, r := range rows {
		s.MAPE += r.APE
		s.MaxAPE = math.Max(s.MaxAPE, r.APE)
	}
	if s.N > 0 {
		s.MAPE /= float64(s.N)
	}
	return s
}

// valSource is the short name of a record's source: its title up to the first comma.
func valSource(r *valRecord) string {
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

// valFamily is the software lineage of a record's source, which decides the architecture details
// the records do not give and how TFLOP/s are counted.
func valFamily(r *valRecord) string {
	text := strings.ToLower(r.Source.Title + " " + r.Model.Name)
	switch {
	case strings.Contains(text, "llm-foundry") || strings.Contains(text, "mpt"):
		return "mpt"
	case strings.Contains(text, "bloom") || strings.Contains(text, "bigscience"):
		return "bloom"
	case strings.Contains(text, "narayanan") || strings.Contains(text, "megatron") || strings.Contains(text, "shoeybi") || strings.Contains(text, "smith et al"):
		return "megatron"
	}
	return "gpt"
}

// valHardware maps a record's GPU to a preset. The A100 40 GB is the a100-80g preset with the
// 40 GB part's memory and bandwidth (shared/validation/hardware.json A100-SXM4-40GB: 40 GB HBM2,
// 1555 GB/s, same 312 TFLOP/s; NVIDIA A100 datasheet); everything else about a DGX A100 node is
// the same. It returns the hardware, what it assumed, or why there is none.
func valHardware(r *valRecord) (*hardware.Hardware, []string, string) {
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
	case strings.Contains(gpu, "h100") && !strings.Contains(gpu, "pcie") && !strings.Contains(gpu, "nvl"):
		name = "h100-sxm"
	case strings.Contains(gpu, "h200"):
		name = "h200"
	default:
		return nil, nil, fmt.Sprintf("no hardware preset for %q (presets: %s)", r.Hardware.GPU, strings.Join(hardware.Names(), ", "))
	}
	hw, err := hardware.Preset(name)
	if err != nil {
		return nil, nil, err.Error()
	}
	if forty {
		hw.Name = "a100-40g"
		hw.Device.Name = "NVIDIA A100-SXM4-40GB"
		hw.Device.Memory = 40e9
		hw.Device.MemBandwidth = 1555e9
		hw.Source += " Derived by tpsim validate for the 40 GB part: memory 40e9 bytes and 1555 GB/s (shared/validation/hardware.json A100-SXM4-40GB, NVIDIA A100 datasheet)."
	}
	if n := r.Hardware.GPUsPerNode; n != nil && len(hw.Levels) > 1 && *n != hw.Levels[0].Size {
		assumed = append(assumed, fmt.Sprintf("%d GPUs per node priced as the preset's %d", *n, hw.Levels[0].Size))
	}
	if l := r.Hardware.InterNode; l != nil && len(hw.Levels) > 1 {
		ll := strings.ToLower(*l)
		if !strings.Contains(ll, "infiniband") && !strings.Contains(ll, "roce") && !strings.Contains(ll, " ib") {
			top := hw.Levels[len(hw.Levels)-1]
			assumed = append(assumed, fmt.Sprintf("inter-node link %q priced as %s's %s at %.0f GB/s per GPU", *l, name, top.Name, float64(top.Bandwidth)/1e9))
		}
	}
	return hw, assumed, ""
}

// valModel builds the record's model. The records give sizes only; the rest follows the source's
// software (valFamily): Megatron-LM GPTs have biases, learned positions, tied embeddings and
// dropout 0.1 (Megatron-LM's defaults; Shoeybi et al. 2019); MPT as llm-foundry's benchmark
// tables ran it has tied embeddings and no dropout (scripts/train/yamls/pretrain/mpt-*.yaml), and
// biases and a learned position table of the sequence length (the yamls set neither no_bias nor
// ALiBi, and MPTConfig's defaults keep biases and learned positions): with them the tables'
// NumParams come out exactly (MPT-7B: 6,658,859,008 at 2,048 tokens, 6,918,905,856 at 65,536,
// 63,488 x 4,096 apart; TestValidateMPTParams); BLOOM has biases, ALiBi, tied embeddings and no
// dropout (Le Scao et al. 2022). The MLP is 4h with GELU unless the record gives ffn.
func valModel(r *valRecord, gbs int) (*model.Model, []string, string) {
	mm := r.Model
	for _, f := range []struct {
		name string
		v    *int
	}{{"layers", mm.Layers}, {"hidden", mm.Hidden}, {"heads", mm.Heads}, {"seq_len", mm.Seq}, {"vocab", mm.Vocab}} {
		if f.v == nil || *f.v <= 0 {
			return nil, nil, fmt.Sprintf("model %s not given", f.name)
		}
	}
	h, heads := *mm.Hidden, *mm.Heads
	if h%heads != 0 {
		return nil, nil, fmt.Sprintf("hidden %d is not a multiple of %d heads", h, heads)
	}
	var assumed []string
	t := model.Transformer{Hidden: h, Layers: *mm.Layers, Heads: heads, KVHeads: heads, HeadDim: h / heads,
		Vocab: *mm.Vocab, Seq: *mm.Seq, Batch: gbs, Tied: true}
	if mm.KVHeads != nil {
		t.KVHeads = *mm.KVHeads
	}
	if mm.FFN != nil {
		t.FFN = *mm.FFN
	} else {
		t.FFN = 4 * h
		assumed = append(assumed, fmt.Sprintf("MLP width not given: 4h = %d", t.FFN))
	}
	switch valFamily(r) {
	case "mpt":
		t.Bias, t.Learned = true, true
		assumed = append(assumed, "MPT architecture as llm-foundry benchmarked it: biases, learned positions, tied embeddings, no dropout (what gives the tables' parameter counts)")
	case "bloom":
		t.Bias = true
		assumed = append(assumed, "BLOOM architecture: biases, ALiBi (no position embeddings), tied embeddings, no dropout")
	default:
		t.Bias, t.Learned, t.Dropout = true, true, 0.1
		assumed = append(assumed, "GPT architecture as Megatron-LM builds it: biases, learned positions, tied embeddings, dropout 0.1")
	}
	m, err := t.Build(mm.Name, "gpt")
	if err != nil {
		return nil, nil, err.Error()
	}
	return m, assumed, ""
}

// valInt returns a parallel field, else the same key under derived.
func valInt(r *valRecord, v *int, key string) (int, bool) {
	if v != nil {
		return *v, true
	}
	if f, ok := valNumber(r.Derived, key); ok && f == math.Trunc(f) {
		return int(f), true
	}
	return 0, false
}

// valStrategy turns the record's parallel configuration into a strategy. Knobs the record omits
// are chosen by tpsim's search among the values that fit (the fastest), and named in assumed.
func valStrategy(r *valRecord, m *model.Model, hw *hardware.Hardware) (strategies.Strategy, []string, string) {
	p := r.Parallel
	var assumed []string
	tp, okT := valInt(r, p.TP, "tp")
	pp, okP := valInt(r, p.PP, "pp")
	dp, okD := valInt(r, p.DP, "dp")
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
		return strategies.Strategy{}, nil, fmt.Sprintf("parallel degrees not stated: %s", strings.Join(missing, ", "))
	}
	if p.EP != nil && *p.EP > 1 {
		return strategies.Strategy{}, nil, "expert parallel: tpsim prices dense models only"
	}
	cp := 1
	if p.CP != nil {
		cp = *p.CP
	}
	if r.Hardware.Count == nil {
		return strategies.Strategy{}, nil, "GPU count not stated"
	}
	if n := *r.Hardware.Count; tp*pp*dp*cp != n {
		return strategies.Strategy{}, nil, fmt.Sprintf("tp %d x pp %d x dp %d x cp %d = %d is not the %d GPUs of the record", tp, pp, dp, cp, tp*pp*dp*cp, n)
	}
	if p.GlobalBatch == nil {
		return strategies.Strategy{}, nil, "global batch not stated"
	}
	gbs := *p.GlobalBatch
	keys := []string{fmt.Sprintf("pp=%d,dp=%d,cp=%d,tp=%d", pp, dp, cp, tp)}
	// What the source's software does, where the record does not say. Megatron-LM all-reduces
	// gradients after the backward pass (Korthikanti et al. 2022 §6.3: "we do not use any
	// overlapping of gradient all-reduces with back-propagation"); DeepSpeed's pipeline engine
	// reduces them after the last microbatch's backward (deepspeed/runtime/pipe/schedule.py:
	// ReduceTiedGrads, ReduceGrads, OptimizerStep), and its ZeRO overlaps the reduction by default
	// only at stage 3 (deepspeed/runtime/zero/config.py, overlap_comm_valid: stage == 3).
	zero, zeroStated := 0, true
	switch {
	case p.ZeRO != nil:
		zero = *p.ZeRO
	case p.FSDP != nil && *p.FSDP:
		zero = 3
	default:
		zeroStated = false
	}
	switch f := valFamily(r); {
	case (f == "megatron" || f == "bloom") && zero < 3:
		keys = append(keys, "overlap=off")
		assumed = append(assumed, "data-parallel gradient reduction after backward, not overlapped (Megatron-LM, Korthikanti et al. 2022 §6.3; DeepSpeed's pipeline engine and ZeRO below stage 3)")
	case f == "megatron" || f == "bloom":
		keys = append(keys, "overlap=on")
		assumed = append(assumed, "data-parallel reduction overlapped with backward (DeepSpeed ZeRO-3's default overlap_comm)")
	default:
		keys = append(keys, "overlap=on")
		assumed = append(assumed, "data-parallel gradient reduction overlapped with backward (PyTorch DDP and FSDP default)")
	}
	attn, why := valAttention(r)
	keys = append(keys, "attn="+attn)
	assumed = append(assumed, why)
	keys = append(keys, fmt.Sprintf("zero=%d", zero))
	if !zeroStated {
		assumed = append(assumed, "ZeRO stage not stated: 0 (no optimizer sharding)")
	}
	if p.SP != nil {
		keys = append(keys, "sp="+map[bool]string{true: "on", false: "off"}[*p.SP])
	} else {
		keys = append(keys, "sp=off")
		if tp > 1 {
			assumed = append(assumed, "sequence parallel not stated: off")
		}
	}
	if p.Recompute == nil && valFamily(r) == "megatron" {
		keys = append(keys, "recompute=full")
		assumed = append(assumed, "recompute not stated: full, as Megatron-LM's GPT example scripts run it (--checkpoint-activations) and its TFLOP/s formula (Eq. 3) counts it")
	}
	if p.Recompute != nil {
		rc := strings.ToLower(*p.Recompute)
		switch {
		case strings.HasPrefix(rc, "selective"):
			keys = append(keys, "recompute=selective")
		case strings.HasPrefix(rc, "full"):
			keys = append(keys, "recompute=full")
		case strings.HasPrefix(rc, "none"):
			keys = append(keys, "recompute=none")
		default:
			return strategies.Strategy{}, nil, fmt.Sprintf("recompute %q is not none, selective or full", *p.Recompute)
		}
	}
	if pp > 1 {
		switch {
		case p.Interleaved != nil && *p.Interleaved:
			keys = append(keys, "schedule=interleaved")
			if p.VirtualStages != nil {
				keys = append(keys, fmt.Sprintf("vpp=%d", *p.VirtualStages))
			}
		default:
			keys = append(keys, "schedule=1f1b")
			if p.Interleaved == nil {
				assumed = append(assumed, "pipeline schedule not stated: 1F1B (Megatron-LM's and DeepSpeed's default)")
			}
		}
	} else {
		keys = append(keys, "schedule=1f1b")
	}
	switch {
	case p.Microbatch != nil:
		keys = append(keys, fmt.Sprintf("mbs=%d", *p.Microbatch))
	case p.GradAccum != nil && *p.GradAccum > 0 && gbs%(dp**p.GradAccum) == 0:
		keys = append(keys, fmt.Sprintf("mbs=%d", gbs/(dp**p.GradAccum)))
		assumed = append(assumed, fmt.Sprintf("microbatch from the global batch and gradient accumulation: %d / (dp %d x %d)", gbs, dp, *p.GradAccum))
	}
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
		// pipeline stages), the first: Predict prices it below.
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
	if len(space.Candidates) > 1 {
		var chose []string
		if !fix.Has("mbs") {
			chose = append(chose, fmt.Sprintf("microbatch %d", st.MBS))
		}
		if !fix.Has("recompute") {
			chose = append(chose, "recompute "+st.Recompute)
		}
		if st.Schedule == strategies.ScheduleInterleaved && !fix.Has("vpp") {
			chose = append(chose, fmt.Sprintf("%d model chunks per device (vpp)", st.VPP))
		}
		fits := "the fastest that fits in memory by tpsim's estimate"
		if len(res.Top) == 0 {
			fits = "the smallest; tpsim predicts none of the choices fits in memory"
		}
		assumed = append(assumed, fmt.Sprintf("not stated, chosen by search among %d options: %s (%s)", len(space.Candidates), strings.Join(chose, ", "), fits))
	}
	return st, assumed, ""
}

// valAttention is the attention kernel a record's run used, and the assumption line that says
// why. Notes that name a FlashAttention generation decide it. MosaicML's llm-foundry A100
// benchmark tables ran its Triton FlashAttention whatever their records' notes say: the MPT yamls
// set attn_impl triton (scripts/train/yamls/mpt/7b.yaml, pretrain/mpt-7b.yaml), and
// scripts/train/benchmarking/sweep.sh, which the README says lists all the tables' runs, made the
// A100 ones with llm-foundry v0.0.4 on torch 1.13.1 without --attn_impl, whose default in
// submit_benchmarks.py was triton (later versions default to flash and install FlashAttention-2
// for torch 2); v0.0.4 predates FlashAttention-2 (July 2023) in any case. Other notes that say
// FlashAttention are priced as FlashAttention-2; no mention is eager attention, as Megatron-LM
// ran it.
func valAttention(r *valRecord) (string, string) {
	notes := strings.ToLower(r.Notes)
	var gen string
	if m := valFlashGen.FindStringSubmatch(notes); m != nil {
		gen = m[1]
	}
	switch {
	case gen == "2":
		return strategies.AttentionFlash, "attention: FlashAttention-2, as the record's notes say"
	case gen == "1" || valTriton.MatchString(notes):
		return strategies.AttentionFlash1, "attention: FlashAttention-1 or its Triton port, as the record's notes say"
	case strings.Contains(r.Source.Repo, "llm-foundry") && strings.Contains(r.Source.Path, "benchmarking") && strings.Contains(strings.ToLower(r.Hardware.GPU), "a100"):
		return strategies.AttentionFlash1, "attention: llm-foundry's Triton FlashAttention (attn_impl triton), priced as FlashAttention-1: the MPT yamls set it, and the A100 tables were made with llm-foundry v0.0.4 on torch 1.13.1 (benchmarking/sweep.sh), whose submit_benchmarks.py defaulted to it and which predates FlashAttention-2; the notes' 'attn_impl flash' is the later default"
	case valFlash.MatchString(notes):
		return strategies.AttentionFlash, "attention: FlashAttention, as the record's notes say, priced as FlashAttention-2"
	}
	return strategies.AttentionEager, "attention kernel not stated: eager (unfused), as Megatron-LM ran it"
}

// The attention kernels notes name: FlashAttention by any spelling, its generation when given
// ("FlashAttention-2", "flash-attn v1", "flash_attn==2.4"; not the 128 of "FlashAttention
// 128-dim heads"), and the Triton port as llm-foundry configures it.
var (
	valFlash    = regexp.MustCompile(`flash[-_ ]?att(?:n|ention)\b|attn_impl[ :=]*["']?flash\b`)
	valFlashGen = regexp.MustCompile(`flash[-_ ]?att(?:n|ention)[-_ =]*(?:v|version )?([12])\b`)
	valTriton   = regexp.MustCompile(`attn_impl[ :=]*["']?triton\b|triton flash[-_ ]?att(?:n|ention)\b|flash[-_ ]?att(?:n|ention) (?:in|on) triton\b`)
)

// valSourceFLOPs is the FLOPs of one step counted as Megatron-LM counts them (Narayanan et al.
// 2021 Eq. 3, with activation recomputation): every transformer layer's matrix products four
// times (forward, backward twice, recompute forward), the output head three times. For a GPT
// with a 4h MLP this is 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
func valSourceFLOPs(t *model.Transformer, batch, seq int) float64 {
	layers, head := costmodel.TransformerForwardFLOPs(t, batch, seq)
	return float64(4*layers + 3*head)
}

// valCompare predicts one record. It returns the row, or why the record was skipped.
func valCompare(r *valRecord) (*valRow, string) {
	metric := ""
	var pub float64
	for _, k := range valMetrics {
		if v, ok := valNumber(r.Measured, k); ok && v > 0 {
			metric, pub = k, v
			break
		}
	}
	if metric == "" {
		return nil, "no measured step time, tokens/s, TFLOP/s per GPU or MFU (a derived estimate is not a measurement)"
	}
	hw, assumedHW, why := valHardware(r)
	if why != "" {
		return nil, why
	}
	if r.Parallel.GlobalBatch == nil {
		return nil, "global batch not stated"
	}
	gbs := *r.Parallel.GlobalBatch
	m, assumedM, why := valModel(r, gbs)
	if why != "" {
		return nil, why
	}
	st, assumedS, why := valStrategy(r, m, hw)
	if why != "" {
		return nil, why
	}
	res, err := costmodel.Estimate(m, st, hw)
	if err != nil {
		// The closed form prices even pipeline stages only; Predict prices the Program.
		p, lerr := program.Lower(m, st)
		if lerr != nil {
			return nil, lerr.Error()
		}
		if res, err = costmodel.Predict(p, hw); err != nil {
			return nil, err.Error()
		}
	}
	n := float64(st.Mesh.Devices())
	seq := float64(st.Resolve(m).Seq)
	step := float64(res.Time.Step)
	assumed := append(append(assumedHW, assumedM...), assumedS...)
	if !res.Feasible {
		assumed = append(assumed, fmt.Sprintf("tpsim predicts %.1f GiB per device, more than the %.0f GB the run had: its memory model disagrees with the run", res.Memory.Peak.GiB(), float64(hw.Device.Memory)/1e9))
	}
	row := &valRow{ID: r.ID, Metric: metric, Published: pub, source: valSource(r), strategy: search.Label(st), hardware: hw.Name, predStep: step}
	tokens := float64(gbs) * seq
	switch metric {
	case valStepTime:
		row.Predicted, row.pubStep = step, pub
	case valTokensPerS:
		row.Predicted, row.pubStep = res.TokensPerS, tokens/pub
	case valTFLOPs:
		var f float64
		if valFamily(r) == "megatron" || valFamily(r) == "bloom" {
			f = valSourceFLOPs(m.Transformer, gbs, int(seq))
			assumed = append(assumed, "TFLOP/s counted as Megatron-LM does (Narayanan et al. 2021 Eq. 3, recompute forward included)")
		} else {
			f = float64(res.FLOPs.Model)
			assumed = append(assumed, "TFLOP/s counted as model FLOPs (recompute not included)")
		}
		row.Predicted, row.pubStep = f/step/n/1e12, f/(pub*1e12)/n
	case valMFU:
		peak, _ := hw.PeakFor("bf16")
		row.Predicted = res.MFU
		row.pubStep = float64(res.FLOPs.Model) / (pub * float64(peak) * n)
	}
	row.APE = math.Abs(row.Predicted-pub) / pub
	row.Assumed = assumed
	return row, ""
}

// valSourceStats is the error of one source's rows.
type valSourceStats struct {
	Source string
	valSummary
}

func valBySource(rows []valRow) []valSourceStats {
	by := map[string][]valRow{}
	var names []string
	for _, r := range rows {
		if _, ok := by[r.source]; !ok {
			names = append(names, r.source)
		}
		by[r.source] = append(by[r.source], r)
	}
	sort.Strings(names)
	out := make([]valSourceStats, len(names))
	for i, n := range names {
		out[i] = valSourceStats{n, valSummarize(by[n])}
	}
	return out
}

func valFormat(metric string, v float64) string {
	switch metric {
	case valStepTime:
		return units.Seconds(v).String()
	case valTokensPerS:
		return commas(int64(v + 0.5))
	case valTFLOPs:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// valWriteText prints the human form.
func valWriteText(w io.Writer, path string, recs []valRecord, out *valOutput) error {
	ew := &errWriter{w: w}
	ew.printf("Validation against %d published runs (%s): %d compared, %d skipped\n\n", len(recs), path, len(out.Rows), len(out.Skipped))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\thardware\tstrategy\tmetric\tpublished\tpredicted\tAPE\n")
	for _, r := range out.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\n", r.ID, r.hardware, r.strategy, r.Metric, valFormat(r.Metric, r.Published), valFormat(r.Metric, r.Predicted), 100*r.APE)
	}
	tw.Flush()
	ew.printf("\nError by source\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  source\trows\tMAPE\tmax APE\n")
	for _, s := range valBySource(out.Rows) {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%.1f%%\n", s.Source, s.N, 100*s.MAPE, 100*s.MaxAPE)
	}
	fmt.Fprintf(tw, "  all\t%d\t%.1f%%\t%.1f%%\n", out.Summary.N, 100*out.Summary.MAPE, 100*out.Summary.MaxAPE)
	tw.Flush()
	if len(out.Rows) > 0 {
		hard := append([]valRow(nil), out.Rows...)
		sort.SliceStable(hard, func(i, j int) bool { return hard[i].APE > hard[j].APE })
		ew.printf("\nHardest rows\n")
		for _, r := range hard[:min(5, len(hard))] {
			ew.printf("  %s: %s published %s, predicted %s (%.1f%%)\n", r.ID, r.Metric, valFormat(r.Metric, r.Published), valFormat(r.Metric, r.Predicted), 100*r.APE)
		}
	}
	if len(out.Skipped) > 0 {
		ew.printf("\nSkipped\n")
		for _, s := range out.Skipped {
			ew.printf("  %s: %s\n", s.ID, s.Reason)
		}
	}
	ew.printf("\nAssumed (values the records do not give)\n")
	counts := map[string]int{}
	var order []string
	for _, r := range out.Rows {
		for _, a := range r.Assumed {
			key := a
			if strings.HasPrefix(a, "not stated, chosen by search") {
				continue
			}
			if counts[key] == 0 {
				order = append(order, key)
			}
			counts[key]++
		}
	}
	for _, a := range order {
		ew.printf("  %d rows: %s\n", counts[a], a)
	}
	for _, r := range out.Rows {
		for _, a := range r.Assumed {
			if strings.HasPrefix(a, "not stated, chosen by search") {
				ew.printf("  %s: %s\n", r.ID, a)
			}
		}
	}
	return ew.err
}

// valWriteFiles writes validate.csv, validate.json and the figure into dir.
func valWriteFiles(dir string, out *valOutput) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	header := []string{"id", "source", "hardware", "strategy", "metric", "published", "predicted", "ape"}
	var rows [][]string
	for _, r := range out.Rows {
		rows = append(rows, []string{r.ID, r.source, r.hardware, r.strategy, r.Metric,
			strconv.FormatFloat(r.Published, 'g', 6, 64), strconv.FormatFloat(r.Predicted, 'g', 6, 64), strconv.FormatFloat(r.APE, 'f', 4, 64)})
	}
	var csv bytes.Buffer
	if err := reports.CSV(&csv, header, rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "validate.csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := writeJSON(&js, out); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "validate.json"), js.Bytes(), 0o644); err != nil {
		return err
	}
	if len(out.Rows) == 0 {
		return nil
	}
	// The figure compares step times: each row's published figure converted to the step time it
	// implies (tokens per step / tokens/s; FLOPs per step counted the source's way / (TFLOP/s x
	// GPUs)), one colour per source, y = x and a ±15% band.
	var prs []reports.Row
	for _, r := range out.Rows {
		prs = append(prs, reports.Row{Strategy: r.source, Predicted: reports.Sample{Time: reports.StepTime{Step: r.predStep}},
			Measured: reports.Sample{Time: reports.StepTime{Step: r.pubStep}}})
	}
	s := out.Summary
	fig, err := reports.PredictedVsMeasured(fmt.Sprintf("Step time: predicted vs published (%d runs, MAPE %.1f%%)", s.N, 100*s.MAPE), prs, reports.DefaultBand)
	if err != nil {
		return err
	}
	return reports.Save(fig, dir, "validate", reports.DefaultWidth, reports.DefaultHeight)
}
