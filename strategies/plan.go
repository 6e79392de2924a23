package strategies

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/model"
)

// Style is a tensor-parallel style, named as in torch.distributed.tensor.parallel.
type Style string

// Styles.
const (
	Colwise         Style = "colwise"          // ColwiseParallel
	Rowwise         Style = "rowwise"          // RowwiseParallel
	SequenceStyle   Style = "sequence"         // SequenceParallel
	NoParallel      Style = "noparallel"       // replicate the module, input made Replicate
	InputReplicate  Style = "input_replicate"  // PrepareModuleInput(desired_input_layouts=Replicate())
	InputShard      Style = "input_shard"      // PrepareModuleInput(desired_input_layouts=Shard(-1))
	OutputReplicate Style = "output_replicate" // PrepareModuleOutput(desired_output_layouts=Replicate())
	OutputShard     Style = "output_shard"     // PrepareModuleOutput(desired_output_layouts=Shard(-1))
)

// Styles lists every style name a plan may use.
var Styles = []Style{Colwise, Rowwise, SequenceStyle, NoParallel, InputReplicate, InputShard, OutputReplicate, OutputShard}

var styleAliases = map[string]Style{
	"colwise": Colwise, "colwiseparallel": Colwise, "rowwise": Rowwise, "rowwiseparallel": Rowwise,
	"sequence": SequenceStyle, "sequenceparallel": SequenceStyle, "noparallel": NoParallel, "replicate": NoParallel,
	"input_replicate": InputReplicate, "input_shard": InputShard, "output_replicate": OutputReplicate, "output_shard": OutputShard,
}

// ParseStyle reads a style name (case-insensitive; PyTorch class names are accepted too).
func ParseStyle(s string) (Style, error) {
	if st, ok := styleAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
		return st, nil
	}
	names := make([]string, len(Styles))
	for i, x := range Styles {
		names[i] = string(x)
	}
	if strings.ContainsAny(s, "\"\\{}") {
		// Not a misspelt name (JSON, or quotes the shell kept): a "did you mean" would only
		// confuse, and the quoted name is hard to read back.
		return "", fmt.Errorf("strategies: %s is not a style name; valid styles: %s", strconv.Quote(s), strings.Join(names, ", "))
	}
	return "", fmt.Errorf("strategies: unknown style %q%s; valid styles: %s", s, suggest.DidYouMean(s, names), strings.Join(names, ", "))
}

// Rule maps a module pattern to a style. In a pattern, "*" matches one name at one level
// ("layers.*.mlp.fc1"), as PyTorch's parallelize_module does.
type Rule struct {
	Pattern string
	Style   Style
}

// Plan is a tensor-parallel plan: either one style for the module it is applied to (the root, as
// parallelize_module(model, mesh, ColwiseParallel()) does), or an ordered list of rules.
type Plan struct {
	// Name is "megatron" for the default plans, "" otherwise.
	Name  string
	Whole Style
	Rules []Rule
}

func (p *Plan) String() string {
	if p == nil {
		return "none"
	}
	if p.Name != "" {
		return p.Name
	}
	if p.Whole != "" {
		return string(p.Whole)
	}
	parts := make([]string, len(p.Rules))
	for i, r := range p.Rules {
		parts[i] = r.Pattern + "=" + string(r.Style)
	}
	return strings.Join(parts, ",")
}

