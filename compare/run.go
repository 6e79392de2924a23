package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
)

// ErrInterrupted is Run's error when its context was cancelled (Ctrl-C) after it started
// measuring: the Results hold the rows of the rounds that finished, marked partial.
var ErrInterrupted = errors.New("interrupted")

// Point is one (strategy, mesh) to predict and measure: the exec configuration and the Program it
// lowers to.
type Point struct {
	Strategy string
	Mesh     strategies.Mesh
	Config   exec.Config
	Program  *program.Program
}

// Options configure Run.
type Options struct {
	// Rounds is how many times every point is measured, in turn.
	Rounds int
	// Progress receives a line per prediction and per run; nil discards them.
	Progress io.Writer
	// Retime, when set, times the profile's kernels again (TimeKernels of the profile before
	// any timing); Run calls it before every round but the first, whose timing res.Profile
	// holds, and predicts with the median of the timings (MedianProfile).
	Retime func(ctx context.Context) (*hardware.Hardware, error)
}

// warmup is the number of warm-up steps of every run left out of the step time (exec's default
// for runs of two steps or more).
const warmup = 1

type state struct {
	Point
	phases map[string]float64
	pred   *costmodel.Result
	sim    *sim.Result
	runs   []*exec.Result
	steps  []time.Duration
	other  []float64
}

