package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/hardware"
)

// The fit (tpsim fit). What may be fitted is a small declared set of achieved fractions per GPU
// type (Params), never a parameter per record, model or GPU count. The ceilings they are fractions
// of (datasheet peaks, the matmul sweep's best rate) stay in the presets, cited, next to them.

// Param is one fitted parameter: a field of a GPU type's hardware efficiency.
type Param struct {
	GPU string `json:"gpu"` // the GPU type (GPUType)
	// Stack is the software stack the value is for (gemm_achieved_fraction_by_stack), "" for
	// the GPU type's value for any stack.
	Stack string `json:"stack,omitempty"`
	Field string `json:"field"` // the JSON field under efficiency
	Prior
	// Why says which rows decide it.
	Why string `json:"why"`
}

// Prior is what a fit starts from for a field, whatever the GPU type or stack: the range searched
// (Lo, Hi) and the value before the fit (Start), which a fold with no rows of the GPU type (nor
// of another type of its chip) keeps; StartWhy cites it.
type Prior struct {
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Start    float64 `json:"start"`
	StartWhy string  `json:"start_why"`
}

// The priors of the fitted fields.
var (
	gemmPrior     = Prior{Lo: 0.3, Hi: 1, Start: 1, StartWhy: "1: the matmul sweep's ceiling"}
	listCopyPrior = Prior{Lo: 0, Hi: 100, Start: 10, StartWhy: "10 us: PyTorch's dispatch of a small copy plus its CUDA launch, 5-20 us (NVIDIA's Nsight Systems guide measures about 20 us for a PyTorch elementwise kernel on V100)"}
	flash1Prior   = Prior{Lo: 0.1, Hi: 0.8, Start: 0.325, StartWhy: "0.325: Dao 2023 (arXiv:2307.08691) abstract, FlashAttention reaches 25-40% of peak on A100"}
	fp8Prior      = Prior{Lo: 0.2, Hi: 1, Start: 0.803, StartWhy: "0.803: the BF16 matmul sweep's fraction of peak (stas00/ml-engineering), taken for FP8 until fitted"}
	flashPrior    = Prior{Lo: 0.1, Hi: 0.9, Start: 0.35, StartWhy: "0.35: FlashAttention-2 on H100 (Shah et al. 2024, arXiv:2407.08608, abstract)"}
)

// Params is the declared parameter set: 10 parameters over 3 GPU types. The A100 rows decide the
// A100's GEMM fraction for any stack (every row), and where the records say which software stack
// ran, that stack's own: Megatron-LM's (its PTD-P runs) and llm-foundry's (its FSDP runs); and
// FlashAttention-1's fraction (llm-foundry's Triton kernel, 139 rows). DeepSpeed's runs (MT-NLG,
// BLOOM, Narayanan et al.'s ZeRO-3 rows) get no GEMM fraction of their own: fitted, it went to
// 0.42 of the ceiling, absorbing the ZeRO-3 rows' then missing mechanism (they were predicted
// 1.3-3.5x too fast) and leaving BLOOM and MT-NLG 78% slow when left out; they run at the A100's
// value for any stack. That mechanism is DeepSpeed 2021's list collectives (tensorlists=on): one
// copy per rank and parameter in every ZeRO-3 gather and reduce-scatter, whose time per copy
// (list_copy_us) Narayanan et al.'s six ZeRO-3 rows decide (the only rows that run them). The H100 SXM rows are NeMo's, all FP8: they decide the FP8 products' fraction and the
// fused attention's (the long-sequence table, where attention is most of the step); their BF16
// GEMMs (the head), which no BF16 row of that part measures, take the H100 96 GB's fraction
// (Shared). The H100
// 96 GB rows are torchtitan's, BF16 and Float8 at a 500 W limit: they decide all three. On H100
// each GPU type ran one stack, so its values are that stack's.
var Params = []Param{
	{GPU: "a100", Field: "gemm_achieved_fraction", Prior: gemmPrior, Why: "every A100 row, whatever its stack: the value for a run of a stack with no value of its own"},
	{GPU: "a100", Stack: StackMegatron, Field: "gemm_achieved_fraction_by_stack", Prior: gemmPrior, Why: "Megatron-LM's own runs (Narayanan et al. 2021 PTD-P and weak scaling, Megatron-LM README 2020-2021)"},
	{GPU: "a100", Stack: StackLLMFoundry, Field: "gemm_achieved_fraction_by_stack", Prior: gemmPrior, Why: "llm-foundry's A100 throughput tables (Composer + FSDP, 8-512 GPUs)"},
	{GPU: "a100", Field: "list_copy_us", Prior: listCopyPrior, Why: "Narayanan et al.'s ZeRO-3 rows (DeepSpeed 2021, 384-2,240 GPUs), the only rows that run list collectives (tensorlists=on)"},
	{GPU: "a100", Field: "flash1_attention_fraction", Prior: flash1Prior, Why: "llm-foundry's A100 tables, which ran its Triton FlashAttention"},
	{GPU: "h100-sxm", Field: "fp8_gemm_fraction", Prior: fp8Prior, Why: "NeMo 24.03/24.07 rows, all FP8 (Transformer Engine)"},
	{GPU: "h100-sxm", Field: "flash_attention_fraction", Prior: flashPrior, Why: "NeMo rows, Transformer Engine's fused attention; the long-sequence table (4k-1M tokens) above all"},
	{GPU: "h100-96g", Field: "gemm_achieved_fraction", Prior: gemmPrior, Why: "torchtitan's BF16 rows (and the BF16 head of its Float8 rows), at a 500 W limit"},
	{GPU: "h100-96g", Field: "fp8_gemm_fraction", Prior: fp8Prior, Why: "torchtitan's Float8 rows"},
	{GPU: "h100-96g", Field: "flash_attention_fraction", Prior: flashPrior, Why: "torchtitan rows, PyTorch SDPA's flash attention; the 32k-262k-token context-parallel tables above all"},
}

