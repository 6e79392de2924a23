package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tpsim/tpsim"

// layer is one line of the architecture's import table (README.md's "Architecture" section, or
// docs/architecture.md where it has moved; "A <- B" means B may import A): the packages it may
// import directly; what those may import, it may too.
type layer struct {
	pkg  string   // module-relative path; its subpackages belong to it unless listed themselves
	deps []string // layers it may import ("*": every package of the module)
	rule string   // the table's line, quoted in a failure
}

// layers is the import table. reports is a library of output types and figures: it
// imports units alone, and the packages that write results (search's plan.csv and Pareto figure,
// validate's report, compare's, study's) import it.
var layers = []layer{
	{"units", nil, "units: imports nothing of tpsim"},
	{"model", []string{"units"}, "units <- model, hardware"},
	{"hardware", []string{"units"}, "units <- model, hardware"},
	{"strategies", []string{"model", "hardware"}, "model <- strategies"},
	{"program", []string{"strategies"}, "strategies <- program"},
	{"costmodel", []string{"program"}, "program <- costmodel"},
	{"sim", []string{"program"}, "program <- sim"},
	{"exec", []string{"program"}, "program <- exec"},
	{"reports", []string{"units"}, "units <- reports"},
	{"goodput", []string{"units", "reports"}, "units, reports <- goodput"},
	{"search", []string{"costmodel", "sim", "reports"}, "costmodel, sim <- search (reports: its table and figure)"},
	{"validate", []string{"costmodel", "search", "reports"}, "costmodel, search <- validate (reports: its report)"},
	{"compare", []string{"costmodel", "sim", "exec", "reports"}, "costmodel, sim, exec <- compare (reports: its report)"},
	{"study", []string{"search", "reports"}, "search, reports <- study"},
	{"export", []string{"strategies"}, "strategies <- export (model names, no prices)"},
	{"internal/testmodels", []string{"model"}, "model <- internal/testmodels (test fixtures)"},
	{"cmd/tpsim/internal/cli", []string{"model", "hardware", "strategies"}, "model, hardware, strategies <- cmd/tpsim/internal/cli"},
	{"cmd/tpsim", []string{"*"}, "everything <- cmd/tpsim"},
}

// testOnly are the edges allowed to tests alone, each with its reason.
var testOnly = []struct{ from, to, why string }{
	{"sim", "costmodel", "sim's tests check the simulator against the closed form it must agree with"},
	{"*", "internal/testmodels", "test fixtures (models built in code), for the tests of any package that may import model"},
}

// anywhere are the helpers every package may import; they import nothing of tpsim themselves.
var anywhere = []string{"internal/atomicfile", "internal/jsonkeys", "internal/suggest"}

// forbidden are the rules that carry the tool's honesty (the architecture's), checked by
// name so that a failure says which one broke, whatever the table says.
var forbidden = []struct{ from, to, rule string }{
	{"exec", "costmodel", "exec never imports costmodel or sim: a measurement cannot borrow a prediction"},
	{"exec", "sim", "exec never imports costmodel or sim: a measurement cannot borrow a prediction"},
}

// layerOf is the layer a module package belongs to: the longest table entry that is the package
// or one of its parents ("exec/comm" is exec's), or "" for none.
func layerOf(pkg string) string {
	best := ""
	for _, l := range append(layersNames(), anywhere...) {
		if (pkg == l || strings.HasPrefix(pkg, l+"/")) && len(l) > len(best) {
			best = l
		}
	}
	return best
}

func layersNames() []string {
	var out []string
	for _, l := range layers {
		out = append(out, l.pkg)
	}
	return out
}

// allowed returns the layers layer may import: its deps and, recursively, theirs.
func allowed(name string) map[string]bool {
	out := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, l := range layers {
			if l.pkg != n {
				continue
			}
			for _, d := range l.deps {
				if !out[d] {
					out[d] = true
					walk(d)
				}
			}
		}
	}
	walk(name)
	return out
}

// testEdge says whether from's tests may import to beyond the table (testOnly).
func testEdge(from, to string) bool {
	for _, e := range testOnly {
		if (e.from == "*" && allowed(layerOf(from))["model"] || e.from == layerOf(from)) && e.to == layerOf(to) {
			return true
		}
	}
	return false
}

