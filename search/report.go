package search

import (
	"fmt"
	"strconv"

	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
)

// Table is plan.csv: the top candidates ranked, with the closed form's step time, tokens/s, MFU,
// peak GiB, bytes per mesh dimension and, when the simulator re-ranked it, the simulated step.
func (pr *Planned) Table() (header []string, rows [][]string) {
	header = []string{"rank", "strategy", "closed_form_step_s", "tokens_per_s", "mfu", "peak_gib", "pp_bytes", "dp_bytes", "cp_bytes", "tp_bytes", "sim_step_s"}
	for _, e := range pr.Out.Top {
		sim := ""
		if e.SimStep != nil {
			sim = strconv.FormatFloat(*e.SimStep, 'g', 4, 64)
		}
		st, _ := strategies.Parse(e.Strategy)
		rows = append(rows, []string{strconv.Itoa(e.Rank), Label(st),
			strconv.FormatFloat(float64(e.Time.Step), 'g', 4, 64),
			strconv.FormatFloat(e.TokensPerS, 'f', 0, 64),
			strconv.FormatFloat(e.MFU, 'f', 3, 64),
			strconv.FormatFloat(e.Memory.Peak.GiB(), 'f', 2, 64),
			reports.Number(float64(e.CommBytes["pp"])),
			reports.Number(float64(e.CommBytes["dp"])),
			reports.Number(float64(e.CommBytes["cp"])),
			reports.Number(float64(e.CommBytes["tp"])),
			sim})
	}
	return header, rows
}

// Figure is the plan's Pareto figure: every feasible candidate's step time against its peak
// memory (Scatter), the front and the winner, from one time source (pr.Out.TimeSource). It is nil
// when no candidate is feasible.
func (pr *Planned) Figure() (*reports.Figure, error) {
	if pr.Res.Feasible == 0 {
		return nil, nil
	}
	pts, w := pr.Scatter()
	all := make([]reports.Candidate, len(pts))
	for i, p := range pts {
		all[i] = reports.Candidate{StepTime: p.Step, PeakMemory: p.Peak}
	}
	var front []reports.Candidate
	for _, p := range pr.Out.Front {
		front = append(front, reports.Candidate{Label: p.Strategy, StepTime: p.Step, PeakMemory: p.Peak})
	}
	winner := &reports.Candidate{Label: w.Strategy, StepTime: w.Step, PeakMemory: w.Peak}
	title := fmt.Sprintf("%s on %d x %s: step time against peak memory (objective %s)", pr.Out.Model, pr.Out.GPUs, pr.Out.Hardware, pr.Out.Objective)
	return reports.Pareto(title, all, front, winner)
}