// Name is the parameter's name in the presets' sources: efficiency.FIELD, or
// efficiency.FIELD.STACK for a stack's value.
func (p Param) Name() string {
	if p.Stack != "" {
		return "efficiency." + p.Field + "." + p.Stack
	}
	return "efficiency." + p.Field
}

// GPUPresets maps a GPU type to the preset files its fitted values are written into. h200 has no
// training rows: it takes its chip's values (Shared).
var GPUPresets = map[string][]string{"a100": {"a100-80g"}, "h100-sxm": {"h100-sxm"}, "h100-96g": {"h100-96g"}, "h200": {"h200"}}

// SharedValue is a value a GPU type takes, unfitted, from another GPU type of its chip: a field
// of Params (for any stack) that none of the type's own parameters is, fitted for the first GPU
// type of the same chip in Params' order. It is the rule a leave-one-source-out fold applies to
// a GPU type with no rows left (fitter.fit), applied to the presets too: no BF16 row of the H100
// SXM (NeMo's are all FP8) measures its BF16 GEMMs, which would otherwise run at the matmul
// sweep's ceiling, the optimistic bound, and the H200 (the same die, HBM3e) has no row at all.
type SharedValue struct {
	GPU, Field, From string
	// Param is the index in Params of the value taken.
	Param int
}

// presetGPUs is the GPU types of GPUPresets, sorted.
func presetGPUs() []string {
	gpus := slices.Collect(maps.Keys(GPUPresets))
	sort.Strings(gpus)
	return gpus
}

// Shared lists the shared values of the GPU types in GPUPresets, in a fixed order.
func Shared() []SharedValue {
	var out []SharedValue
	for _, gpu := range presetGPUs() {
		own := map[string]bool{}
		for _, p := range Params {
			if p.GPU == gpu {
				own[p.Field] = true
			}
		}
		for k, p := range Params {
			if p.Stack != "" || p.GPU == gpu || own[p.Field] || Chip(p.GPU) != Chip(gpu) {
				continue
			}
			own[p.Field] = true // the first of the chip in Params' order
			out = append(out, SharedValue{GPU: gpu, Field: p.Field, From: p.GPU, Param: k})
		}
	}
	return out
}

// sharedValues is Shared, computed once.
var sharedValues = Shared()

// Values are fitted values by parameter index in Params.
type Values []float64

// StartValues are the declared start values.
func StartValues() Values {
	v := make(Values, len(Params))
	for i, p := range Params {
		v[i] = p.Start
	}
	return v
}

// setField sets an efficiency field by its JSON name (and stack).
func setField(e *hardware.Efficiency, field, stack string, v float64) {
	switch field {
	case "gemm_achieved_fraction_by_stack":
		if e.GEMMAchievedByStack == nil {
			e.GEMMAchievedByStack = map[string]float64{}
		}
		e.GEMMAchievedByStack[stack] = v
	case "gemm_achieved_fraction":
		e.GEMMAchieved = v
	case "fp8_gemm_fraction":
		e.FP8GEMM = v
	case "flash_attention_fraction":
		e.FlashMax = v
	case "flash1_attention_fraction":
		e.Flash1Max = v
	case "list_copy_us":
		e.ListCopyMicros = v
	default:
		panic("validate: no efficiency field " + field)
	}
}

