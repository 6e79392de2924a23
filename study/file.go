package study

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// Defaults of a study file's optional keys.
const (
	// DefaultTop is how many candidates each plan keeps: the winner and two runners-up, enough
	// for the explanation's "what the runner-up would save" and for the simulator to re-rank.
	DefaultTop = 3
	// DefaultSimTop is how many of each plan's best closed-form candidates the simulator
	// re-ranks: fewer than tpsim plan's search.DefaultSimTop, because a study asks hundreds of
	// plans (the llama3 study's 72 would take 2-4 minutes of CPU at 50).
	DefaultSimTop = 5
	// MaxGPUCounts bounds a range of GPU counts, so that a typo (step 1 to 16384) is an error,
	// not a day of work.
	MaxGPUCounts = 1000
)

// Host is the hardware name of this machine (calibrated); Resolve asks its HardwareLoader for it.
const Host = "host"

// Pos is a place in a study file, 1-based.
type Pos struct{ Line, Column int }

// File is a study file as written, checked by Parse without touching the file system.
type File struct {
	Name        string
	Description string
	Models      []ModelEntry
	Hardware    []HardwareEntry
	// GPUs are the GPU counts to sweep, ascending, without repeats.
	GPUs        []int
	GlobalBatch int // sequences per step; 0: each model's default
	Seq         int // tokens per sequence; 0: each model's default
	// Tokens is the token budget of the training run.
	Tokens     float64
	Objectives []string
	// Fix holds the fixed strategy options in strategies.ParseFix form, in the order written.
	Fix      string
	WhatIfs  []WhatIf
	Top      int
	Sim      string
	SimTop   int
	Currency string
	// Measure asks for measured step times beside the predicted ones on the host hardware.
	Measure bool
	// FitSearch asks for the smallest GPU count that fits of each model on each hardware,
	// searched below the smallest swept count that fits (every count below one node, then whole
	// nodes); without it the report gives the smallest swept count.
	FitSearch bool

	pos map[string]Pos // where each top-level key was written
}

// ModelEntry is one model of a study: a preset name or a path (Hugging Face config.json or a
// tpsim model file, relative to the study file), with optional batch and sequence of its own.
type ModelEntry struct {
	Spec        string
	GlobalBatch int // 0: the study's
	Seq         int // 0: the study's
	Pos         Pos
}

// HardwareEntry is one hardware of a study: a preset name, "host" or a hardware JSON path, with
// an optional price and limits on how many GPUs there are.
type HardwareEntry struct {
	Spec            string
	PricePerGPUHour float64 // 0: no price given
	MaxNodes        int     // 0: no limit; a node is the devices of the innermost level
	MaxGPUs         int     // 0: no limit
	Pos             Pos
}

// WhatIf is a named change to the hardware: each study cell is priced on the hardware as given
// and on each what-if that applies to it.
type WhatIf struct {
	Name string
	// Hardware names the hardware it applies to (by its name); empty: all of them.
	Hardware []string
	// NVLinkDomain is the number of devices the innermost level joins (72 for an NVL72 rack);
	// 0 keeps the hardware's.
	NVLinkDomain int
	// InterNodeGbps is the next level's bandwidth per GPU per direction, in Gb/s (gigabits, the
	// way NICs are sold: 400 for NDR, 800 for XDR); 0 keeps the hardware's.
	InterNodeGbps float64
	// HBMGB is the device memory in GB (1e9 bytes, as the presets read datasheets); 0 keeps it.
	HBMGB float64
	Pos   Pos
}

// Keys of each mapping, in the order the documentation lists them.
var (
	fileKeys     = []string{"name", "description", "models", "hardware", "gpus", "global_batch", "seq", "tokens", "objectives", "fix", "what_if", "top", "sim", "sim_top", "currency", "measure", "fit_search"}
	modelKeys    = []string{"model", "global_batch", "seq"}
	hardwareKeys = []string{"hardware", "price_per_gpu_hour", "max_nodes", "max_gpus"}
	whatIfKeys   = []string{"name", "hardware", "nvlink_domain", "inter_node_gbps", "hbm_gb"}
	rangeKeys    = []string{"from", "to", "times", "step"}
	simModes     = []string{search.SimAuto, search.SimOn, search.SimOff}
	fixKeys      = append(strategies.DimNames(), strategies.OptionKeys...)
)

