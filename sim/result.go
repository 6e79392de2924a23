package sim

import (
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

func (n *node) span() Span {
	stream := "compute"
	if !n.compute && !n.task {
		stream = "comm"
	}
	return Span{Rank: n.rank, Stream: stream, Async: n.async, Task: n.task, Dim: n.op.Dim, Stage: n.stage, Micro: n.micro, Phase: n.op.Phase, Kind: n.op.Kind, Module: n.op.Module, Start: n.start, End: n.end}
}

func (e *engine) result(p *program.Program, opt Options) *Result {
	res := &Result{Events: e.count, Utilization: make([]float64, len(e.main))}
	last := -1
	for i, n := range e.nodes {
		if last < 0 || n.end > e.nodes[last].end {
			last = i
		}
		if opt.Spans {
			res.Spans = append(res.Spans, n.span())
		}
	}
	if last < 0 {
		return res
	}
	res.Step = e.nodes[last].end
	res.CriticalRank = e.nodes[last].rank
	busy := make([]float64, len(e.main))
	for r, ids := range e.main {
		var prevEnd units.Seconds
		for _, id := range ids {
			n := e.nodes[id]
			d := n.end - n.start
			if n.compute {
				busy[r] += float64(d)
			}
			if n.task {
				busy[r] += float64(n.computePart)
			}
			if r == res.CriticalRank {
				wait := n.start - prevEnd
				switch {
				case n.task:
					res.Compute += n.computePart
					res.CommExposed += n.commPart
					if n.slowed {
						res.CommExposed += d - n.cost
					}
				case n.op.Kind == program.OpStep:
					res.Optimizer += d
				case n.compute && n.slowed:
					// What the rank's own communication beside it added (engine.retime) is
					// exposed communication, as the closed form counts it.
					res.Compute += n.cost
					res.CommExposed += d - n.cost
				case n.compute:
					res.Compute += d
				case n.op.Kind != program.OpRecv:
					res.CommExposed += d
				}
				// Waiting on asynchronous communication is exposed communication; waiting on a
				// neighbouring stage is bubble (counted as the remainder).
				if wait > 0 && n.critDep >= 0 && e.nodes[n.critDep].async {
					res.CommExposed += wait
				}
			}
			prevEnd = n.end
		}
	}
	// The remainder, rounded to zero when it is only floating-point noise.
	res.Bubble = res.Step - res.Compute - res.CommExposed - res.Optimizer
	if res.Bubble < 1e-9*res.Step {
		res.Bubble = 0
	}
	for r := range busy {
		if res.Step > 0 {
			res.Utilization[r] = busy[r] / float64(res.Step)
		}
	}
	for id := last; id >= 0 && !opt.NoCriticalPath; id = e.nodes[id].critDep {
		res.CriticalPath = append(res.CriticalPath, e.nodes[id].span())
	}
	for i, j := 0, len(res.CriticalPath)-1; i < j; i, j = i+1, j-1 {
		res.CriticalPath[i], res.CriticalPath[j] = res.CriticalPath[j], res.CriticalPath[i]
	}
	return res
}