// importViolations checks every import edge (from -> to, module-relative) and returns one message
// per edge the table or the forbidden rules do not allow; tests holds the edges that only tests
// make, which testOnly may allow.
func importViolations(edges, tests map[string][]string) []string {
	var out []string
	rules := map[string]string{}
	for _, l := range layers {
		rules[l.pkg] = l.rule
	}
	froms := make([]string, 0, len(edges))
	for f := range edges {
		froms = append(froms, f)
	}
	sort.Strings(froms)
	for _, from := range froms {
		lf := layerOf(from)
		if lf == "" {
			out = append(out, fmt.Sprintf("%s is in no layer of the import table; add it to the architecture's table and to layers in this test", from))
			continue
		}
		ok := allowed(lf)
		for _, to := range slices.Concat(edges[from], tests[from]) {
			lt := layerOf(to)
			for _, f := range forbidden {
				if layerOf(f.from) == lf && (to == f.to || strings.HasPrefix(to, f.to+"/")) {
					out = append(out, fmt.Sprintf("%s imports %s: forbidden (rule %q)", from, to, f.rule))
				}
			}
			switch {
			case lt == "":
				out = append(out, fmt.Sprintf("%s imports %s, which is in no layer of the import table", from, to))
			case lt == lf, slices.Contains(anywhere, lt), ok["*"], ok[lt]:
				// Same layer (a package and its subpackages), a helper, or below.
			case slices.Contains(tests[from], to) && testEdge(from, to):
			default:
				out = append(out, fmt.Sprintf("%s imports %s: upward or sideways, not allowed by the rule %q (%s may import %s)",
					from, to, rules[lf], lf, strings.Join(sortedKeys(ok), ", ")))
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"nothing of tpsim"}
	}
	return out
}

// moduleImports lists every package of the module with its imports of the module's packages, and
// separately those only its tests make, module-relative, from `go list -json`.
func moduleImports(t *testing.T) (edges, tests map[string][]string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	edges, tests = map[string][]string{}, map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from := strings.TrimPrefix(p.ImportPath, module+"/")
		seen := map[string]bool{from: true}
		edges[from] = nil
		for i, list := range [][]string{p.Imports, slices.Concat(p.TestImports, p.XTestImports)} {
			for _, imp := range list {
				to, ok := strings.CutPrefix(imp, module+"/")
				switch {
				case !ok || seen[to]:
				case i == 0:
					edges[from] = append(edges[from], to)
				default:
					tests[from] = append(tests[from], to)
				}
				seen[to] = seen[to] || ok
			}
		}
	}
	return edges, tests
}

// TestImportRules holds the architecture's import table: nothing imports upward or sideways, and
// exec never reaches the cost model or the simulator.
func TestImportRules(t *testing.T) {
	edges, tests := moduleImports(t)
	if len(edges) < len(layers) {
		t.Fatalf("go list found %d packages; want at least the table's %d", len(edges), len(layers))
	}
	for _, v := range importViolations(edges, tests) {
		t.Error(v)
	}
}

// The checker itself: an upward import, a sideways one, a forbidden one and a package outside
// the table each give a message naming both packages and the rule; the allowed edges none.
func TestImportViolations(t *testing.T) {
	for _, c := range []struct {
		edges, tests map[string][]string
		want         []string // substrings of the one message; none: allowed
	}{
		{map[string][]string{"costmodel": {"program", "hardware", "units", "internal/suggest"}}, nil, nil},
		{map[string][]string{"exec/comm": {"exec/kernels"}, "cmd/tpsim": {"compare", "cmd/tpsim/internal/cli"}}, nil, nil},
		{map[string][]string{"hardware": {"exec/calibrate"}}, nil, []string{"hardware imports exec/calibrate", `"units <- model, hardware"`, "hardware may import units"}},
		{map[string][]string{"sim": {"costmodel"}}, nil, []string{"sim imports costmodel", `"program <- sim"`}},
		{map[string][]string{"exec/calibrate": {"costmodel"}}, nil, []string{"exec/calibrate imports costmodel: forbidden", "a measurement cannot borrow a prediction"}},
		{map[string][]string{"cmd/tpsim/internal/cli": {"compare"}}, nil, []string{"cmd/tpsim/internal/cli imports compare"}},
		{map[string][]string{"newpkg": {"units"}}, nil, []string{"newpkg is in no layer"}},
		{map[string][]string{"sim": nil, "strategies": nil}, map[string][]string{"sim": {"costmodel"}, "strategies": {"internal/testmodels"}}, nil},
		{map[string][]string{"costmodel": nil}, map[string][]string{"costmodel": {"sim"}}, []string{"costmodel imports sim", `"program <- costmodel"`}},
		{map[string][]string{"exec": nil}, map[string][]string{"exec": {"costmodel"}}, []string{"exec imports costmodel: forbidden"}},
	} {
		got := importViolations(c.edges, c.tests)
		if len(c.want) == 0 {
			if len(got) > 0 {
				t.Errorf("%v: %q, want no violation", c.edges, got)
			}
			continue
		}
		if len(got) < 1 {
			t.Errorf("%v: no violation, want one with %q", c.edges, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got[0], w) {
				t.Errorf("%v: %q, want it to contain %q", c.edges, got[0], w)
			}
		}
	}
}