// Run predicts every point with res.Profile (the cost model and the simulator, from the Program
// and the profile alone), then measures them with exec in o.Rounds rounds that visit every point
// in turn, so that a spell of load from elsewhere on this shared machine falls on all strategies
// rather than on one, reading the share of the CPU other processes used around every run. It
// fills res's rows, load, summary and recommendation, and returns the timeline of the last
// multi-rank row. With o.Retime the kernels are timed again before every round but the first,
// and the rows are predicted with the median of the timings (res.Profile becomes that median
// profile). When ctx is cancelled during the measurement, the rows keep the rounds that
// finished, res is marked partial, and the error is ErrInterrupted.
func Run(ctx context.Context, res *Results, pts []Point, o Options) (*Timeline, error) {
	say := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "tpsim compare: "+format+"\n", a...)
		}
	}
	hw := res.Profile
	if hw == nil {
		return nil, fmt.Errorf("compare: no hardware profile to predict with")
	}
	if o.Rounds < 1 {
		return nil, fmt.Errorf("compare: %d rounds; measure at least one", o.Rounds)
	}
	res.RoundsPlanned = o.Rounds
	var st []*state
	for _, pt := range pts {
		st = append(st, &state{Point: pt})
	}
	if len(st) == 0 {
		return nil, fmt.Errorf("compare: nothing to run")
	}
	if err := predict(st, hw, say); err != nil {
		return nil, err
	}
	profiles := []*hardware.Hardware{hw}
	interrupted := func(where string) bool {
		if ctx.Err() == nil {
			return false
		}
		res.Partial = true
		res.Interrupted = fmt.Sprintf("interrupted %s; the rows hold the %d of %d rounds that finished", where, res.RoundsDone, o.Rounds)
		if res.RoundsDone == 0 {
			res.Interrupted = fmt.Sprintf("interrupted %s; the rows hold the strategies measured before it, one run each", where)
		}
		return true
	}
	say("measuring single-device training for the reference losses")
	ref, err := exec.Run(ctx, exec.Single(st[0].Config))
	if err != nil {
		if interrupted("before any strategy was measured") {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	var stopped bool
rounds:
	for round := 1; round <= o.Rounds; round++ {
		if round > 1 && o.Retime != nil {
			p, err := o.Retime(ctx)
			if err != nil {
				if interrupted(fmt.Sprintf("timing the kernels before round %d of %d", round, o.Rounds)) {
					stopped = true
					break rounds
				}
				return nil, err
			}
			profiles = append(profiles, p)
		}
		say("measuring, round %d of %d (%d steps per strategy)", round, o.Rounds, st[0].Config.Steps)
		r0 := calibrate.SampleCPU()
		for _, s := range st {
			c0 := calibrate.SampleCPU()
			meas, err := exec.Run(ctx, s.Config)
			if err == nil && ctx.Err() != nil {
				// Interrupted while a run too short to notice finished (a single rank meets no
				// collective): the round is cut here, as when the run itself stopped.
				err = ctx.Err()
			}
			if err != nil {
				if interrupted(fmt.Sprintf("in round %d of %d, at %s %s", round, o.Rounds, s.Strategy, s.Mesh)) {
					stopped = true
					break rounds
				}
				return nil, err
			}
			share := calibrate.OtherCPUShare(c0, calibrate.SampleCPU())
			s.runs = append(s.runs, meas)
			s.steps = append(s.steps, meas.StepTimes[warmup:]...)
			s.other = append(s.other, share)
			say("  %s %s: %v per step (other processes: %s of the CPU)", s.Strategy, s.Mesh, exec.Median(meas.StepTimes[warmup:]).Round(10*time.Microsecond), shareText(share))
		}
		res.Load.AddRound(calibrate.OtherCPUShare(r0, calibrate.SampleCPU()))
		res.RoundsDone = round
	}
	if len(profiles) > 1 {
		// The rows' measured steps are medians over the rounds; so are the kernels' timings
		// they are predicted with.
		hw = MedianProfile(profiles)
		res.Profile = hw
		say("predicting again with the median of the %d timings of the kernels, one before each round", len(profiles))
		if err := predict(st, hw, nil); err != nil {
			return nil, err
		}
	}
	var tl *Timeline
	tlPipeline := false
	for _, s := range st {
		if len(s.runs) == 0 {
			res.Skipped = append(res.Skipped, Skipped{s.Strategy, s.Mesh.String(), "interrupted before it was measured"})
			continue
		}
		if stopped && res.RoundsDone > 0 && len(s.runs) > res.RoundsDone {
			// The interrupted round measured this row but not all others: keep every row to the
			// rounds that finished, so that load in that round does not fall on some rows only.
			// (Interrupted in the first round, the rows it finished are all there is: kept.)
			s.runs, s.other = s.runs[:res.RoundsDone], s.other[:res.RoundsDone]
			s.steps = s.steps[:res.RoundsDone*(s.Config.Steps-warmup)]
		}
		row := MakeRow(RowInput{Strategy: s.Strategy, Mesh: s.Mesh, Pred: s.pred, Sim: s.sim, Runs: s.runs, Steps: s.steps, OtherCPU: s.other, Warmup: warmup, PredPhases: s.phases}, ref, hw)
		say("%s %s predicted %s, measured %s (%+.0f%%, spread ±%.0f%%)", s.Strategy, s.Mesh,
			msText(row.Predicted.Time.Step), msText(row.Measured.Time.Step), 100*(row.Predicted.Time.Step-row.Measured.Time.Step)/row.Measured.Time.Step, 50*row.Spread.Rel)
		res.Rows = append(res.Rows, row)
		// The timeline is of the first pipeline row (its bubble shows), else of the last
		// multi-rank row.
		if s.Mesh.Devices() > 1 && !tlPipeline {
			tlPipeline = s.Mesh.PP > 1
			last := s.runs[len(s.runs)-1]
			tl = &Timeline{
				Titles: []string{fmt.Sprintf("simulated %s %s", s.Strategy, s.Mesh), fmt.Sprintf("measured %s %s (step %d)", s.Strategy, s.Mesh, last.Breakdown.StepIndex)},
				Spans:  [][]reports.Span{SimSpans(s.sim, s.Mesh), MeasuredSpans(last, last.Breakdown.StepIndex)},
			}
		}
	}
	res.Summary = Summarize(res.Rows)
	res.Load.Finish(hw.Cores)
	res.Recommendation = Recommend(res, hw)
	if stopped {
		return tl, ErrInterrupted
	}
	return tl, nil
}

// predict prices every point with hw: the cost model, its phases and the simulator; say, when
// not nil, gets a line per point.
func predict(st []*state, hw *hardware.Hardware, say func(string, ...any)) error {
	for i, s := range st {
		var err error
		if s.pred, err = costmodel.Predict(s.Program, hw); err != nil {
			return err
		}
		coster, err := costmodel.NewCoster(s.Program, hw)
		if err != nil {
			return err
		}
		s.phases = PredictedPhases(s.Program, coster, s.pred)
		if s.sim, err = sim.Simulate(s.Program, coster, sim.Options{Spans: true}); err != nil {
			return err
		}
		if say != nil {
			say("[%d/%d] %s %s: predicted %v", i+1, len(st), s.Strategy, s.Mesh, s.pred.Time.Step)
		}
	}
	return nil
}

// SimSpans turns the simulated timeline into trace spans (one lane per pipeline rank: the
// simulator runs one rank for all its data- and tensor-parallel replicas), each span's
// microbatch and stage as its args (compare's timeline figure, tpsim sim --trace).
func SimSpans(r *sim.Result, mesh strategies.Mesh) []reports.Span {
	var out []reports.Span
	for _, s := range r.Spans {
		thread := "compute"
		cat := s.Phase.String()
		if s.Stream == "comm" {
			thread, cat = "communication", "communication"
		}
		out = append(out, reports.Span{Process: fmt.Sprintf("pipeline rank %d (x%d replicas)", s.Rank, mesh.Devices()/mesh.PP), Thread: thread,
			Name: string(s.Kind) + " " + s.Module, Cat: cat, Start: float64(s.Start), Dur: float64(s.End - s.Start),
			Args: map[string]any{"microbatch": s.Micro, "stage": s.Stage}})
	}
	return out
}

// MeasuredSpans is exec's measured timeline as trace spans: a process per rank with compute,
// communication and pipeline-wait threads (a pipeline receive is the bubble), full recompute's
// replayed forward ops drawn as recompute where the events match the Program, and each span's
// step, stage and microbatch as its args. step >= 0 keeps that step alone, from its own start
// (compare's timeline figure); step < 0 keeps every step, from the run's start (tpsim exec
// --trace).
func MeasuredSpans(res *exec.Result, step int) []reports.Span {
	t0 := math.Inf(1)
	for _, r := range res.Ranks {
		for _, e := range r.Events {
			if e.Step == step {
				t0 = min(t0, e.Start.Seconds())
			}
		}
	}
	if step < 0 {
		t0 = 0
	}
	var out []reports.Span
	for _, r := range res.Ranks {
		var ops []*program.Op
		if res.Program != nil {
			ops, _ = eventOps(res.Program, r.Events)
		}
		proc := fmt.Sprintf("rank %d (pp=%d,dp=%d,tp=%d)", r.Rank, r.Coords["pp"], r.Coords["dp"], r.Coords["tp"])
		for i, e := range r.Events {
			if step >= 0 && e.Step != step {
				continue
			}
			thread, cat := "compute", e.Phase
			switch {
			case e.Kind == string(program.OpRecv):
				thread, cat = "pipeline wait", PhaseBubble
			case e.Comm:
				thread, cat = "communication", "communication"
			case ops != nil && phaseOf(ops[i]) == PhaseRecompute:
				cat = PhaseRecompute
			}
			out = append(out, reports.Span{Process: proc, Thread: thread, Name: e.Kind + " " + e.Module, Cat: cat,
				Start: e.Start.Seconds() - t0, Dur: (e.End - e.Start).Seconds(),
				Args: map[string]any{"step": e.Step, "stage": e.Stage, "microbatch": e.Micro}})
		}
	}
	return out
}