// Presets returns the hardware presets with the values set. Each preset is parsed once; every
// call returns a copy the caller may change.
func (v Values) Presets() PresetFunc {
	base := map[string]*hardware.Hardware{}
	return func(name string) (*hardware.Hardware, error) {
		b, ok := base[name]
		if !ok {
			var err error
			if b, err = hardware.Preset(name); err != nil {
				return nil, err
			}
			base[name] = b
		}
		hw := clone(b)
		for i, p := range Params {
			if GPUType(name) == p.GPU {
				setField(&hw.Efficiency, p.Field, p.Stack, v[i])
			}
		}
		for _, s := range sharedValues {
			if GPUType(name) == s.GPU {
				setField(&hw.Efficiency, s.Field, "", v[s.Param])
			}
		}
		return hw, nil
	}
}

// clone copies a Hardware deeply enough that changing the copy's fields, levels and maps leaves
// the original as it was.
func clone(b *hardware.Hardware) *hardware.Hardware {
	hw := *b
	hw.Levels = slices.Clone(b.Levels)
	hw.Slowdown = slices.Clone(b.Slowdown)
	hw.Device.Peak = maps.Clone(b.Device.Peak)
	hw.Sources = maps.Clone(b.Sources)
	hw.Efficiency.KernelRates = maps.Clone(b.Efficiency.KernelRates)
	return &hw
}

// FitResult is what Fit found.
type FitResult struct {
	Values   Values  `json:"values"`
	Rows     int     `json:"rows"`
	InSample Summary `json:"in_sample"`
	LOSO     Summary `json:"leave_one_source_out"`
	// BySource is each source's error when it was left out of the fit.
	BySource []Group `json:"loso_by_source"`
	InByGPU  []Group `json:"in_sample_by_gpu"`
	// FoldValues are the values each fold fitted, by source left out.
	FoldValues map[string]Values `json:"fold_values"`
	// RowsByGPU counts the training rows per GPU type, and SourcesByGPU names their sources.
	RowsByGPU    map[string]int      `json:"rows_by_gpu"`
	SourcesByGPU map[string][]string `json:"sources_by_gpu"`
	// ParamRows counts the rows each parameter decides, and ParamSources names their sources.
	ParamRows    []int      `json:"param_rows"`
	ParamSources [][]string `json:"param_sources"`
}

// PrepareAll prepares every record with the presets at the start values, so that the knobs the
// search chooses do not depend on an earlier fit: running the fit again gives the same bytes.
func PrepareAll(recs []Record) ([]*Case, []Skip) {
	o := Options{Preset: StartValues().Presets()}
	var cases []*Case
	var skips []Skip
	for i := range recs {
		c, why := Prepare(&recs[i], o)
		if why != "" {
			skips = append(skips, Skip{ID: recs[i].ID, Reason: why})
			continue
		}
		cases = append(cases, c)
	}
	return cases, skips
}

// fitter prices cases on trial values.
type fitter struct {
	cases []*Case
	gpu   []string // GPU type of each case
	// noStacks prices every case at its GPU type's value for any stack, as for fitting that value.
	noStacks bool
}

// decides reports whether case i's price depends on parameter p: the case runs on p's GPU type,
// and for a stack's value, ran that stack.
func (f *fitter) decides(p Param, i int) bool {
	return f.gpu[i] == p.GPU && (p.Stack == "" || f.cases[i].Stack == p.Stack)
}

// rows prices the cases selected by keep on values v; cases that fail to price are left out.
func (f *fitter) rows(v Values, keep func(i int) bool) []Row {
	presets := v.Presets()
	var out []Row
	for i, c := range f.cases {
		if !keep(i) {
			continue
		}
		hw, err := c.Hardware(presets)
		if err != nil {
			continue
		}
		if f.noStacks {
			hw.Efficiency.GEMMAchievedByStack = nil
		}
		if row, why := c.Price(hw); why == "" {
			out = append(out, *row)
		}
	}
	return out
}

func (f *fitter) mape(v Values, keep func(i int) bool) float64 {
	return Summarize(f.rows(v, keep)).MAPE
}

