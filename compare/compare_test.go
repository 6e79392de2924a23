package compare

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
)

func hostFixture(t *testing.T) *hardware.Hardware {
	t.Helper()
	data, err := os.ReadFile("../cmd/tpsim/testdata/host.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := hardware.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// points are seed-mlp's single, dp=2 and tp=2 (colwise then rowwise), batch 20, 3 steps.
func points(t *testing.T) []Point {
	t.Helper()
	m, err := model.Load("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	var out []Point
	for _, p := range []struct {
		s    string
		mesh strategies.Mesh
	}{{"single", strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 1}}, {"dp", strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 1}}, {"tp", strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 2}}} {
		st := strategies.Default(p.mesh)
		st.Precision = strategies.PrecisionFP32
		st.Optimizer = strategies.OptimizerSGD
		st.Attention = strategies.AttentionEager
		if p.mesh.TP > 1 {
			if st.Plan, err = strategies.ParsePlan("0=colwise,2=rowwise"); err != nil {
				t.Fatal(err)
			}
		}
		st.GBS = 20
		st = st.Resolve(m)
		st.MBS = st.GBS / p.mesh.DP
		cfg := exec.Config{Model: m, Strategy: st, Steps: 3, Seed: 1}
		prog, err := exec.Lowered(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Point{Strategy: p.s, Mesh: p.mesh, Config: cfg, Program: prog})
	}
	return out
}

// cancelOn is a progress writer that cancels when a line holding trigger is written.
type cancelOn struct {
	mu      sync.Mutex
	trigger string
	cancel  context.CancelFunc
	buf     bytes.Buffer
}

func (c *cancelOn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trigger != "" && bytes.Contains(b, []byte(c.trigger)) {
		c.cancel()
	}
	return c.buf.Write(b)
}

func TestRunWholeAndInterrupted(t *testing.T) {
	hw := hostFixture(t)
	pts := points(t)

	res := &Results{Profile: hw, Load: NewLoad(-1)}
	if _, err := Run(t.Context(), res, pts, Options{Rounds: 2}); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || res.Partial || res.RoundsDone != 2 {
		t.Fatalf("%d rows, partial %v, %d rounds", len(res.Rows), res.Partial, res.RoundsDone)
	}
	for _, r := range res.Rows {
		if r.Rounds != 2 || len(r.RoundSteps) != 2 {
			t.Errorf("%s: %d rounds, %v", r.Label(), r.Rounds, r.RoundSteps)
		}
		if r.Errors.CommBytesAbs["dp"] != 0 || r.Errors.CommBytesAbs["tp"] != 0 {
			t.Errorf("%s: bytes differ: %v", r.Label(), r.Errors.CommBytesAbs)
		}
		if r.MaxRelDiff > 1e-4 {
			t.Errorf("%s: max rel diff %g", r.Label(), r.MaxRelDiff)
		}
	}

	// Ctrl-C as round 2 starts: round 1's rows are kept, marked partial, the error is
	// ErrInterrupted and the summary and recommendation are of what finished.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pw := &cancelOn{trigger: "round 2 of 3", cancel: cancel}
	res = &Results{Profile: hw, Load: NewLoad(-1)}
	_, err := Run(ctx, res, pts, Options{Rounds: 3, Progress: pw})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if !res.Partial || res.RoundsDone != 1 || len(res.Rows) != 3 || !strings.Contains(res.Interrupted, "round 2 of 3") {
		t.Fatalf("partial %v, rounds done %d, %d rows, %q", res.Partial, res.RoundsDone, len(res.Rows), res.Interrupted)
	}
	for _, r := range res.Rows {
		if r.Rounds != 1 {
			t.Errorf("%s: %d rounds, want the 1 that finished", r.Label(), r.Rounds)
		}
	}
	if res.Summary.Rows != 3 || len(res.Recommendation) != 3 {
		t.Errorf("summary of %d rows, %d recommendations", res.Summary.Rows, len(res.Recommendation))
	}
	// The partial results are written like whole ones, and say they are partial.
	dir := t.TempDir()
	if err := WriteFiles(dir, res, nil); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(dir + "/report.md")
	if !strings.Contains(string(md), "**Partial: interrupted in round 2 of 3") {
		t.Errorf("report.md does not say it is partial:\n%.400s", md)
	}

	// Ctrl-C before the first round finishes: nothing to keep.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	res = &Results{Profile: hw, Load: NewLoad(-1)}
	_, err = Run(ctx2, res, pts, Options{Rounds: 1, Progress: &cancelOn{trigger: "round 1 of 1", cancel: cancel2}})
	if !errors.Is(err, ErrInterrupted) || len(res.Rows) != 0 {
		t.Errorf("interrupted in round 1: err %v, %d rows; want ErrInterrupted and none", err, len(res.Rows))
	}
}

