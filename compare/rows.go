package compare

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// PredictedSample turns a cost-model Result into a reports.Sample.
func PredictedSample(r *costmodel.Result) reports.Sample {
	s := reports.Sample{Memory: map[string]float64{}, CommBytes: map[string]float64{}}
	s.Time = reports.StepTime{Step: float64(r.Time.Step), Compute: float64(r.Time.Compute), CommExposed: float64(r.Time.CommExposed),
		Bubble: float64(r.Time.Bubble), Optimizer: float64(r.Time.Optimizer)}
	m := r.Memory
	for k, v := range map[string]units.Bytes{"params": m.Params, "grads": m.Grads, "optimizer": m.Optimizer, "activations": m.Activations,
		"workspace": m.Workspace, "comm": m.Comm, "peak": m.Peak} {
		s.Memory[k] = float64(v)
	}
	for k, v := range r.CommBytes {
		s.CommBytes[string(k)] = float64(v)
	}
	return s
}

// SimulatedSample is the simulator's step with the prediction's memory and bytes (the simulator
// lays out time only).
func SimulatedSample(r *sim.Result, pred reports.Sample) *reports.Sample {
	s := reports.Sample{Memory: pred.Memory, CommBytes: pred.CommBytes}
	s.Time = reports.StepTime{Step: float64(r.Step), Compute: float64(r.Compute), CommExposed: float64(r.CommExposed), Bubble: float64(r.Bubble), Optimizer: float64(r.Optimizer)}
	return &s
}