// fit fits the parameters of the GPU types that the kept cases have, starting from start, by
// coordinate descent: each parameter in turn by golden-section search of the MAPE of its GPU
// type's rows over [Lo, Hi] (16 steps narrow the range 2,200-fold), two rounds, then rounded to
// 3 decimals. A parameter no kept row depends on keeps its start value. A parameter whose GPU
// type has no kept rows takes the fitted value of the same field for another GPU type of its
// chip, else the mean of that field over the GPU types that have rows (the fraction of the
// sweep's ceiling that training reaches transfers across GPUs better than the ceiling itself),
// else keeps its start value; a stack's value with no kept rows of that stack takes its GPU
// type's value for any stack.
func (f *fitter) fit(keep func(i int) bool) Values {
	v := StartValues()
	has := make([]bool, len(Params))
	for k, p := range Params {
		for i := range f.cases {
			has[k] = has[k] || (keep(i) && f.decides(p, i))
		}
	}
	const rounds, iters = 2, 16
	phi := (math.Sqrt(5) - 1) / 2
	for range rounds {
		for k, p := range Params {
			if !has[k] {
				continue
			}
			sel := func(i int) bool { return keep(i) && f.decides(p, i) }
			// A GPU type's value for any stack is fitted as if no stack had its own.
			pooled := p.Field == "gemm_achieved_fraction"
			obj := func(x float64) float64 {
				t := append(Values(nil), v...)
				t[k] = x
				f.noStacks = pooled
				defer func() { f.noStacks = false }()
				return f.mape(t, sel)
			}
			a, b := p.Lo, p.Hi
			if obj(a) == obj(b) {
				// No kept row depends on it (no row runs that kernel or precision): keep it.
				continue
			}
			c, d := b-phi*(b-a), a+phi*(b-a)
			fc, fd := obj(c), obj(d)
			for range iters {
				if fc <= fd {
					b, d, fd = d, c, fc
					c = b - phi*(b-a)
					fc = obj(c)
				} else {
					a, c, fc = c, d, fd
					d = a + phi*(b-a)
					fd = obj(d)
				}
			}
			v[k] = (a + b) / 2
		}
	}
	for k := range v {
		v[k] = math.Round(v[k]*1000) / 1000
	}
	fitted := append(Values(nil), v...)
	for k, p := range Params {
		if has[k] {
			continue
		}
		if p.Stack != "" {
			// A stack with no kept rows runs at its GPU type's value for any stack.
			for j, q := range Params {
				if q.GPU == p.GPU && q.Stack == "" && q.Field == "gemm_achieved_fraction" {
					v[k] = fitted[j]
				}
			}
			continue
		}
		var same, other []float64
		for j, q := range Params {
			if q.Field == p.Field && q.Stack == "" && has[j] {
				if Chip(q.GPU) == Chip(p.GPU) {
					same = append(same, fitted[j])
				}
				other = append(other, fitted[j])
			}
		}
		switch {
		case len(same) > 0:
			v[k] = same[0]
		case len(other) > 0:
			var sum float64
			for _, x := range other {
				sum += x
			}
			v[k] = math.Round(sum/float64(len(other))*1000) / 1000
		}
	}
	return v
}

