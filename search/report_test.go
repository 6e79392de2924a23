package search

import (
	"strconv"
	"testing"
)

// plan.csv has a row per top candidate in rank order, its closed-form step to 4 digits, and the
// simulated step only where the simulator re-ranked it.
func TestPlannedTable(t *testing.T) {
	m, hw := tinyGPT(t), a100(t)
	pl, err := Plan(m, hw, Request{GPUs: 8, GlobalBatch: 16, Objective: Time, Top: 3, Sim: SimOn, SimTop: 2})
	if err != nil {
		t.Fatal(err)
	}
	header, rows := pl.Table()
	if len(header) != 11 || header[2] != "closed_form_step_s" || header[10] != "sim_step_s" || len(rows) != len(pl.Out.Top) {
		t.Fatalf("header %q, %d rows for %d candidates", header, len(rows), len(pl.Out.Top))
	}
	for i, e := range pl.Out.Top {
		r := rows[i]
		if r[0] != strconv.Itoa(i+1) || r[2] != strconv.FormatFloat(float64(e.Time.Step), 'g', 4, 64) {
			t.Errorf("row %d: rank %s step %s; want %d and %g to 4 digits", i, r[0], r[2], i+1, float64(e.Time.Step))
		}
		if (e.SimStep == nil) != (r[10] == "") {
			t.Errorf("row %d: simulated %v, cell %q", i, e.SimStep, r[10])
		}
	}
	if fig, err := pl.Figure(); fig == nil || err != nil {
		t.Errorf("figure: %v, %v", fig, err)
	}
}

// Nothing fits: no figure, and no error.
func TestPlannedFigureInfeasible(t *testing.T) {
	m, hw := tinyGPT(t), a100(t)
	pl, err := Plan(m, hw, Request{GPUs: 8, GlobalBatch: 16, Objective: Time, Top: 3, Sim: SimOff})
	if err != nil {
		t.Fatal(err)
	}
	pl.Res.Feasible = 0
	if fig, err := pl.Figure(); fig != nil || err != nil {
		t.Errorf("no feasible candidate: figure %v, %v; want none", fig, err)
	}
}