// MeasuredSample is what the runs of one row measured: the step time is step (the median over
// every round's post-warm-up steps); its split into compute, exposed communication, pipeline
// bubble (pipeline receives) and optimizer is the share of each in the op time of every rank over
// every post-warm-up step of every round (one rank's one step, exec's Breakdown, moves by tens of
// percent from run to run), except that a pipeline's is the critical rank's, as the cost model and
// the simulator report it: in each step, the stage of the rank whose last op ends last, its ranks'
// mean (the pipeline's stages differ, and the first, which waits for every backward, has a larger
// bubble than the last; with a tied embedding the first and last end nearly together, and the
// critical stage may change from step to step).
// The time of each mechanism (Phases: ZeRO gathers, recompute; left out when the events cannot be
// matched to the Program) is its share of every rank's op time, as the prediction averages them
// over the pipeline ranks, and the bubble's is the split's. Memory is that of the most loaded
// rank (the highest peak, the rank the cost model reports); bytes sent on each mesh dimension the
// mean over the ranks of a pipeline stage, which is what docs/architecture.md's 2(p-1)/p n per rank means
// (when p does not divide n ring chunks differ by one element and some ranks send a few bytes
// more than others, but the group sends 2(p-1) n in all), of the pipeline stage that sends most
// (pipeline stages hold different layers; the cost model reports the busiest). Memory and bytes
// are those of the last run (every run of a row sends and holds the same).
func MeasuredSample(runs []*exec.Result, step time.Duration, warmup int) reports.Sample {
	s := reports.Sample{Memory: map[string]float64{}, CommBytes: map[string]float64{}}
	type split struct{ comp, comm, bub, opt, end time.Duration }
	var sum split         // the split reported
	var all time.Duration // every rank's op time, of which the mechanisms' times are shares
	phases, matched := map[string]float64{}, len(runs) > 0
	for _, res := range runs {
		pipeline := res.Program != nil && res.Program.Strategy.Mesh.PP > 1
		for _, r := range res.Ranks {
			pipeline = pipeline || r.Coords[string(strategies.DimPP)] > 0
		}
		steps := map[int][]split{} // each post-warm-up step's split of each rank
		for ri, r := range res.Ranks {
			for _, e := range r.Events {
				if e.Step < warmup {
					continue
				}
				sp := steps[e.Step]
				if sp == nil {
					sp = make([]split, len(res.Ranks))
					steps[e.Step] = sp
				}
				x := &sp[ri]
				d := e.End - e.Start
				all += d
				switch {
				case e.Kind == string(program.OpRecv):
					x.bub += d
				case e.Comm:
					x.comm += d
				case e.Phase == program.Optimizer.String():
					x.opt += d
				default:
					x.comp += d
				}
				x.end = max(x.end, e.End)
			}
		}
		for _, sp := range steps { // sums of durations: the map's order does not change them
			crit := -1 // the critical pipeline stage: the one with the rank that ends last
			if pipeline {
				var end time.Duration
				for i, x := range sp {
					if pp := res.Ranks[i].Coords[string(strategies.DimPP)]; x.end > end || crit < 0 {
						crit, end = pp, x.end
					}
				}
			}
			for i, x := range sp {
				// A stage's dp copies are alike in the cost model; which of them ends last is
				// the scheduler's, so the split is the mean over the stage's ranks.
				if crit < 0 || res.Ranks[i].Coords[string(strategies.DimPP)] == crit {
					sum.comp, sum.comm, sum.bub, sum.opt = sum.comp+x.comp, sum.comm+x.comm, sum.bub+x.bub, sum.opt+x.opt
				}
			}
		}
		matched = matched && measuredPhases(res, warmup, phases)
	}
	comp, comm, bub, opt := sum.comp, sum.comm, sum.bub, sum.opt
	st := step.Seconds()
	s.Time.Step = st
	k := 0.0
	if sum := (comp + comm + bub + opt).Seconds(); sum > 0 {
		// What the events do not cover, the rank's bookkeeping between ops, goes with them pro rata.
		k = st / sum
		s.Time.Compute, s.Time.CommExposed, s.Time.Bubble, s.Time.Optimizer = k*comp.Seconds(), k*comm.Seconds(), k*bub.Seconds(), k*opt.Seconds()
	}
	if len(runs) == 0 {
		return s
	}
	last := runs[len(runs)-1]
	if matched && last.Program != nil && all > 0 {
		s.Phases = map[string]float64{}
		for _, ph := range programPhases(last.Program) {
			s.Phases[ph] = st * phases[ph] / all.Seconds()
		}
		if _, ok := s.Phases[PhaseBubble]; ok {
			s.Phases[PhaseBubble] = s.Time.Bubble // the critical rank's receives, as the split
		}
	}
	most := -1
	perStage := map[int]map[string]float64{} // bytes summed over the ranks of each pp coordinate
	count := map[int]int{}
	for i, r := range last.Ranks {
		if most < 0 || r.PeakBytes["peak"] > last.Ranks[most].PeakBytes["peak"] {
			most = i
		}
		pp := r.Coords[string(strategies.DimPP)]
		if perStage[pp] == nil {
			perStage[pp] = map[string]float64{}
		}
		count[pp]++
		for k, v := range r.CommBytes {
			perStage[pp][k] += float64(v)
		}
	}
	for pp, m := range perStage {
		for k, v := range m {
			s.CommBytes[k] = max(s.CommBytes[k], v/float64(count[pp]))
		}
	}
	if most >= 0 {
		for k, v := range last.Ranks[most].PeakBytes {
			s.Memory[k] = float64(v)
		}
	}
	return s
}

// Sharing is how the prediction's step is split when a row's ranks outnumber the cores they share.
//
// The cost model prices k ranks on c < k cores as every op slowed by the measured slowdown at k
// (processor sharing). That is right for the step but not for where it goes: only c ranks run at
// once, each at the speed of c computing together without meeting (the unmet slowdown), and a
// rank that is not running waits. Where it
// waits depends on how long it computes between collectives (a segment) against the Go
// scheduler's time slice (GoTimeSlice): a segment shorter than a slice runs to its collective in
// one go and the rank then waits there, descheduled, for the others (exposed communication, as
// exec measures it); a segment of n slices is preempted n-1 times in the middle (time exec counts
// in the op it interrupts) and waits once, at its end. So of each segment's descheduled time D a
// share 1/n is moved to exposed communication, the rest stays compute. Tensor parallel meets at a
// collective every layer (short segments: nearly all the waiting is at collectives); data
// parallel once per step (one long segment: most of it is inside compute).
type Sharing struct {
	Ranks int `json:"ranks"`
	Cores int `json:"cores"`
	// Running is how many ranks compute at once: min(Ranks, Cores).
	Running int `json:"running"`
	// Segments is the number of compute segments between collectives in the simulated step.
	Segments int `json:"segments"`
	// Descheduled is the predicted compute time that is waiting at collectives while other ranks
	// run, moved to exposed communication; Step is unchanged.
	Descheduled float64 `json:"descheduled_s"`
}

