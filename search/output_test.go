package search

import (
	"math"
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
	_, evals := evaluated(t, m, hw, 8, strategies.EnumerateOptions{GBS: 16})
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