// whatIfName is what a what-if may be called: it becomes part of a hardware name and of file
// names in the report.
var whatIfName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,39}$`)

// Error is every problem of a study file, one per line, each with its place.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one problem at one place.
type Problem struct {
	Pos  Pos
	Path string // the key path, e.g. models[1].model
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String(e.File))
	}
	return b.String()
}

// String prints the problem as file:line:column: path: message.
func (p Problem) String(file string) string {
	at := file
	if p.Pos.Line > 0 {
		at = fmt.Sprintf("%s:%d:%d", file, p.Pos.Line, p.Pos.Column)
	}
	if p.Path != "" {
		return fmt.Sprintf("%s: %s: %s", at, p.Path, p.Msg)
	}
	return fmt.Sprintf("%s: %s", at, p.Msg)
}

// parser walks the YAML node tree, collecting problems.
type parser struct {
	probs []Problem
}

func posOf(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

func (p *parser) errorf(n *yaml.Node, path, format string, a ...any) {
	var pos Pos
	if n != nil {
		pos = posOf(n)
	}
	p.probs = append(p.probs, Problem{Pos: pos, Path: path, Msg: fmt.Sprintf(format, a...)})
}

// resolve follows aliases (a bounded number of times: an alias loop is a problem, not a hang).
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// kindName says what a node is, for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "empty (null)"
		case "!!bool":
			return "a boolean " + strconv.Quote(n.Value)
		case "!!int", "!!float":
			return "a number " + n.Value
		}
		return "the string " + strconv.Quote(n.Value)
	}
	return "an alias"
}

// fields checks that n is a mapping with only the given keys, each once, and returns the value of
// each key given, with the key's node for positions.
func (p *parser) fields(n *yaml.Node, path string, keys []string) (vals map[string]*yaml.Node, at map[string]*yaml.Node, ok bool) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, path, "must be a mapping with keys %s, not %s", strings.Join(keys, ", "), kindName(n))
		return nil, nil, false
	}
	vals, at = map[string]*yaml.Node{}, map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k == nil || v == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, path, "a key must be a name, not %s; valid keys: %s", kindName(k), strings.Join(keys, ", "))
			continue
		}
		name := k.Value
		switch {
		case !slices.Contains(keys, name):
			p.errorf(k, join(path, name), "unknown key %q%s; valid keys: %s", name, suggest.DidYouMean(name, keys), strings.Join(keys, ", "))
		case vals[name] != nil:
			p.errorf(k, join(path, name), "given twice (first at line %d); give it once", at[name].Line)
		default:
			vals[name], at[name] = v, k
		}
	}
	return vals, at, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// str reads a non-empty string scalar.
func (p *parser) str(n *yaml.Node, path, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!map" || n.Tag == "!!seq" {
		p.errorf(n, path, "must be %s, not %s", what, kindName(n))
		return "", false
	}
	s := strings.TrimSpace(n.Value)
	if s == "" {
		p.errorf(n, path, "is empty; give %s", what)
		return "", false
	}
	return s, true
}

// integer reads an integer scalar of at least lo.
func (p *parser) integer(n *yaml.Node, path string, lo int, what string) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errorf(n, path, "must be an integer (%s), not %s", what, kindName(n))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v > math.MaxInt32 {
		p.errorf(n, path, "%s is not an integer tpsim can use (%s)", n.Value, what)
		return 0, false
	}
	if int(v) < lo {
		p.errorf(n, path, "is %d; it must be at least %d (%s)", v, lo, what)
		return 0, false
	}
	return int(v), true
}

// number reads a finite positive number (integer or float scalar).
func (p *parser) number(n *yaml.Node, path, what string) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errorf(n, path, "must be a number (%s), not %s", what, kindName(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.errorf(n, path, "%s is not a finite number (%s)", n.Value, what)
		return 0, false
	}
	if v <= 0 {
		p.errorf(n, path, "is %s; it must be positive (%s)", n.Value, what)
		return 0, false
	}
	return v, true
}

// list returns the items of a sequence, or of a single scalar taken as a list of one when one is
// allowed.
func (p *parser) list(n *yaml.Node, path, what string, scalarOK bool) ([]*yaml.Node, bool) {
	switch {
	case n.Kind == yaml.SequenceNode:
		if len(n.Content) == 0 {
			p.errorf(n, path, "is an empty list; give at least one %s", what)
			return nil, false
		}
		out := make([]*yaml.Node, 0, len(n.Content))
		for _, c := range n.Content {
			if c = resolve(c); c != nil {
				out = append(out, c)
			}
		}
		return out, true
	case scalarOK && n.Kind == yaml.ScalarNode && n.Tag != "!!null":
		return []*yaml.Node{n}, true
	}
	p.errorf(n, path, "must be a list of %s, not %s", what, kindName(n))
	return nil, false
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// isPath reports whether a model or hardware spec names a file rather than a preset, by the rule
// model.Load and hardware.Load share: a path separator or a .json ending.
func isPath(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(strings.ToLower(s), ".json")
}

// Parse reads a study file (YAML, or JSON, which is YAML) and checks everything that can be
// checked without reading other files: keys, types, ranges, preset names, objectives, fixed
// options and what-ifs. name is the file name used in errors. The error is an *Error listing every
// problem with its line and column.
func Parse(data []byte, name string) (*File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: name, Problems: []Problem{{Msg: "not valid YAML or JSON: " + strings.TrimPrefix(err.Error(), "yaml: ")}}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: name, Problems: []Problem{{Msg: "the study file is empty; give at least models, hardware, gpus and tokens (see examples/studies)"}}}
	}
	p := &parser{}
	f := p.file(resolve(doc.Content[0]))
	if len(p.probs) > 0 {
		sort.SliceStable(p.probs, func(i, j int) bool {
			a, b := p.probs[i].Pos, p.probs[j].Pos
			return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
		})
		return nil, &Error{File: name, Problems: p.probs}
	}
	return f, nil
}

func (p *parser) file(root *yaml.Node) *File {
	f := &File{Top: DefaultTop, Sim: search.SimAuto, SimTop: DefaultSimTop, Objectives: []string{search.Time}, pos: map[string]Pos{}}
	if root == nil {
		p.errorf(nil, "", "the study file is empty")
		return f
	}
	vals, at, ok := p.fields(root, "", fileKeys)
	if !ok {
		return f
	}
	for k, n := range at {
		f.pos[k] = posOf(n)
	}
	for _, req := range []string{"models", "hardware", "gpus", "tokens"} {
		if vals[req] == nil {
			p.errorf(root, "", "missing key %q; a study needs models, hardware, gpus and tokens", req)
		}
	}
	if n := vals["name"]; n != nil {
		f.Name, _ = p.str(n, "name", "the study's name")
	}
	if n := vals["description"]; n != nil {
		f.Description, _ = p.str(n, "description", "a description")
	}
	if n := vals["models"]; n != nil {
		items, _ := p.list(n, "models", "model (a preset name, a config.json path, or a mapping with model, global_batch, seq)", false)
		for i, it := range items {
			if e, ok := p.model(it, index("models", i)); ok {
				f.Models = append(f.Models, e)
			}
		}
	}
	if n := vals["hardware"]; n != nil {
		items, _ := p.list(n, "hardware", "hardware (a preset name, host, a hardware JSON path, or a mapping with hardware, price_per_gpu_hour, max_nodes, max_gpus)", false)
		for i, it := range items {
			if e, ok := p.hardware(it, index("hardware", i)); ok {
				f.Hardware = append(f.Hardware, e)
			}
		}
	}
	if n := vals["gpus"]; n != nil {
		f.GPUs = p.gpus(n)
	}
	if n := vals["global_batch"]; n != nil {
		f.GlobalBatch, _ = p.integer(n, "global_batch", 1, "sequences per optimizer step")
	}
	if n := vals["seq"]; n != nil {
		f.Seq, _ = p.integer(n, "seq", 1, "tokens per sequence")
	}
	if n := vals["tokens"]; n != nil {
		f.Tokens, _ = p.number(n, "tokens", "the token budget of the run, e.g. 15e12")
	}
	if n := vals["objectives"]; n != nil {
		f.Objectives = nil
		items, _ := p.list(n, "objectives", "objective ("+strings.Join(search.Objectives, ", ")+")", true)
		for i, it := range items {
			s, ok := p.str(it, index("objectives", i), "an objective: "+strings.Join(search.Objectives, ", "))
			if !ok {
				continue
			}
			o, err := search.ParseObjective(s)
			switch {
			case err != nil:
				p.errorf(it, index("objectives", i), "unknown objective %q; valid: %s", s, strings.Join(search.Objectives, ", "))
			case slices.Contains(f.Objectives, o):
				p.errorf(it, index("objectives", i), "objective %q is listed twice", o)
			default:
				f.Objectives = append(f.Objectives, o)
			}
		}
	}
	if n := vals["fix"]; n != nil {
		f.Fix = p.fix(n)
	}
	if n := vals["what_if"]; n != nil {
		items, _ := p.list(n, "what_if", "what-if (a mapping with name and nvlink_domain, inter_node_gbps or hbm_gb)", false)
		seen := map[string]int{}
		for i, it := range items {
			w, ok := p.whatIf(it, index("what_if", i))
			if !ok {
				continue
			}
			if j, dup := seen[w.Name]; dup {
				p.errorf(it, index("what_if", i)+".name", "what-if %q is already the name of what_if[%d]; give each its own name", w.Name, j)
				continue
			}
			seen[w.Name] = i
			f.WhatIfs = append(f.WhatIfs, w)
		}
	}
	if n := vals["top"]; n != nil {
		f.Top, _ = p.integer(n, "top", 1, "candidates each plan keeps")
	}
	if n := vals["sim"]; n != nil {
		if s, ok := p.str(n, "sim", "auto, on or off"); ok {
			s = strings.ToLower(s)
			if !slices.Contains(simModes, s) {
				p.errorf(n, "sim", "unknown mode %q; valid: %s", s, strings.Join(simModes, ", "))
			}
			f.Sim = s
		}
	}
	if n := vals["sim_top"]; n != nil {
		f.SimTop, _ = p.integer(n, "sim_top", 1, "closed-form candidates the simulator re-ranks")
	}
	if n := vals["currency"]; n != nil {
		f.Currency, _ = p.str(n, "currency", "a currency code such as USD")
	}
	f.Measure = p.boolean(vals["measure"], "measure")
	f.FitSearch = p.boolean(vals["fit_search"], "fit_search")
	return f
}

// boolean reads true or false; a missing key is false.
func (p *parser) boolean(n *yaml.Node, path string) bool {
	if n == nil {
		return false
	}
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		p.errorf(n, path, "must be true or false, not %s", kindName(n))
		return false
	}
	return v
}

func (p *parser) model(n *yaml.Node, path string) (ModelEntry, bool) {
	e := ModelEntry{Pos: posOf(n)}
	spec := n
	if n.Kind == yaml.MappingNode {
		vals, _, _ := p.fields(n, path, modelKeys)
		spec = vals["model"]
		if spec == nil {
			p.errorf(n, path, "missing key \"model\": a preset name (%s) or a path to a config.json", strings.Join(model.PresetNames(), ", "))
			return e, false
		}
		if v := vals["global_batch"]; v != nil {
			e.GlobalBatch, _ = p.integer(v, path+".global_batch", 1, "sequences per optimizer step")
		}
		if v := vals["seq"]; v != nil {
			e.Seq, _ = p.integer(v, path+".seq", 1, "tokens per sequence")
		}
		path += ".model"
	}
	s, ok := p.str(spec, path, "a model: a preset name or a path to a config.json")
	if !ok {
		return e, false
	}
	if !isPath(s) && !slices.Contains(model.PresetNames(), s) {
		p.errorf(spec, path, "unknown model %q%s; valid names: %s (or a path to a config.json, relative to the study file)", s, suggest.DidYouMean(s, model.PresetNames()), strings.Join(model.PresetNames(), ", "))
		return e, false
	}
	e.Spec, e.Pos = s, posOf(spec)
	return e, true
}

// hardwareNames are the names a hardware entry may give without a path.
func hardwareNames() []string { return append(hardware.Names(), Host) }

func (p *parser) hardware(n *yaml.Node, path string) (HardwareEntry, bool) {
	e := HardwareEntry{Pos: posOf(n)}
	spec := n
	if n.Kind == yaml.MappingNode {
		vals, _, _ := p.fields(n, path, hardwareKeys)
		spec = vals["hardware"]
		if spec == nil {
			p.errorf(n, path, "missing key \"hardware\": a preset name (%s) or a path to a hardware JSON file", strings.Join(hardwareNames(), ", "))
			return e, false
		}
		if v := vals["price_per_gpu_hour"]; v != nil {
			e.PricePerGPUHour, _ = p.number(v, path+".price_per_gpu_hour", "the price of one GPU for one hour")
		}
		if v := vals["max_nodes"]; v != nil {
			e.MaxNodes, _ = p.integer(v, path+".max_nodes", 1, "nodes available")
		}
		if v := vals["max_gpus"]; v != nil {
			e.MaxGPUs, _ = p.integer(v, path+".max_gpus", 1, "GPUs available")
		}
		path += ".hardware"
	}
	s, ok := p.str(spec, path, "hardware: a preset name or a path to a hardware JSON file")
	if !ok {
		return e, false
	}
	if !isPath(s) && !slices.Contains(hardwareNames(), s) {
		p.errorf(spec, path, "unknown hardware %q%s; valid names: %s (or a path to a hardware JSON file, relative to the study file)", s, suggest.DidYouMean(s, hardwareNames()), strings.Join(hardwareNames(), ", "))
		return e, false
	}
	e.Spec, e.Pos = s, posOf(spec)
	return e, true
}

// gpus reads a list of GPU counts or a range {from, to, times | step}.
func (p *parser) gpus(n *yaml.Node) []int {
	var out []int
	switch n.Kind {
	case yaml.MappingNode:
		vals, _, ok := p.fields(n, "gpus", rangeKeys)
		if !ok {
			return nil
		}
		from, to := 0, 0
		okF, okT := false, false
		if vals["from"] == nil || vals["to"] == nil {
			p.errorf(n, "gpus", "a range needs from and to, and times (a geometric range: from, from*times, ...) or step (from, from+step, ...)")
			return nil
		}
		from, okF = p.integer(vals["from"], "gpus.from", 1, "the first GPU count")
		to, okT = p.integer(vals["to"], "gpus.to", 1, "the last GPU count")
		if !okF || !okT {
			return nil
		}
		if to < from {
			p.errorf(vals["to"], "gpus.to", "is %d, below from=%d: the range is empty; give to >= from", to, from)
			return nil
		}
		switch {
		case vals["times"] != nil && vals["step"] != nil:
			p.errorf(n, "gpus", "give times or step, not both")
		case vals["times"] != nil:
			t, ok := p.integer(vals["times"], "gpus.times", 2, "the factor between counts")
			if !ok {
				return nil
			}
			for g := from; g <= to; g *= t {
				out = append(out, g)
			}
		case vals["step"] != nil:
			s, ok := p.integer(vals["step"], "gpus.step", 1, "the difference between counts")
			if !ok {
				return nil
			}
			if (to-from)/s+1 > MaxGPUCounts {
				p.errorf(n, "gpus", "the range gives %d counts, more than %d; use a larger step or times", (to-from)/s+1, MaxGPUCounts)
				return nil
			}
			for g := from; g <= to; g += s {
				out = append(out, g)
			}
		default:
			p.errorf(n, "gpus", "a range needs times (a geometric range) or step (an arithmetic one)")
		}
	default:
		items, _ := p.list(n, "gpus", "GPU count", true)
		seen := map[int]bool{}
		for i, it := range items {
			g, ok := p.integer(it, index("gpus", i), 1, "a number of GPUs")
			if !ok {
				continue
			}
			if seen[g] {
				p.errorf(it, index("gpus", i), "%d is listed twice", g)
				continue
			}
			seen[g] = true
			out = append(out, g)
		}
		if len(out) > MaxGPUCounts {
			p.errorf(n, "gpus", "%d counts, more than %d", len(out), MaxGPUCounts)
		}
	}
	slices.Sort(out)
	return out
}

// fix reads the fixed options: a mapping (attn: flash) or a string in --fix form.
func (p *parser) fix(n *yaml.Node) string {
	var parts []string
	switch n.Kind {
	case yaml.MappingNode:
		vals, at, ok := p.fields(n, "fix", fixKeys)
		if !ok {
			return ""
		}
		// In the order written, so the string reads like the file.
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := at[keys[i]], at[keys[j]]
			return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
		})
		for _, k := range keys {
			v := vals[k]
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				p.errorf(v, "fix."+k, "must be a value such as flash, 8 or on, not %s", kindName(v))
				continue
			}
			val := v.Value
			if v.Tag == "!!bool" { // YAML reads on/off as strings, but true/false as booleans
				val = map[bool]string{true: "on", false: "off"}[strings.EqualFold(val, "true")]
			}
			parts = append(parts, k+"="+val)
		}
	case yaml.ScalarNode:
		s, ok := p.str(n, "fix", "fixed strategy options, e.g. {attn: flash}")
		if !ok {
			return ""
		}
		parts = []string{s}
	default:
		p.errorf(n, "fix", "must be a mapping of strategy options (e.g. attn: flash, precision: mixed), not %s", kindName(n))
		return ""
	}
	s := strings.Join(parts, ",")
	if _, err := strategies.ParseFix(s); err != nil {
		p.errorf(n, "fix", "%v", err)
		return ""
	}
	return s
}

func (p *parser) whatIf(n *yaml.Node, path string) (WhatIf, bool) {
	w := WhatIf{Pos: posOf(n)}
	vals, _, ok := p.fields(n, path, whatIfKeys)
	if !ok {
		return w, false
	}
	good := true
	if v := vals["name"]; v == nil {
		p.errorf(n, path, "missing key \"name\"; name the what-if (lower-case letters, digits, . _ -), e.g. nvl72")
		good = false
	} else if s, ok := p.str(v, path+".name", "a name such as nvl72"); ok {
		if !whatIfName.MatchString(s) {
			p.errorf(v, path+".name", "%q is not a valid name; use 1 to 40 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit", s)
			good = false
		}
		w.Name = s
	} else {
		good = false
	}
	if v := vals["hardware"]; v != nil {
		items, _ := p.list(v, path+".hardware", "hardware name", true)
		for i, it := range items {
			if s, ok := p.str(it, index(path+".hardware", i), "a hardware name of the study"); ok {
				w.Hardware = append(w.Hardware, s)
			}
		}
	}
	changes := 0
	if v := vals["nvlink_domain"]; v != nil {
		w.NVLinkDomain, ok = p.integer(v, path+".nvlink_domain", 2, "devices joined by the innermost level, e.g. 72")
		good = good && ok
		changes++
	}
	if v := vals["inter_node_gbps"]; v != nil {
		w.InterNodeGbps, ok = p.number(v, path+".inter_node_gbps", "bandwidth between nodes per GPU per direction in Gb/s, e.g. 800")
		good = good && ok
		changes++
	}
	if v := vals["hbm_gb"]; v != nil {
		w.HBMGB, ok = p.number(v, path+".hbm_gb", "device memory in GB, e.g. 141")
		good = good && ok
		changes++
	}
	if changes == 0 {
		p.errorf(n, path, "changes nothing; give nvlink_domain, inter_node_gbps or hbm_gb")
		good = false
	}
	return w, good
}

// AsError returns err as an *Error when it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
