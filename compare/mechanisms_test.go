package compare

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

func TestGrid(t *testing.T) {
	pts, skipped, err := Grid(DefaultFamilies, []int{1, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, p.Strategy+" "+p.Mesh.String())
	}
	// The mechanisms (pp, gpipe, zero3) on the smallest of the meshes they fit, 2; recompute
	// and single on the 1.
	want := []string{"single dp=1", "dp dp=2", "dp dp=4", "tp tp=2", "tp tp=4", "hybrid dp=2,tp=2", "pp pp=2", "gpipe pp=2", "zero3 dp=2", "recompute dp=1"}
	if !slices.Equal(got, want) {
		t.Errorf("default grid\n%v\nwant\n%v", got, want)
	}
	if len(skipped) != 2 || skipped[0].Strategy != "hybrid" {
		t.Errorf("skipped %+v, want hybrid on 1 and 2", skipped)
	}
	// Asked alone on 4 ranks, a mechanism runs there.
	pts, _, _ = Grid([]string{"zero1", "ppdp"}, []int{4, 8})
	if len(pts) != 2 || pts[0].Mesh.String() != "dp=4" || pts[1].Mesh.String() != "pp=2,dp=2" {
		t.Errorf("zero1, ppdp on 4, 8: %+v", pts)
	}
	if _, _, err := Grid([]string{"zero"}, []int{2}); err == nil || !strings.Contains(err.Error(), "zero3") {
		t.Errorf("unknown family: %v", err)
	}
	// A pipeline runs 2 microbatches per stage: gpt-tiny's batch 8 on pp=2 is 4 of 2 samples; a
	// batch that does not split is refused with the batch that would.
	pp, _ := FamilyNamed("pp")
	st := strategies.Default(strategies.Mesh{PP: 2, DP: 1, CP: 1, TP: 1})
	st.GBS = 8
	if err := (GridPoint{family: pp}).Apply(&st); err != nil || st.MBS != 2 || st.Microbatches() != 4 || st.Schedule != strategies.Schedule1F1B {
		t.Errorf("pp=2 on batch 8: %v, mbs %d, schedule %s", err, st.MBS, st.Schedule)
	}
	st.GBS = 6
	if err := (GridPoint{family: pp}).Apply(&st); err == nil || !strings.Contains(err.Error(), "multiple of 4") {
		t.Errorf("pp=2 on batch 6: %v", err)
	}
}