// GoTimeSlice is how long the Go scheduler lets a goroutine run while others wait for its
// processor before preempting it: runtime/proc.go, forcePreemptNS = 10ms ("the time slice given
// to a G before it is preempted").
const GoTimeSlice = 10e-3

// Segments returns the compute time of each stretch of the simulated step between two
// collectives (exec's ranks block in every collective), in seconds, from the spans of pipeline
// rank 0; optimizer ops are left out.
func Segments(r *sim.Result) []float64 {
	spans := slices.Clone(r.Spans)
	slices.SortStableFunc(spans, func(a, b sim.Span) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	var out []float64
	cur := 0.0
	for _, sp := range spans {
		if sp.Rank != 0 {
			continue
		}
		switch {
		case sp.Stream == "comm":
			if cur > 0 {
				out = append(out, cur)
			}
			cur = 0
		case sp.Phase != program.Optimizer:
			cur += float64(sp.End - sp.Start)
		}
	}
	if cur > 0 {
		out = append(out, cur)
	}
	return out
}

// SplitSharing returns t with the part of its compute that ranks wait at collectives moved to
// exposed communication, for ranks ranks on hw and the simulated step's segments (nil: every
// segment within one time slice), as exec measures it (a rank blocks in every collective). Where
// the ranks outnumber the cores, that is the time they wait descheduled (see Sharing, returned).
// Where each has a core and they meet at collectives (collectives: a dp, cp or tp group), the
// priced compute's excess over the ranks computing without meeting (hw.ComputeSlowdown(ranks)
// over hw.UnmetComputeSlowdown(ranks): calibrate measures the first with the ranks meeting after
// every unit of work, the second without; two goroutines run at about 1.01x one alone, 1.06-1.18x
// meeting) is the time the early ranks wait at the collectives for the slowest; it moves, and the
// Sharing is nil. t is unchanged on devices of their
// own (Cores 0), for one rank, and for ranks that meet only point to point (a pipeline: its
// waits are the bubble).
func SplitSharing(t reports.StepTime, ranks int, hw *hardware.Hardware, segments []float64, collectives bool) (reports.StepTime, *Sharing) {
	if hw.Cores <= 0 || ranks <= 1 {
		return t, nil
	}
	if ranks <= hw.Cores {
		if collectives {
			d := t.Compute * max(0, 1-hw.UnmetComputeSlowdown(ranks)/hw.ComputeSlowdown(ranks))
			t.Compute -= d
			t.CommExposed += d
		}
		return t, nil
	}
	run := min(ranks, hw.Cores)
	// A rank computing runs at the speed of the ranks that run with it, none of them meeting then
	// (the unmet slowdown); the rest of its priced time it waits, descheduled or at collectives.
	own := min(1, hw.UnmetComputeSlowdown(run)/hw.ComputeSlowdown(ranks))
	frac := 1 - own // of the priced compute, the share a rank is descheduled
	if len(segments) > 0 {
		var total, atColl float64
		for _, w := range segments {
			r := w * own // the segment's own running time
			n := math.Max(1, math.Ceil(r/GoTimeSlice))
			total += w
			atColl += w * (1 - own) / n
		}
		frac = atColl / total
	}
	d := t.Compute * frac
	t.Compute -= d
	t.CommExposed += d
	return t, &Sharing{Ranks: ranks, Cores: hw.Cores, Running: run, Segments: len(segments), Descheduled: d}
}

// commShare is exposed communication over the step (0 when there is no step).
func commShare(t reports.StepTime) float64 {
	if t.Step <= 0 {
		return 0
	}
	return t.CommExposed / t.Step
}

// SpreadOf is the spread of a row's measurement: the lowest and highest of the round medians, or
// with one round the first and third quartiles of its steps (seconds).
func SpreadOf(roundMedians []float64, steps []time.Duration) Spread {
	var lo, hi, mid float64
	switch {
	case len(roundMedians) >= 2:
		lo, hi = slices.Min(roundMedians), slices.Max(roundMedians)
		mid = median(roundMedians)
	case len(steps) > 0:
		s := make([]float64, len(steps))
		for i, d := range steps {
			s[i] = d.Seconds()
		}
		slices.Sort(s)
		lo, hi, mid = quantile(s, 0.25), quantile(s, 0.75), quantile(s, 0.5)
	default:
		return Spread{}
	}
	sp := Spread{Low: lo, High: hi}
	if mid > 0 {
		sp.Rel = (hi - lo) / mid
	}
	return sp
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return quantile(s, 0.5)
}

// quantile of sorted s by linear interpolation between order statistics.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	x := q * float64(len(s)-1)
	i := int(math.Floor(x))
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// RowInput is what MakeRow needs of one (strategy, mesh).
type RowInput struct {
	Strategy string
	Mesh     strategies.Mesh
	Pred     *costmodel.Result
	Sim      *sim.Result
	// Runs are the measured runs, one per round; Steps every post-warm-up step time of them all.
	Runs  []*exec.Result
	Steps []time.Duration
	// OtherCPU is the share of the CPU other processes used during each run.
	OtherCPU []float64
	// Warmup is the number of warm-up steps of every run.
	Warmup int
	// PredPhases is the predicted time of the row's mechanisms (PredictedPhases).
	PredPhases map[string]float64
}

// MakeRow builds a row from its prediction, simulation and runs, against ref (single-device
// training) for the losses and parameters; hw is the profile predicted with.
func MakeRow(in RowInput, ref *exec.Result, hw *hardware.Hardware) Row {
	row := Row{Row: reports.Row{Strategy: in.Strategy, Mesh: in.Mesh.String(), Ranks: in.Mesh.Devices()}}
	row.Predicted = PredictedSample(in.Pred)
	segs := Segments(in.Sim)
	coll := in.Mesh.Meets()
	row.Predicted.Time, row.Sharing = SplitSharing(row.Predicted.Time, row.Ranks, hw, segs, coll)
	row.Measured = MeasuredSample(in.Runs, exec.Median(in.Steps), in.Warmup)
	row.Predicted.Phases = in.PredPhases
	row.Simulated = SimulatedSample(in.Sim, row.Predicted)
	row.Simulated.Phases = SimulatedPhases(in.Sim, in.PredPhases, row.Ranks/max(1, in.Mesh.DP*in.Mesh.CP*in.Mesh.TP))
	row.Simulated.Time, _ = SplitSharing(row.Simulated.Time, row.Ranks, hw, segs, coll)
	row.Plan = in.Pred.Plan
	row.Rounds = len(in.Runs)
	row.OtherCPU = in.OtherCPU
	per := len(in.Steps) / max(1, len(in.Runs))
	for i := range in.Runs {
		row.RoundSteps = append(row.RoundSteps, exec.Median(in.Steps[i*per:(i+1)*per]).Seconds())
	}
	row.Spread = SpreadOf(row.RoundSteps, in.Steps)
	if n := len(in.Runs); n > 0 {
		last := in.Runs[n-1]
		row.Loss = last.Losses
		m := exec.Compare(last, ref)
		row.MaxRelDiff, row.WorstParam = m.Worst, m.WorstParam.Name
	}
	e := &row.Errors
	e.StepTimeAPE = ape(row.Predicted.Time.Step, row.Measured.Time.Step)
	e.SimStepTimeAPE = ape(row.Simulated.Time.Step, row.Measured.Time.Step)
	e.CommSharePred, e.CommShareMeas = commShare(row.Predicted.Time), commShare(row.Measured.Time)
	e.CommShareErr = e.CommSharePred - e.CommShareMeas
	e.CommBytesAbs, e.MemoryRel = map[string]float64{}, map[string]float64{}
	for _, d := range strategies.DimNames() {
		e.CommBytesAbs[d] = math.Abs(row.Predicted.CommBytes[d] - row.Measured.CommBytes[d])
	}
	for _, c := range append(append([]string{}, exec.Categories...), "peak") {
		p, m := row.Predicted.Memory[c], row.Measured.Memory[c]
		if m == 0 {
			// Nothing measured: 0 when nothing was predicted either, else a 100% error (JSON
			// has no infinity).
			e.MemoryRel[c] = 0
			if p != 0 {
				e.MemoryRel[c] = 1
			}
			continue
		}
		e.MemoryRel[c] = math.Abs(p-m) / m
	}
	for _, ph := range phasesOf(row.Predicted, row.Measured) {
		if e.PhaseRel == nil {
			e.PhaseRel = map[string]float64{}
		}
		p, m := row.Predicted.Phases[ph], row.Measured.Phases[ph]
		e.PhaseRel[ph] = ape(p, m)
		if m == 0 && p != 0 {
			e.PhaseRel[ph] = 1
		}
	}
	row.MemoryErrors = MemoryErrors(row, in.Runs)
	return row
}

// ExactMemory are the memory categories whose prediction must equal the measurement to the
// byte: what a rank holds for the whole step (parameters, gradients, optimizer state) and what
// it keeps from forward to backward (activations), all fixed by the Program's shapes. Workspace,
// communication buffers and the peak depend on when transient buffers come and go, and are
// reported as errors in percent only.
var ExactMemory = []string{"params", "grads", "optimizer", "activations"}

// MemoryErrors are a row's memory errors: every place where exec found that the ranks held
// memory other than the Program declares (exec.Result.MemoryErrors, of every run), and every
// category of ExactMemory whose measured bytes differ from the prediction.
func MemoryErrors(row Row, runs []*exec.Result) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, e := range r.MemoryErrors {
			if !seen[e] {
				seen[e] = true
				out = append(out, "exec: "+e)
			}
		}
	}
	var more float64 // measured above predicted, over ExactMemory
	for _, c := range ExactMemory {
		p, m := row.Predicted.Memory[c], row.Measured.Memory[c]
		if p != m {
			more += m - p
			sign := "+"
			if m < p {
				sign = ""
			}
			out = append(out, fmt.Sprintf("%s: predicted %s bytes per rank, measured %s (%s%s): the Program the prediction priced and what the kernels held differ",
				c, reports.Commas(int64(p)), reports.Commas(int64(m)), sign, reports.Commas(int64(m-p))))
		}
	}
	if pc, mc := row.Predicted.Memory["comm"], row.Measured.Memory["comm"]; more != 0 && pc-mc == more {
		out = append(out, fmt.Sprintf("the %s bytes measured above the prediction in those categories are the %s the prediction counts as communication buffers and exec does not: the same bytes, counted in another category",
			reports.Commas(int64(more)), reports.Commas(int64(pc-mc))))
	}
	return out
}