func row(label string, step, lo, hi float64) Row {
	r := Row{Row: reports.Row{Strategy: label, Mesh: "dp=2", Ranks: 2}}
	r.Measured.Time.Step, r.Predicted.Time.Step = step, step
	r.Measured.Memory = map[string]float64{"peak": 1}
	r.Spread = Spread{Low: lo, High: hi}
	r.Rounds = 3
	return r
}

// The issue: three runs named three different winners, each "1.16x faster than the runner-up".
// Rows whose ranges over rounds overlap are a tie; a winner outside the runner-up's range is not.
func TestRecommendTies(t *testing.T) {
	hw := &hardware.Hardware{Cores: 2}
	res := &Results{Rows: []Row{row("a", 20e-3, 19e-3, 23e-3), row("b", 22e-3, 21e-3, 25e-3), row("c", 30e-3, 29e-3, 31e-3)}}
	rec := Recommend(res, hw)[0]
	if rec.Objective != "time" || rec.Choice != "tie: a dp=2, b dp=2" || len(rec.Tied) != 1 || rec.Tied[0] != "b dp=2" ||
		!strings.Contains(rec.Reason, "cannot rank them") {
		t.Errorf("overlapping a and b: %+v", rec)
	}
	res.Rows[1] = row("b", 26e-3, 24e-3, 27e-3)
	rec = Recommend(res, hw)[0]
	if rec.Choice != "a dp=2" || len(rec.Tied) != 0 || !strings.Contains(rec.Reason, "1.30x faster than the runner-up b dp=2") {
		t.Errorf("separated a and b: %+v", rec)
	}
}

func TestSpreadOf(t *testing.T) {
	s := SpreadOf([]float64{0.010, 0.012, 0.011}, nil)
	if s.Low != 0.010 || s.High != 0.012 || s.Rel < 0.1818 || s.Rel > 0.1819 {
		t.Errorf("three rounds: %+v, want 10-12 ms and 2/11", s)
	}
	ms := time.Millisecond
	s = SpreadOf([]float64{0.01}, []time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms})
	if s.Low != 0.02 || s.High != 0.04 || math.Abs(s.Rel-2.0/3) > 1e-12 {
		t.Errorf("one round: %+v, want the quartiles 20 and 40 ms and 20/30", s)
	}
	if !(Spread{1, 2, 0}).Overlaps(Spread{2, 3, 0}) || (Spread{1, 2, 0}).Overlaps(Spread{2.1, 3, 0}) {
		t.Error("Overlaps")
	}
}