// gptPoint is gpt-tiny on st (fp32, SGD, eager attention, global batch 8), 2 steps.
func gptPoint(t *testing.T, name, strategy string, apply func(*strategies.Strategy)) Point {
	t.Helper()
	m, err := model.Load("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	st, err := strategies.Parse(strategy)
	if err != nil {
		t.Fatal(err)
	}
	st.Precision, st.Optimizer, st.Attention = strategies.PrecisionFP32, strategies.OptimizerSGD, strategies.AttentionEager
	st = st.Resolve(m)
	st.MBS = st.GBS / st.Mesh.DP
	if apply != nil {
		apply(&st)
	}
	cfg := exec.Config{Model: m, Strategy: st, Steps: 2, Seed: 1}
	prog, err := exec.Lowered(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Point{Strategy: name, Mesh: st.Mesh, Config: cfg, Program: prog}
}

func familyApply(t *testing.T, name string) func(*strategies.Strategy) {
	f, ok := FamilyNamed(name)
	if !ok {
		t.Fatal(name)
	}
	return func(st *strategies.Strategy) {
		if err := (GridPoint{family: f}).Apply(st); err != nil {
			t.Fatal(err)
		}
	}
}

// Pipeline, ZeRO-3 and recompute rows, predicted, simulated and measured: every event of every
// rank is matched to its Program op, so each row has the measured time of its mechanism; bytes
// are exact on every mesh dimension; the parts of the measured step add up to it.
func TestMechanismRows(t *testing.T) {
	hw := hostFixture(t)
	pts := []Point{
		gptPoint(t, "pp", "pp=2", familyApply(t, "pp")),
		gptPoint(t, "gpipe", "pp=2", familyApply(t, "gpipe")),
		gptPoint(t, "zero3", "dp=2", familyApply(t, "zero3")),
		gptPoint(t, "recompute", "dp=1", familyApply(t, "recompute")),
		gptPoint(t, "ppdp", "pp=2,dp=2", familyApply(t, "ppdp")),
	}
	res := &Results{Profile: hw, Load: NewLoad(-1)}
	tl, err := Run(t.Context(), res, pts, Options{Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The timeline is the first pipeline row's, with its receives drawn as the bubble.
	if tl == nil || !strings.Contains(tl.Titles[1], "measured pp pp=2") {
		t.Fatalf("timeline %+v, want pp pp=2's", tl)
	}
	bubbles := 0
	for _, sp := range tl.Spans[1] {
		if sp.Cat == PhaseBubble {
			bubbles++
		}
	}
	if bubbles == 0 {
		t.Error("the measured pipeline timeline has no bubble spans")
	}
	// The mechanisms figure is among the figures (drawn here alone: drawing all of them is
	// slow under -race; TestCompareWritesEverything writes them).
	var mech *figureSpec
	for _, f := range figureSpecs("gpt-tiny", ReportRows(res.Rows)) {
		if f.base == "mechanisms" {
			mech = &f
		}
	}
	if mech == nil {
		t.Fatal("no mechanisms figure")
	}
	if _, err := mech.make(); err != nil {
		t.Fatal(err)
	}
	if specs := figureSpecs("x", ReportRows(res.Rows[:0])); len(specs) != 5 {
		t.Errorf("rows without mechanisms: %d figures, want the five", len(specs))
	}
	want := map[string]string{"pp": PhaseBubble, "gpipe": PhaseBubble, "zero3": PhaseGather, "recompute": PhaseRecompute, "ppdp": PhaseBubble}
	for _, r := range res.Rows {
		ph := want[r.Strategy]
		if got := phasesOf(r.Predicted, r.Measured); !slices.Equal(got, []string{ph}) {
			t.Errorf("%s: mechanisms %v, want [%s]", r.Label(), got, ph)
		}
		p, okp := r.Predicted.Phases[ph]
		m, okm := r.Measured.Phases[ph]
		if !okp || !okm || !(p > 0) || !(m > 0) {
			t.Errorf("%s: %s predicted %g (%v), measured %g (%v); want both > 0", r.Label(), ph, p, okp, m, okm)
		}
		t.Logf("%s: %s predicted %.3g ms, measured %.3g ms", r.Label(), ph, 1e3*p, 1e3*m)
		for d, v := range r.Errors.CommBytesAbs {
			if v != 0 {
				t.Errorf("%s: %s bytes off by %g", r.Label(), d, v)
			}
		}
		mt := r.Measured.Time
		if sum := mt.Compute + mt.CommExposed + mt.Bubble + mt.Optimizer; math.Abs(sum-mt.Step) > 1e-9*mt.Step {
			t.Errorf("%s: measured parts sum to %g, step %g", r.Label(), sum, mt.Step)
		}
		if ph == PhaseGather {
			// The simulator lays out the same gathers at the same price.
			if sg := r.Simulated.Phases[PhaseGather]; math.Abs(sg-p) > 1e-9*p {
				t.Errorf("%s: simulated gathers %g s, predicted %g s", r.Label(), sg, p)
			}
		}
		if ph == PhaseBubble {
			if r.Measured.Time.Bubble != m || r.Simulated.Phases[PhaseBubble] <= 0 || p != r.Predicted.Time.Bubble {
				t.Errorf("%s: bubble %g in the breakdown, %g in the phases; simulated %v; predicted %g against the step's %g",
					r.Label(), r.Measured.Time.Bubble, m, r.Simulated.Phases, p, r.Predicted.Time.Bubble)
			}
		}
		if r.MaxRelDiff > 1e-5 {
			t.Errorf("%s: max rel diff %g", r.Label(), r.MaxRelDiff)
		}
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, res, "dir"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pipeline bubble", "ZeRO all-gathers", "recompute"} {
		if !strings.Contains(tab.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, tab.String())
		}
	}
}

// The predicted recompute time is the cost model's price of the replayed forward: the step
// predicted with full recompute exceeds the step without it by exactly that (nothing else in the
// step changes on one device).
func TestPredictedRecomputeIsTheExtraForward(t *testing.T) {
	hw := hostFixture(t)
	with := gptPoint(t, "recompute", "dp=1", familyApply(t, "recompute"))
	without := gptPoint(t, "single", "dp=1", nil)
	pw, err := costmodel.Predict(with.Program, hw)
	if err != nil {
		t.Fatal(err)
	}
	po, err := costmodel.Predict(without.Program, hw)
	if err != nil {
		t.Fatal(err)
	}
	c, err := costmodel.NewCoster(with.Program, hw)
	if err != nil {
		t.Fatal(err)
	}
	ph := PredictedPhases(with.Program, c, pw)
	extra := float64(pw.Time.Step - po.Time.Step)
	if !(ph[PhaseRecompute] > 0) || math.Abs(ph[PhaseRecompute]-extra) > 1e-9*extra {
		t.Errorf("recompute priced %g s, the step grows by %g s", ph[PhaseRecompute], extra)
	}
	if len(ph) != 1 {
		t.Errorf("phases %v, want recompute alone", ph)
	}
}

// Events that are not the Program's ops (another strategy's Program) are not matched.
func TestEventOpsMismatch(t *testing.T) {
	pt := gptPoint(t, "single", "dp=1", nil)
	other := gptPoint(t, "recompute", "dp=1", familyApply(t, "recompute"))
	res, err := exec.Run(t.Context(), other.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eventOps(res.Program, res.Ranks[0].Events); !ok {
		t.Error("the events of a run do not match its own Program")
	}
	if _, ok := eventOps(pt.Program, res.Ranks[0].Events); ok {
		t.Error("the events of a full-recompute run match the Program without recompute")
	}
}

// The deliberately wrong lowering: a saved activation dropped from the Program (the
// first Linear backward's saved input declared not saved) while the kernels still hold it. The
// prediction prices the tampered Program, exec's kernels keep the tensor: compare reports a
// memory error on activations, and the right Program none.
func TestWrongLoweringIsAMemoryError(t *testing.T) {
	hw := hostFixture(t)
	right := gptPoint(t, "single", "dp=1", nil)
	wrong := right
	prog, err := exec.Lowered(right.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := prog.Stages[0]
	var name string
	for _, op := range s.Backward {
		if op.Kind == program.OpLinear && op.Fwd >= 0 {
			v := s.Value(op.Saved[0])
			v.Saved, name = false, v.Name
			break
		}
	}
	if name == "" {
		t.Fatal("no Linear backward with a saved input")
	}
	wrong.Program = prog
	wrong.Strategy = "wrong"
	res := &Results{Profile: hw, Load: NewLoad(-1)}
	if _, err := Run(t.Context(), res, []Point{right, wrong}, Options{Rounds: 1}); err != nil {
		t.Fatal(err)
	}
	if e := res.Rows[0].MemoryErrors; len(e) != 0 {
		t.Errorf("the right lowering has memory errors: %v", e)
	}
	e := res.Rows[1].MemoryErrors
	if len(e) == 0 || !strings.HasPrefix(e[0], "activations: predicted ") {
		t.Fatalf("dropped saved %s: memory errors %v; want one on activations", name, e)
	}
	t.Logf("dropped %s: %s", name, e[0])
	if res.Summary.MemoryErrorRows != 1 {
		t.Errorf("summary counts %d rows with memory errors, want 1", res.Summary.MemoryErrorRows)
	}
	var tab, md bytes.Buffer
	if err := WriteTable(&tab, res, "dir"); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "memory error: wrong dp=1: activations") || !strings.Contains(tab.String(), "MEMORY ERRORS in 1 rows") {
		t.Errorf("the table does not show the memory error:\n%s", tab.String())
	}
	if !strings.Contains(md.String(), "## Memory errors") || !strings.Contains(md.String(), "- **wrong dp=1**: activations: predicted") {
		t.Errorf("report.md does not list the memory error")
	}
}

// exec's own memory errors (memory the ranks held that the Program does not declare) are the
// row's, once each over its runs, before the categories' differences; bytes counted by the
// prediction as communication buffers and by exec in a category are said to be the same bytes.
func TestMemoryErrorsOfRow(t *testing.T) {
	var r Row
	r.Predicted.Memory = map[string]float64{"params": 100, "grads": 100, "comm": 60}
	r.Measured.Memory = map[string]float64{"params": 130, "grads": 130}
	runs := []*exec.Result{{MemoryErrors: []string{"stage 0 holds x"}}, {MemoryErrors: []string{"stage 0 holds x"}}}
	got := MemoryErrors(r, runs)
	if len(got) != 4 || got[0] != "exec: stage 0 holds x" || !strings.HasPrefix(got[1], "params: predicted 100 bytes per rank, measured 130 (+30)") ||
		!strings.HasPrefix(got[2], "grads:") || !strings.Contains(got[3], "the same bytes, counted in another category") {
		t.Errorf("memory errors %q", got)
	}
	r.Measured.Memory = r.Predicted.Memory
	if got := MemoryErrors(r, nil); len(got) != 0 {
		t.Errorf("equal memory: %q", got)
	}
}