// Fit fits Params on the cases, and measures the fit in sample and leaving each source out in
// turn (its rows priced with the values fitted on the others).
func Fit(cases []*Case) *FitResult {
	f := &fitter{cases: cases}
	src := make([]string, len(cases))
	res := &FitResult{FoldValues: map[string]Values{}, RowsByGPU: map[string]int{}, SourcesByGPU: map[string][]string{}}
	for i, c := range cases {
		f.gpu = append(f.gpu, GPUType(c.Preset))
		src[i] = Source(c.Record)
	}
	all := func(int) bool { return true }
	res.Values = f.fit(all)
	in := f.rows(res.Values, all)
	res.Rows = len(in)
	res.InSample = Summarize(in)
	res.InByGPU = GroupBy(in, func(r *Row) string { return r.GPU })
	for _, r := range in {
		res.RowsByGPU[r.GPU]++
		if !contains(res.SourcesByGPU[r.GPU], r.Source) {
			res.SourcesByGPU[r.GPU] = append(res.SourcesByGPU[r.GPU], r.Source)
		}
	}
	for _, s := range res.SourcesByGPU {
		sort.Strings(s)
	}
	for _, p := range Params {
		n := 0
		var names []string
		for i, c := range cases {
			if f.decides(p, i) {
				n++
				if s := Source(c.Record); !contains(names, s) {
					names = append(names, s)
				}
			}
		}
		sort.Strings(names)
		res.ParamRows, res.ParamSources = append(res.ParamRows, n), append(res.ParamSources, names)
	}
	var sources []string
	for _, s := range src {
		if !contains(sources, s) {
			sources = append(sources, s)
		}
	}
	sort.Strings(sources)
	var held []Row
	for _, s := range sources {
		fold := f.fit(func(i int) bool { return src[i] != s })
		res.FoldValues[s] = fold
		out := f.rows(fold, func(i int) bool { return src[i] == s })
		held = append(held, out...)
		res.BySource = append(res.BySource, Group{s, Summarize(out)})
	}
	res.LOSO = Summarize(held)
	return res
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Provenance is the source line a fitted value carries in its preset.
func (r *FitResult) Provenance(k int, command string) string {
	p := Params[k]
	var ins Summary
	for _, g := range r.InByGPU {
		if g.Name == p.GPU {
			ins = g.Summary
		}
	}
	what := "GPU type " + p.GPU
	if p.Stack != "" {
		what += " run by " + p.Stack
	}
	return fmt.Sprintf("fitted by `%s` on the training split (validate/data/%s): %d rows of %s (%s); decided by %s; objective: the mean absolute percentage error of the rows' published metric (step time, tokens/s or TFLOP/s counted the source's way), minimized by golden-section coordinate descent over [%g, %g] from %s, rounded to 3 decimals; %s in-sample MAPE %.1f%%; all %d rows: in-sample %.1f%%, leave-one-source-out %.1f%%. One of %d parameters (validate.Params), none per record, model or GPU count",
		command, strings.Join(TrainingFiles, ", "), r.ParamRows[k], what, strings.Join(r.ParamSources[k], "; "), p.Why,
		p.Lo, p.Hi, p.StartWhy, p.GPU, 100*ins.MAPE, r.Rows, 100*r.InSample.MAPE, 100*r.LOSO.MAPE, len(Params))
}

// SharedProvenance is the source line a shared value carries in its preset.
func (r *FitResult) SharedProvenance(s SharedValue, command string) string {
	return fmt.Sprintf("not fitted: validate.Params fits no %s for GPU type %s (no row of its own would decide it), so it takes the value `%s` fits for %s, the same chip (%s), as a leave-one-source-out fold does for a GPU type with no rows left (validate.Shared): %s",
		s.Field, s.GPU, command, s.From, Chip(s.GPU), r.Provenance(s.Param, command))
}

// SetPresetValue writes parameter p's value into the efficiency object of a preset's JSON text
// and its provenance under sources (p.Name()), keeping the rest of the text as it is; the result
// must parse.
func SetPresetValue(text []byte, p Param, value float64, provenance string) ([]byte, error) {
	s := string(text)
	raw := strconv.FormatFloat(value, 'g', -1, 64)
	if p.Stack != "" {
		h, err := hardware.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("validate: the preset does not parse: %v", err)
		}
		m := maps.Clone(h.Efficiency.GEMMAchievedByStack)
		if m == nil {
			m = map[string]float64{}
		}
		m[p.Stack] = value
		b, err := json.Marshal(m) // keys sorted
		if err != nil {
			return nil, err
		}
		raw = strings.ReplaceAll(strings.ReplaceAll(string(b), ":", ": "), ",", ", ")
	}
	s, err := setInObject(s, "efficiency", p.Field, raw)
	if err != nil {
		return nil, err
	}
	q, _ := jsonString(provenance)
	if s, err = setInObject(s, "sources", p.Name(), q); err != nil {
		return nil, err
	}
	h, err := hardware.Parse([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("validate: the preset no longer parses after setting %s: %v", p.Name(), err)
	}
	if h.Sources[p.Name()] != provenance {
		return nil, fmt.Errorf("validate: %s's provenance did not round-trip", p.Name())
	}
	return []byte(s), nil
}

// setInObject sets "key": raw in the top-level object named obj of an indented preset (one
// member per line, as presets are written): it replaces the member's line, or adds it last.
func setInObject(s, obj, key, raw string) (string, error) {
	open := regexp.MustCompile(`(?m)^  "` + regexp.QuoteMeta(obj) + `": \{\n`)
	loc := open.FindStringIndex(s)
	if loc == nil {
		return "", fmt.Errorf("validate: the preset has no %q object", obj)
	}
	end := strings.Index(s[loc[1]:], "\n  }")
	if end < 0 {
		return "", fmt.Errorf("validate: the preset's %q object does not close", obj)
	}
	body := s[loc[1] : loc[1]+end]
	lines := strings.Split(body, "\n")
	line := `    "` + key + `": ` + raw
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, `    "`+key+`": `) {
			lines[i] = line
			if strings.HasSuffix(l, ",") {
				lines[i] += ","
			}
			found = true
		}
	}
	if !found {
		last := len(lines) - 1
		if !strings.HasSuffix(lines[last], ",") {
			lines[last] += ","
		}
		lines = append(lines, line)
	}
	return s[:loc[1]] + strings.Join(lines, "\n") + s[loc[1]+end:], nil
}

// jsonString quotes s as a JSON string without escaping HTML characters.
func jsonString(s string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