// Four ranks on two cores: the model's compute at the slowdown of 4 is split into what a rank
// computes at the slowdown of the 2 that run at once and what it waits, descheduled, at
// collectives. Hand calculation with slowdown 1, 1.5, 2.25, 3: a rank runs own = 1.5/3 = half of
// the priced time and is descheduled the other half. A 12 ms segment runs 6 ms, within one 10 ms
// time slice, so its 6 ms descheduled are all at the collective; a 36 ms segment runs 18 ms, two
// slices, so half of its 18 ms descheduled is at the collective and half inside its ops. Of 48 ms
// of compute, 6 + 9 = 15 ms move: 15/48 of t.Compute.
func TestSplitSharing(t *testing.T) {
	hw := &hardware.Hardware{Cores: 2, Slowdown: []float64{1, 1.5, 2.25, 3}}
	in := reports.StepTime{Step: 0.030, Compute: 0.024, CommExposed: 0.004, Optimizer: 0.002}
	got, sh := SplitSharing(in, 4, hw, nil, true)
	if sh == nil || sh.Running != 2 || got.Compute != 0.012 || got.CommExposed != 0.016 || got.Step != in.Step || got.Optimizer != in.Optimizer {
		t.Errorf("4 ranks on 2 cores, short segments: %+v, %+v; want compute 12 ms, exposed comm 16 ms", got, sh)
	}
	got, sh = SplitSharing(in, 4, hw, []float64{0.012, 0.036}, true)
	moved := 0.024 * 15.0 / 48
	if sh == nil || sh.Segments != 2 || math.Abs(got.Compute-(0.024-moved)) > 1e-15 || math.Abs(got.CommExposed-(0.004+moved)) > 1e-15 {
		t.Errorf("segments 12 and 36 ms: %+v, %+v; want %g s moved", got, sh, moved)
	}
	// With the unmet table, a running rank computes at 1.2x (the 2 running, not meeting), so of
	// its priced 3x it runs 0.4 and waits 0.6: 14.4 of 24 ms move with short segments.
	unmet := *hw
	unmet.UnmetSlowdown = []float64{1, 1.2}
	if got, sh := SplitSharing(in, 4, &unmet, nil, true); sh == nil || math.Abs(got.Compute-0.0096) > 1e-15 || math.Abs(got.CommExposed-0.0184) > 1e-15 {
		t.Errorf("4 ranks, unmet 1.2x at 2: %+v; want compute 9.6 ms, exposed comm 18.4 ms", got)
	}
	// 2 ranks on 2 cores meeting at collectives, priced at 1.5x one rank alone where they
	// compute at 1.2x without meeting: 1 - 1.2/1.5 = a fifth of the compute is waiting for the
	// slower rank, 4.8 of 24 ms. Meeting only point to point (a pipeline), or without the unmet
	// table, nothing moves.
	met := *hw
	met.UnmetSlowdown = []float64{1, 1.2}
	if got, sh := SplitSharing(in, 2, &met, nil, true); sh != nil || math.Abs(got.Compute-0.0192) > 1e-15 || math.Abs(got.CommExposed-0.0088) > 1e-15 || got.Step != in.Step {
		t.Errorf("2 ranks on 2 cores: %+v; want compute 19.2 ms, exposed comm 8.8 ms", got)
	}
	for _, c := range []struct {
		what string
		hw   *hardware.Hardware
		coll bool
	}{{"a 2-stage pipeline", &met, false}, {"no unmet table", hw, true}} {
		if got, sh := SplitSharing(in, 2, c.hw, nil, c.coll); sh != nil || got != in {
			t.Errorf("%s changed: %+v", c.what, got)
		}
	}
	if got, sh := SplitSharing(in, 8, &hardware.Hardware{}, nil, true); sh != nil || got != in {
		t.Errorf("devices of their own changed: %+v", got)
	}
}

