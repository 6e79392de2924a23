package search

import (
	"math"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/strategies"
)

// The figure's points are every feasible candidate with its exact step (the same as pricing the
// whole space without bounds), and its winner is the plan's first row.
func TestScatter(t *testing.T) {
	m, hw := tinyGPT(t), a100(t)
	pl, err := Plan(m, hw, Request{GPUs: 8, GlobalBatch: 16, Objective: Time, Top: 5, Sim: SimOff})
	if err != nil {
		t.Fatal(err)
	}
	all, winner := pl.Scatter()
	fix, _ := DefaultStack(m, hw, strategies.Fix{}) // the knobs Plan assumes (attn=flash on an A100)
	_, evals := evaluated(t, m, hw, 8, strategies.EnumerateOptions{GBS: 16, Fix: fix})
	want := map[Point]int{}
	for _, e := range evals {
		if e.Priced && e.Feasible {
			want[Point{Step: float64(e.Step), Peak: float64(e.Peak)}]++
		}
	}
	got := map[Point]int{}
	for _, p := range all {
		got[p]++
	}
	if len(all) == 0 || len(got) != len(want) {
		t.Fatalf("%d points (%d distinct), want %d distinct", len(all), len(got), len(want))
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("point %+v: %d times, want %d", p, got[p], n)
		}
	}
	// The row is Predict of the lowered Program, the point the search's closed form: equal to
	// 1e-9 (TestDerivedEqualsPredictOnWholeSpaces), not to the bit.
	if top := pl.Out.Top[0]; winner.Strategy != Label(mustParse(t, top.Strategy)) || math.Abs(winner.Step-float64(top.Time.Step)) > 1e-9*winner.Step {
		t.Errorf("winner %+v, want the first row %s at %v", winner, top.Strategy, top.Time.Step)
	}
}

func mustParse(t *testing.T, s string) strategies.Strategy {
	t.Helper()
	st, err := strategies.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The issue: plan defaulted to eager attention, so a Llama 3 70B plan on H100 showed a step far
// slower than with attn=flash, which everyone on an H100 runs. Unset, attn is FlashAttention-2 on
// a GPU whose preset cites its efficiency, said in an "assumed:" line that opens the explanation;
// fixed by the user, nothing is assumed; fp32 and hardware without FlashAttention-2 keep eager.
func TestPlanAssumesTheStacksAttention(t *testing.T) {
	m, hw := tinyGPT(t), a100(t)
	pl, err := Plan(m, hw, Request{GPUs: 2, GlobalBatch: 4, Objective: Time, Top: 3, Sim: SimOff})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Out.Assumed) != 1 || !strings.HasPrefix(pl.Out.Assumed[0], "assumed: attn=flash (FlashAttention-2") || !strings.Contains(pl.Out.Assumed[0], "--fix attn=eager to change") ||
		!strings.HasPrefix(pl.Out.Explanation, pl.Out.Assumed[0]+"\n") {
		t.Errorf("assumed %q; explanation starts %q", pl.Out.Assumed, pl.Out.Explanation[:min(80, len(pl.Out.Explanation))])
	}
	for _, e := range pl.Out.Top {
		if !strings.Contains(e.Strategy, "attn=flash") {
			t.Errorf("row %s is not FlashAttention-2", e.Strategy)
		}
	}
	pl, err = Plan(m, hw, Request{GPUs: 2, GlobalBatch: 4, Objective: Time, Top: 3, Sim: SimOff, Fix: mustFix(t, "attn=eager")})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Out.Assumed) != 0 || !strings.Contains(pl.Out.Top[0].Strategy, "attn=eager") {
		t.Errorf("attn fixed by the user: assumed %q, winner %s", pl.Out.Assumed, pl.Out.Top[0].Strategy)
	}
	fix, assumed := DefaultStack(m, hw, mustFix(t, "precision=fp32"))
	if fix.Strategy.Attention != strategies.AttentionEager || len(assumed) != 1 || !strings.Contains(assumed[0], "attn=eager (precision=fp32") {
		t.Errorf("fp32: attn=%s, %q", fix.Strategy.Attention, assumed)
	}
	noFlash := *hw
	noFlash.Name, noFlash.Efficiency.FlashMax = "cpu", 0
	fix, assumed = DefaultStack(m, &noFlash, strategies.Fix{})
	if fix.Strategy.Attention != strategies.AttentionEager || len(assumed) != 1 || !strings.Contains(assumed[0], "cpu gives no FlashAttention-2 efficiency") {
		t.Errorf("no FlashAttention-2 efficiency: attn=%s, %q", fix.Strategy.Attention, assumed)
	}
	if fix, assumed := DefaultStack(preset(t, "seed-mlp"), hw, strategies.Fix{}); len(assumed) != 0 || fix.Strategy.Precision != "" {
		t.Errorf("a model without attention: %q, %+v", assumed, fix.Strategy)
	}
}