func ape(pred, meas float64) float64 {
	if meas == 0 {
		return 0
	}
	return math.Abs(pred-meas) / meas
}

// Summarize is the accuracy over rows.
func Summarize(rows []Row) Summary {
	s := Summary{Rows: len(rows), MemoryMaxRelError: map[string]float64{}}
	for _, r := range rows {
		n := float64(len(rows))
		s.StepTimeMAPE += r.Errors.StepTimeAPE / n
		s.SimStepTimeMAPE += r.Errors.SimStepTimeAPE / n
		if r.Errors.StepTimeAPE >= s.StepTimeMaxAPE {
			s.StepTimeMaxAPE = r.Errors.StepTimeAPE
			s.WorstStepTimeStrategy = r.Label()
		}
		ce := math.Abs(r.Errors.CommShareErr)
		s.CommShareMeanAbsErr += ce / n
		if ce >= s.CommShareMaxAbsErr {
			s.CommShareMaxAbsErr = ce
			s.WorstCommShareRow = r.Label()
		}
		s.MaxSpread = max(s.MaxSpread, r.Spread.Rel)
		for _, v := range r.Errors.CommBytesAbs {
			s.CommBytesMaxAbsError = max(s.CommBytesMaxAbsError, v)
		}
		for k, v := range r.Errors.MemoryRel {
			s.MemoryMaxRelError[k] = max(s.MemoryMaxRelError[k], v)
		}
		s.MaxRelDiffVsSingle = max(s.MaxRelDiffVsSingle, r.MaxRelDiff)
		if len(r.MemoryErrors) > 0 {
			s.MemoryErrorRows++
		}
		for k, v := range r.Errors.PhaseRel {
			if s.PhaseMaxRelError == nil {
				s.PhaseMaxRelError = map[string]float64{}
			}
			s.PhaseMaxRelError[k] = max(s.PhaseMaxRelError[k], v)
		}
	}
	return s
}