// The measured split is every rank's op time over every post-warm-up step, scaled to the
// median step; the warm-up step is left out.
func TestMeasuredSample(t *testing.T) {
	ms := time.Millisecond
	ev := func(step int, comm bool, phase string, d time.Duration) exec.OpEvent {
		return exec.OpEvent{Step: step, Comm: comm, Phase: phase, Start: 0, End: d}
	}
	fwd, opt := program.Forward.String(), program.Optimizer.String()
	res := &exec.Result{Ranks: []exec.RankResult{
		{Events: []exec.OpEvent{ev(0, true, fwd, 100*ms), ev(1, false, fwd, 6*ms), ev(1, true, fwd, 2*ms), ev(1, false, opt, 2*ms)},
			PeakBytes: map[string]int64{"peak": 10, "params": 5}, CommBytes: map[string]int64{"dp": 3}},
		{Events: []exec.OpEvent{ev(1, false, fwd, 2*ms), ev(1, true, fwd, 6*ms), ev(1, false, opt, 2*ms)},
			PeakBytes: map[string]int64{"peak": 12, "params": 3}, CommBytes: map[string]int64{"dp": 4}},
	}}
	s := MeasuredSample([]*exec.Result{res}, 40*ms, 1)
	// compute 8, comm 8, optimizer 4 of 20 ms of ops; step 40 ms.
	if s.Time.Step != 0.04 || s.Time.Compute != 0.016 || s.Time.CommExposed != 0.016 || s.Time.Optimizer != 0.008 {
		t.Errorf("time %+v, want 16/16/8 ms of 40", s.Time)
	}
	if s.Memory["peak"] != 12 || s.Memory["params"] != 3 || s.CommBytes["dp"] != 3.5 {
		t.Errorf("memory %v (want the most loaded rank's, peak 12 and params 3, as the cost model reports), bytes %v (want the mean, 3.5)", s.Memory, s.CommBytes)
	}
	// Pipeline stages hold different layers: bytes are the mean over a stage's ranks, of the
	// stage that sends most (as the cost model reports the busiest pipeline rank).
	st := &exec.Result{Ranks: []exec.RankResult{
		{Coords: map[string]int{"pp": 0}, CommBytes: map[string]int64{"dp": 10, "pp": 4}},
		{Coords: map[string]int{"pp": 0}, CommBytes: map[string]int64{"dp": 12, "pp": 4}},
		{Coords: map[string]int{"pp": 1}, CommBytes: map[string]int64{"dp": 7, "pp": 6}},
		{Coords: map[string]int{"pp": 1}, CommBytes: map[string]int64{"dp": 7, "pp": 6}},
	}}
	if s := MeasuredSample([]*exec.Result{st}, 40*ms, 1); s.CommBytes["dp"] != 11 || s.CommBytes["pp"] != 6 {
		t.Errorf("pipeline stages' bytes %v, want dp 11 (stage 0's mean) and pp 6 (stage 1's)", s.CommBytes)
	}
	// A pipeline's split is each step's critical rank's, the one whose last op ends last: stage
	// 0 in step 1 (compute 4 ms, receives 6), stage 1 in step 2 (compute 8, receives 2).
	recv := string(program.OpRecv)
	op := func(step int, kind string, start, end time.Duration) exec.OpEvent {
		return exec.OpEvent{Step: step, Kind: kind, Phase: fwd, Comm: kind == recv, Start: start, End: end}
	}
	pipe := &exec.Result{Ranks: []exec.RankResult{
		{Coords: map[string]int{"pp": 0}, Events: []exec.OpEvent{
			op(1, "linear", 0, 2*ms), op(1, recv, 2*ms, 8*ms), op(1, "linear", 8*ms, 10*ms),
			op(2, "linear", 20*ms, 22*ms), op(2, recv, 22*ms, 23*ms)}},
		{Coords: map[string]int{"pp": 1}, Events: []exec.OpEvent{
			op(1, recv, 0, 1*ms), op(1, "linear", 1*ms, 9*ms),
			op(2, recv, 20*ms, 22*ms), op(2, "linear", 22*ms, 30*ms)}},
	}}
	s = MeasuredSample([]*exec.Result{pipe}, 20*ms, 1)
	// 12 ms of compute and 8 of receives over the two steps, scaled to a 20 ms step.
	if math.Abs(s.Time.Compute-0.012) > 1e-12 || math.Abs(s.Time.Bubble-0.008) > 1e-12 || s.Time.CommExposed != 0 {
		t.Errorf("pipeline split %+v, want compute 12 ms and bubble 8 ms (each step's critical rank's)", s.Time)
	}
	// With dp copies of each stage, the split is the critical stage's ranks': stage 1 holds the
	// rank that ends last (11 ms), so its two ranks' 6+8 ms of compute and 4+2 of receives.
	at := func(pp int) map[string]int { return map[string]int{"pp": pp} }
	ppdp := &exec.Result{Ranks: []exec.RankResult{
		{Coords: at(0), Events: []exec.OpEvent{op(1, "linear", 0, 2*ms), op(1, recv, 2*ms, 10*ms)}},
		{Coords: at(0), Events: []exec.OpEvent{op(1, "linear", 0, 3*ms), op(1, recv, 3*ms, 10*ms)}},
		{Coords: at(1), Events: []exec.OpEvent{op(1, recv, 0, 4*ms), op(1, "linear", 4*ms, 10*ms)}},
		{Coords: at(1), Events: []exec.OpEvent{op(1, recv, 1*ms, 3*ms), op(1, "linear", 3*ms, 11*ms)}},
	}}
	s = MeasuredSample([]*exec.Result{ppdp}, 20*ms, 1)
	if math.Abs(s.Time.Compute-0.014) > 1e-12 || math.Abs(s.Time.Bubble-0.006) > 1e-12 {
		t.Errorf("pp x dp split %+v, want compute 14 ms and bubble 6 ms (the critical stage's two ranks)", s.Time)
	}
}

