package compare

import (
	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
)

// The mechanisms whose time compare reports beside the step's breakdown (reports.PhaseNames, the
// keys of reports.Sample.Phases): the pipeline bubble (time in pipeline receives, waiting for
// the neighbour stage), ZeRO's parameter all-gathers over dp (stage 3's before each layer's
// forward and backward; stages 1 and 2's of the updated parameters after the step) and full
// recompute's replayed forward ops. Selective recompute reruns the attention inside its
// backward op, which is not timed apart, so it has no recompute time of its own here.
const (
	PhaseBubble    = "bubble"
	PhaseGather    = "zero_gather"
	PhaseRecompute = "recompute"
)

// phaseOf is the mechanism op belongs to, "" for none.
func phaseOf(op *program.Op) string {
	switch {
	case op.Kind == program.OpRecv:
		return PhaseBubble
	case op.Kind == program.OpAllGather && op.Dim == strategies.DimDP:
		// Only ZeRO gathers over dp (tensor parallel's and sequence parallel's are over tp,
		// context parallel's over cp).
		return PhaseGather
	case op.Recompute && op.Fwd < 0:
		return PhaseRecompute
	}
	return ""
}

// PredictedPhases is the cost model's time of each mechanism per pipeline rank and step: the
// bubble as costmodel.Predict prices it, and the gathers and replayed forward ops at the
// Coster's price of each op (its roofline, or ring time for a collective), every microbatch's,
// averaged over the pipeline ranks. Only mechanisms the Program has are set.
func PredictedPhases(p *program.Program, c *costmodel.Coster, pred *costmodel.Result) map[string]float64 {
	out := map[string]float64{}
	for _, ph := range programPhases(p) {
		out[ph] = 0
	}
	m := float64(p.Microbatches)
	pp := float64(p.Strategy.Mesh.PP)
	for si := range p.Stages {
		s := p.Stages[si]
		for _, ops := range []struct {
			list  []program.Op
			times float64
		}{{s.Forward, m}, {s.Backward, m}, {s.Optimizer, 1}} {
			for i := range ops.list {
				op := &ops.list[i]
				ph := phaseOf(op)
				if ph == "" || ph == PhaseBubble {
					continue
				}
				t := c.Compute(op)
				if op.Kind.IsComm() {
					t = c.Comm(op)
				}
				out[ph] += float64(t) * ops.times / pp
			}
		}
	}
	if p.Strategy.Mesh.PP > 1 {
		out[PhaseBubble] = float64(pred.Time.Bubble)
	}
	return out
}

// SimulatedPhases is the simulator's time of the mechanisms pred has: its bubble, and its ZeRO
// gathers (every all-gather over dp it laid out, averaged over the pp pipeline ranks). The
// simulator's spans do not say which ops are recomputed, so recompute is left to the prediction.
func SimulatedPhases(r *sim.Result, pred map[string]float64, pp int) map[string]float64 {
	var out map[string]float64
	set := func(k string, v float64) {
		if out == nil {
			out = map[string]float64{}
		}
		out[k] = v
	}
	if _, ok := pred[PhaseBubble]; ok {
		set(PhaseBubble, float64(r.Bubble))
	}
	if _, ok := pred[PhaseGather]; ok {
		var g float64
		for _, sp := range r.Spans {
			if sp.Kind == program.OpAllGather && sp.Dim == strategies.DimDP {
				g += float64(sp.End - sp.Start)
			}
		}
		set(PhaseGather, g/float64(max(1, pp)))
	}
	return out
}

// eventOps returns, for every event of a rank, the Program op it ran: a rank runs each (stage,
// microbatch)'s forward or backward ops, and each stage's optimizer ops, in the Program's order
// (exec's rank.trainStep), so the n-th event of a (step, stage, microbatch, phase) is that list's
// n-th op. ok is false when an event does not match its op's kind and module (the Program is not
// the one the rank ran).
func eventOps(p *program.Program, events []exec.OpEvent) (ops []*program.Op, ok bool) {
	type key struct {
		step, stage, micro int
		phase              string
	}
	next := map[key]int{}
	fwd, bwd := program.Forward.String(), program.Backward.String()
	for _, e := range events {
		if e.Stage < 0 || e.Stage >= len(p.Stages) {
			return nil, false
		}
		s := p.Stages[e.Stage]
		k := key{e.Step, e.Stage, e.Micro, e.Phase}
		var list []program.Op
		switch e.Phase {
		case fwd:
			list = s.Forward
		case bwd:
			list = s.Backward
		default:
			list, k.micro = s.Optimizer, -1
		}
		i := next[k]
		next[k] = i + 1
		if i >= len(list) || string(list[i].Kind) != e.Kind || list[i].Module != e.Module {
			return nil, false
		}
		ops = append(ops, &list[i])
	}
	return ops, true
}

// measuredPhases adds each event's time, after the warm-up, to its mechanism in sum (seconds,
// over every rank and step); false when the events cannot be matched to the Program.
func measuredPhases(res *exec.Result, warmup int, sum map[string]float64) bool {
	if res.Program == nil {
		return false
	}
	for _, r := range res.Ranks {
		ops, ok := eventOps(res.Program, r.Events)
		if !ok {
			return false
		}
		for i, e := range r.Events {
			if e.Step < warmup {
				continue
			}
			if ph := phaseOf(ops[i]); ph != "" {
				sum[ph] += (e.End - e.Start).Seconds()
			}
		}
	}
	return true
}

// programPhases lists the mechanisms Program p has, in reports.PhaseNames' order.
func programPhases(p *program.Program) []string {
	has := map[string]bool{PhaseBubble: p.Strategy.Mesh.PP > 1}
	for si := range p.Stages {
		s := p.Stages[si]
		for _, list := range [][]program.Op{s.Forward, s.Backward, s.Optimizer} {
			for i := range list {
				if ph := phaseOf(&list[i]); ph != "" && ph != PhaseBubble {
					has[ph] = true
				}
			}
		}
	}
	var out []string
	for _, ph := range reports.PhaseNames {
		if has[ph] {
			out = append(out, ph)
		}
	}
	return out
}

// phasesOf lists the mechanisms a row has, in reports.PhaseNames' order.
func phasesOf(smp ...reports.Sample) []string {
	var out []string
	for _, ph := range reports.PhaseNames {
		for _, s := range smp {
			if _, ok := s.Phases[ph]; ok {
				out = append(out, ph)
				break
			}
		}
	}
	return out
}