// ParsePlan reads a plan: a style name ("colwise"), "megatron" (the model family's default plan),
// an inline map ("0=colwise,2=rowwise"), an inline JSON object ({"0": "colwise"}), or the path of
// a JSON file holding such an object of pattern -> style ({"layers.*.mlp.fc1": "colwise"}).
func ParsePlan(s string) (*Plan, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("strategies: empty plan; give a style name, \"megatron\", a map like \"0=colwise,2=rowwise\", or a JSON file")
	}
	if strings.EqualFold(s, "megatron") {
		return &Plan{Name: "megatron"}, nil
	}
	if strings.HasPrefix(s, "{") {
		// What a plan file holds, given inline.
		return ParsePlanJSON([]byte(s))
	}
	if strings.HasSuffix(s, ".json") {
		data, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("strategies: reading plan file: %v", err)
		}
		return ParsePlanJSON(data)
	}
	if !strings.Contains(s, "=") {
		st, err := ParseStyle(s)
		if err != nil {
			return nil, fmt.Errorf("%v; or \"megatron\", a map like \"0=colwise,2=rowwise\", or a JSON file", err)
		}
		return &Plan{Whole: st}, nil
	}
	p := &Plan{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("strategies: plan entry %q is not module=style; write a plan as \"0=colwise,2=rowwise\"", part)
		}
		st, err := ParseStyle(v)
		if err != nil {
			return nil, err
		}
		if err := p.add(Rule{k, st}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// add appends r, refusing a pattern the plan already has: with two styles for one module the
// last one would silently win.
func (p *Plan) add(r Rule) error {
	for _, o := range p.Rules {
		if o.Pattern == r.Pattern {
			return fmt.Errorf("strategies: plan key %q appears twice (%s and %s); give each module one style", r.Pattern, o.Style, r.Style)
		}
	}
	p.Rules = append(p.Rules, r)
	return nil
}

// ParsePlanJSON reads a JSON object of module pattern -> style. Rules keep the file's order.
// Errors say where, as line and column (in characters) of the offending byte.
func ParsePlanJSON(data []byte) (*Plan, error) {
	// Syntax first, on the whole input: json.Unmarshal's offsets count from the start of the
	// data, a Decoder's from the value it is reading.
	var whole any
	if err := json.Unmarshal(data, &whole); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// The scanner has read the offending byte: it is at Offset-1.
			line, col := position(data, int(se.Offset)-1)
			return nil, fmt.Errorf("strategies: plan JSON at line %d, column %d: %v", line, col, err)
		}
		return nil, fmt.Errorf("strategies: plan JSON: %v", err)
	}
	if _, ok := whole.(map[string]any); !ok {
		return nil, fmt.Errorf("strategies: a plan file must hold a JSON object of module pattern -> style, e.g. {\"0\": \"colwise\"}")
	}
	// Then the rules in the file's order, with a decoder (the input is valid JSON by now).
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("strategies: plan JSON: %v", err)
	}
	p := &Plan{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("strategies: plan JSON: %v", err)
		}
		at := valueStart(data, int(dec.InputOffset()))
		var v string
		if err := dec.Decode(&v); err != nil {
			line, col := position(data, at)
			return nil, fmt.Errorf("strategies: plan JSON at line %d, column %d: the style of %q must be a string such as \"colwise\"", line, col, kt)
		}
		st, err := ParseStyle(v)
		if err != nil {
			return nil, err
		}
		if err := p.add(Rule{kt.(string), st}); err != nil {
			return nil, err
		}
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("strategies: the plan file has no entries")
	}
	return p, nil
}

// valueStart skips the spaces and the colon after an object key at data[i:].
func valueStart(data []byte, i int) int {
	for i < len(data) && strings.IndexByte(" \t\r\n:", data[i]) >= 0 {
		i++
	}
	return i
}

// position returns the 1-based line and column, in characters, of the byte at index i of data.
func position(data []byte, i int) (line, col int) {
	i = max(0, min(i, len(data)))
	before := data[:i]
	start := bytes.LastIndexByte(before, '\n') + 1
	return 1 + bytes.Count(before, []byte{'\n'}), 1 + utf8.RuneCount(before[start:])
}

// MegatronPlan returns the plan of Shoeybi et al. 2019 (Megatron-LM) for m: attention qkv and MLP
// up-projections column-parallel, attention output and MLP down-projections row-parallel, the token
// embedding vocabulary-parallel (rowwise) and the output head column-parallel over the vocabulary;
// with sequence parallel (Korthikanti et al. 2022) the norms are SequenceParallel. For an MLP
// (Sequential of Linear layers) Linear layers alternate colwise, rowwise.
func MegatronPlan(m *model.Model, sp bool) *Plan {
	p := &Plan{Name: "megatron"}
	if m.Transformer == nil {
		col := true
		for _, c := range m.Root.Children {
			if c.Kind == model.KindLinear {
				st := Rowwise
				if col {
					st = Colwise
				}
				p.Rules = append(p.Rules, Rule{c.Name, st})
				col = !col
			}
		}
		return p
	}
	add := func(pat string, st Style) { p.Rules = append(p.Rules, Rule{pat, st}) }
	add("embed", Rowwise)
	add("layers.*.attn.qkv", Colwise)
	add("layers.*.attn.proj", Rowwise)
	if m.Transformer.Gated {
		add("layers.*.mlp.gate", Colwise)
		add("layers.*.mlp.up", Colwise)
		add("layers.*.mlp.down", Rowwise)
	} else {
		add("layers.*.mlp.fc1", Colwise)
		add("layers.*.mlp.fc2", Rowwise)
	}
	if sp {
		add("layers.*.norm1", SequenceStyle)
		add("layers.*.norm2", SequenceStyle)
		add("norm", SequenceStyle)
	}
	if m.Find("head") != nil {
		add("head", Colwise)
	}
	return p
}

