package search

import (
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Predict lowers and prices the strategy: the Result names the resolved strategy and the
// Program's device count (dp 2 x tp 2 = 4); Simulate replaces the time with the simulator's and
// keeps the closed form's beside it.
func TestPredictSimulate(t *testing.T) {
	m, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := hardware.Preset("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	st, err := strategies.Parse("dp=2,tp=2")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Predict(m, hw, st)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result.Devices != 4 || p.Program.Strategy.Mesh.DP != 2 || !strings.Contains(p.Result.Strategy, "tp=2") || p.Peak <= 0 || p.Coster == nil {
		t.Errorf("got devices %d, strategy %q, peak %v", p.Result.Devices, p.Result.Strategy, p.Peak)
	}
	closed := p.Result.Time
	rep, res, err := p.Simulate(false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ClosedFormTime != closed || rep.Time.Step != res.Step || len(rep.Utilization) != 1 || len(res.Spans) != 0 {
		t.Errorf("closed form %v (want %v), step %v (simulated %v), %d utilisations (want 1 pipeline rank), %d spans (none asked)",
			rep.ClosedFormTime, closed, rep.Time.Step, res.Step, len(rep.Utilization), len(res.Spans))
	}
}