// Loaded rounds and a loaded calibration each give a warning that says what the load does.
func TestLoadWarnings(t *testing.T) {
	l := NewLoad(0.02)
	l.AddRound(0.01)
	l.AddRound(0.03)
	l.Finish(2)
	if len(l.Warnings) != 0 || l.Max != 0.03 {
		t.Errorf("quiet machine: %v, max %g", l.Warnings, l.Max)
	}
	l = NewLoad(0.3)
	l.AddRound(0.05)
	l.AddRound(0.5)
	l.Finish(2)
	if len(l.Warnings) != 2 || !strings.Contains(l.Warnings[0], "calibrated while other processes used 30%") ||
		!strings.Contains(l.Warnings[1], "5%, 50% of the CPU") || !strings.Contains(l.Warnings[1], "up to 2x slower") ||
		!strings.Contains(l.Warnings[1], "ties") || !strings.Contains(l.Warnings[1], "Only about 1.0 of the 2 cores were free") {
		t.Errorf("loaded: %q", l.Warnings)
	}
	l = NewLoad(0)
	l.CalibrationQuick = true
	l.Finish(2)
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "quick calibration") {
		t.Errorf("quick profile: %q", l.Warnings)
	}
}

// The issue: CSV lost digits (1.71725e+06 where JSON had 1717248). Whole numbers are integers,
// seconds read back to the same float64.
func TestCSVPrecision(t *testing.T) {
	r := row("dp", 0.0123456789012345, 0.012, 0.013)
	r.Simulated = &reports.Sample{}
	r.Predicted.Memory = map[string]float64{"peak": 1717248}
	r.Predicted.CommBytes = map[string]float64{"dp": 539648}
	r.Measured.CommBytes = map[string]float64{"dp": 539648.5}
	r.Predicted.Phases = map[string]float64{"bubble": 0.0051}
	r.Measured.Phases = map[string]float64{"bubble": 0}
	r.MemoryErrors = []string{"a", "b"}
	var b bytes.Buffer
	if err := WriteCSV(&b, []Row{r}, false); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, h := range recs[0] {
		got[h] = recs[1][i]
	}
	for k, want := range map[string]string{"pred_peak_b": "1717248", "pred_dp_bytes": "539648", "meas_dp_bytes": "539648.5",
		"meas_step_s": "0.0123456789012345", "ranks": "2", "rounds": "3",
		// A mechanism the row has is a number (0 included); one it has not is empty.
		"pred_bubble_s": "0.0051", "meas_bubble_s": "0", "sim_bubble_s": "", "pred_zero_gather_s": "", "memory_errors": "2", "partial": "false"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// Data parallel meets at a collective once per step (its gradients), tensor parallel around every
// split layer: the simulated step has one compute segment for dp and more for tp, and together
// they hold all of the step's non-optimizer compute.
func TestSegments(t *testing.T) {
	hw := hostFixture(t)
	n := map[string]int{}
	for _, pt := range points(t)[1:] {
		coster, err := costmodel.NewCoster(pt.Program, hw)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.Simulate(pt.Program, coster, sim.Options{Spans: true})
		if err != nil {
			t.Fatal(err)
		}
		segs := Segments(r)
		var sum, want float64
		for _, s := range segs {
			sum += s
		}
		for _, sp := range r.Spans {
			if sp.Rank == 0 && sp.Stream != "comm" && sp.Phase != program.Optimizer {
				want += float64(sp.End - sp.Start)
			}
		}
		if math.Abs(sum-want) > 1e-12 {
			t.Errorf("%s: segments sum to %g, compute spans to %g", pt.Mesh, sum, want)
		}
		n[pt.Strategy] = len(segs)
	}
	if n["dp"] != 1 || n["tp"] < 2 {
		t.Errorf("segments: dp %d, tp %d; want 1 and at least 2", n["dp"], n["tp"])
	}
}

// Ctrl-C in the first round keeps the strategies that round finished, one run each.
func TestRunInterruptedInFirstRound(t *testing.T) {
	hw := hostFixture(t)
	pts := points(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The progress line of the second point's run comes after it finished: cancel there.
	pw := &cancelOn{trigger: "  dp dp=2:", cancel: cancel}
	res := &Results{Profile: hw, Load: NewLoad(-1)}
	_, err := Run(ctx, res, pts, Options{Rounds: 2, Progress: pw})
	if !errors.Is(err, ErrInterrupted) || !res.Partial {
		t.Fatalf("err %v, partial %v", err, res.Partial)
	}
	if len(res.Rows) != 2 || res.Rows[0].Strategy != "single" || res.Rows[1].Strategy != "dp" || res.Rows[1].Rounds != 1 {
		t.Fatalf("rows %+v; want single and dp, one run each", res.Rows)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Strategy != "tp" || !strings.Contains(res.Interrupted, "one run each") {
		t.Errorf("skipped %+v, %q", res.Skipped, res.Interrupted)
	}
}