// Resolve maps every module of m the plan names to its style. It returns an error for a pattern
// that matches no module (listing the names that exist) and for a style on a module kind it
// cannot shard.
func (p *Plan) Resolve(m *model.Model, sp bool) (map[string]Style, error) {
	if p == nil {
		return map[string]Style{}, nil
	}
	if p.Name == "megatron" && len(p.Rules) == 0 {
		p = MegatronPlan(m, sp)
	}
	out := map[string]Style{}
	all := m.Root.Walk()
	if p.Whole != "" {
		if err := checkStyle(m, "", m.Root, p.Whole); err != nil {
			return nil, err
		}
		out[""] = p.Whole
		return out, nil
	}
	dots := make([]int, len(all)) // levels of each module's name, counted once
	for i, x := range all {
		dots[i] = strings.Count(x.FQN, ".")
	}
	for _, r := range p.Rules {
		n := 0
		pd := strings.Count(r.Pattern, ".")
		for i, x := range all {
			if x.FQN == "" || dots[i] != pd || !matchLevels(r.Pattern, x.FQN) {
				continue
			}
			if err := checkStyle(m, x.FQN, x.Module, r.Style); err != nil {
				return nil, err
			}
			out[x.FQN] = r.Style
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("strategies: plan key %q matches no module of %q; modules: %s", r.Pattern, m.Name, moduleNames(m))
		}
	}
	return out, nil
}

// matchLevels reports whether pattern matches fqn, a name of as many levels, level by level,
// "*" matching any one name.
func matchLevels(pattern, fqn string) bool {
	for pattern != "" || fqn != "" {
		p, prest, _ := strings.Cut(pattern, ".")
		n, nrest, _ := strings.Cut(fqn, ".")
		if p != n {
			if !strings.ContainsAny(p, `*?[\`) {
				return false
			}
			if ok, _ := path.Match(p, n); !ok {
				return false
			}
		}
		pattern, fqn = prest, nrest
	}
	return true
}

// moduleNames lists the model's module names, collapsing repeated transformer layers to "layers.N".
func moduleNames(m *model.Model) string {
	seen := map[string]bool{}
	var names []string
	for _, x := range m.Root.Walk() {
		if x.FQN == "" {
			continue
		}
		parts := strings.Split(x.FQN, ".")
		if len(parts) >= 2 && parts[0] == "layers" {
			parts[1] = "N"
		}
		n := strings.Join(parts, ".")
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) > 40 {
		names = append(names[:40], "...")
	}
	return strings.Join(names, ", ")
}

func linearNames(m *model.Model) []string {
	var out []string
	for _, x := range m.Root.Walk() {
		if x.Module.Kind == model.KindLinear || x.Module.Kind == model.KindEmbedding {
			out = append(out, x.FQN)
		}
	}
	sort.Strings(out)
	return out
}

func checkStyle(m *model.Model, fqn string, x *model.Module, st Style) error {
	name := func() string {
		if fqn == "" {
			return "the root " + string(x.Kind)
		}
		return fmt.Sprintf("module %q (%s)", fqn, x.Kind)
	}
	switch st {
	case Colwise, Rowwise:
		if x.Kind != model.KindLinear && x.Kind != model.KindEmbedding {
			lin := linearNames(m)
			example := ""
			if len(lin) >= 2 {
				example = fmt.Sprintf("; a map plan works, e.g. \"%s=colwise,%s=rowwise\"", lin[0], lin[len(lin)-1])
			}
			return fmt.Errorf("strategies: %s cannot be %s: ColwiseParallel and RowwiseParallel apply to Linear and Embedding modules; Linear/Embedding modules: %s%s",
				name(), st, strings.Join(shorten(lin), ", "), example)
		}
	case SequenceStyle:
		if x.Kind != model.KindLayerNorm && x.Kind != model.KindRMSNorm {
			return fmt.Errorf("strategies: %s cannot be sequence: SequenceParallel applies to LayerNorm and RMSNorm modules", name())
		}
	}
	return nil
}

func shorten(names []string) []string {
	if len(names) > 12 {
		return append(names[:12:12], fmt.Sprintf("... (%d in all)", len(names)))
	}
	return names
}
