package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// sampleOf turns a cost-model Result into a reports.Sample.
func predictedSample(r *costmodel.Result) reports.Sample {
	s := reports.Sample{Memory: map[string]float64{}, CommBytes: map[string]float64{}}
	s.Time = reports.StepTime{Step: float64(r.Time.Step), Compute: float64(r.Time.Compute), CommExposed: float64(r.Time.CommExposed),
		Bubble: float64(r.Time.Bubble), Optimizer: float64(r.Time.Optimizer)}
	m := r.Memory
	for k, v := range map[string]units.Bytes{"params": m.Params, "grads": m.Grads, "optimizer": m.Optimizer, "activations": m.Activations,
		"workspace": m.Workspace, "comm": m.Comm, "peak": m.Peak} {
		s.Memory[k] = float64(v)
	}
	for k, v := range r.CommBytes {
		s.CommBytes[k] = float64(v)
	}
	return s
}

func measuredSample(res *exec.Result) reports.Sample {
	s := reports.Sample{Memory: map[string]float64{}, CommBytes: map[string]float64{}}
	// The breakdown is of one step of the slowest rank; its parts are scaled to the median step
	// (what they do not cover, the rank's bookkeeping between ops, goes with them pro rata).
	b := res.Breakdown
	step := res.StepTime.Seconds()
	k := 0.0
	if sum := (b.Compute + b.Comm + b.Optimizer).Seconds(); sum > 0 {
		k = step / sum
	}
	s.Time = reports.StepTime{Step: step, Compute: k * b.Compute.Seconds(), CommExposed: k * b.Comm.Seconds(), Optimizer: k * b.Optimizer.Seconds()}
	// Memory: the most loaded rank. Bytes sent: the mean over ranks, which is what DESIGN.md's
	// 2(p-1)/p n per rank means: when p does not divide n, ring chunks differ by one element and
	// some ranks send a few bytes more than others, but the group sends 2(p-1) n in all.
	for _, r := range res.Ranks {
		for k, v := range r.PeakBytes {
			s.Memory[k] = max(s.Memory[k], float64(v))
		}
		for k, v := range r.CommBytes {
			s.CommBytes[k] += float64(v) / float64(len(res.Ranks))
		}
	}
	return s
}

func simulatedSample(r *sim.Result, pred reports.Sample) *reports.Sample {
	s := reports.Sample{Memory: pred.Memory, CommBytes: pred.CommBytes}
	s.Time = reports.StepTime{Step: float64(r.Step), Compute: float64(r.Compute), CommExposed: float64(r.CommExposed), Bubble: float64(r.Bubble), Optimizer: float64(r.Optimizer)}
	return &s
}

func makeRow(pt gridPoint, cfg exec.Config, pred *costmodel.Result, simRes *sim.Result, meas, ref *exec.Result) resultRow {
	row := resultRow{Row: reports.Row{Strategy: pt.Strategy, Mesh: pt.Mesh.String(), Ranks: pt.Mesh.Devices()}}
	row.Predicted = predictedSample(pred)
	row.Measured = measuredSample(meas)
	row.Simulated = simulatedSample(simRes, row.Predicted)
	row.Plan = pred.Plan
	row.Loss = meas.Losses
	row.MaxRelDiff = exec.MaxRelDiff(meas, ref)
	e := &row.Errors
	e.StepTimeAPE = ape(row.Predicted.Time.Step, row.Measured.Time.Step)
	e.SimStepTimeAPE = ape(row.Simulated.Time.Step, row.Measured.Time.Step)
	e.CommBytesAbs, e.MemoryRel = map[string]float64{}, map[string]float64{}
	for _, d := range strategies.DimOrder {
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
	return row
}

func ape(pred, meas float64) float64 {
	if meas == 0 {
		return 0
	}
	return math.Abs(pred-meas) / meas
}

func summarize(rows []resultRow) compareSummary {
	s := compareSummary{Rows: len(rows), MemoryMaxRelError: map[string]float64{}}
	for _, r := range rows {
		s.StepTimeMAPE += r.Errors.StepTimeAPE / float64(len(rows))
		s.SimStepTimeMAPE += r.Errors.SimStepTimeAPE / float64(len(rows))
		if r.Errors.StepTimeAPE >= s.StepTimeMaxAPE {
			s.StepTimeMaxAPE = r.Errors.StepTimeAPE
			s.WorstStepTimeStrategy = r.Label()
		}
		for _, v := range r.Errors.CommBytesAbs {
			s.CommBytesMaxAbsError = max(s.CommBytesMaxAbsError, v)
		}
		for k, v := range r.Errors.MemoryRel {
			s.MemoryMaxRelError[k] = max(s.MemoryMaxRelError[k], v)
		}
		s.MaxRelDiffVsSingle = max(s.MaxRelDiffVsSingle, r.MaxRelDiff)
	}
	return s
}

// simSpans turns the simulated timeline into trace spans (one lane per pipeline rank: the
// simulator runs one rank for all its data- and tensor-parallel replicas).
func simSpans(r *sim.Result, mesh strategies.Mesh) []reports.Span {
	var out []reports.Span
	for _, s := range r.Spans {
		thread := "compute"
		cat := s.Phase.String()
		if s.Stream == "comm" {
			thread, cat = "communication", "communication"
		}
		out = append(out, reports.Span{Process: fmt.Sprintf("rank %d (x%d replicas)", s.Rank, mesh.Devices()/mesh.PP), Thread: thread,
			Name: string(s.Kind) + " " + s.Module, Cat: cat, Start: float64(s.Start), Dur: float64(s.End - s.Start)})
	}
	return out
}

// measuredSpans is the measured timeline of the breakdown's step, from its own start.
func measuredSpans(res *exec.Result) []reports.Span {
	step := res.Breakdown.StepIndex
	var t0 float64 = math.Inf(1)
	for _, r := range res.Ranks {
		for _, e := range r.Events {
			if e.Step == step {
				t0 = min(t0, e.Start.Seconds())
			}
		}
	}
	var out []reports.Span
	for _, r := range res.Ranks {
		proc := fmt.Sprintf("rank %d (dp=%d,tp=%d)", r.Rank, r.Coords["dp"], r.Coords["tp"])
		for _, e := range r.Events {
			if e.Step != step {
				continue
			}
			thread, cat := "compute", e.Phase
			if e.Comm {
				thread, cat = "communication", "communication"
			}
			out = append(out, reports.Span{Process: proc, Thread: thread, Name: e.Kind + " " + e.Module, Cat: cat,
				Start: e.Start.Seconds() - t0, Dur: (e.End - e.Start).Seconds()})
		}
	}
	return out
}

// writeCompare writes results.json, results.csv, the figures and report.md into dir.
func writeCompare(dir string, res *compareResults, tlTitles []string, tl [][]reports.Span) error {
	f, err := os.Create(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	if err := writeJSON(f, res); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "results.csv"), res.Rows); err != nil {
		return err
	}
	figs, err := drawCompareFigures(dir, res.Model, rowsOf(res.Rows))
	if err != nil {
		return err
	}
	if len(tl) > 0 {
		fig, err := reports.Timelines("Timeline of one step: simulated (top) and measured (bottom)\n"+res.Model, tlTitles, tl)
		if err != nil {
			return err
		}
		if err := reports.Save(fig, dir, "timeline", reports.DefaultWidth, reports.DefaultHeight); err != nil {
			return err
		}
		figs = append(figs, figure{"timeline", "Timeline of one step, simulated against measured (" + tlTitles[1] + ")"})
	}
	rf, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	if err := writeReport(rf, res, figs); err != nil {
		rf.Close()
		return err
	}
	return rf.Close()
}

func rowsOf(rows []resultRow) []reports.Row {
	out := make([]reports.Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}

type figure struct{ base, caption string }

// drawCompareFigures draws the five comparison figures of rows into dir.
func drawCompareFigures(dir, name string, rows []reports.Row) ([]figure, error) {
	type mk func() (*reports.Figure, error)
	list := []struct {
		base, caption string
		make          mk
	}{
		{"predicted_vs_measured", "Step time, predicted against measured, with the y = x line and a ±15% band",
			func() (*reports.Figure, error) {
				return reports.PredictedVsMeasured("Step time: predicted vs measured\n"+name, rows, reports.DefaultBand)
			}},
		{"step_breakdown", "Step time by strategy: compute, exposed communication, bubble and optimizer, predicted (P), simulated (S) and measured (M)",
			func() (*reports.Figure, error) {
				return reports.StepBreakdown("Where the step goes, predicted vs measured\n"+name, rows)
			}},
		{"memory", "Memory per rank by category, predicted and measured",
			func() (*reports.Figure, error) {
				return reports.MemoryByCategory("Memory per rank by category\n"+name, rows)
			}},
		{"comm_bytes", "Bytes sent per rank per step on each mesh dimension, predicted and measured",
			func() (*reports.Figure, error) {
				return reports.CommBytesByDim("Bytes sent per rank per step\n"+name, rows)
			}},
		{"scaling", "Step time against the number of ranks, per strategy",
			func() (*reports.Figure, error) { return reports.Scaling("Step time vs ranks\n"+name, rows) }},
	}
	var out []figure
	for _, f := range list {
		fig, err := f.make()
		if err != nil {
			return nil, fmt.Errorf("figure %s: %v", f.base, err)
		}
		if err := reports.Save(fig, dir, f.base, reports.DefaultWidth, reports.DefaultHeight); err != nil {
			return nil, err
		}
		out = append(out, figure{f.base, f.caption})
	}
	return out, nil
}

var csvHeader = []string{"strategy", "mesh", "ranks",
	"pred_step_s", "meas_step_s", "sim_step_s", "step_ape", "sim_step_ape",
	"pred_compute_s", "meas_compute_s", "pred_comm_exposed_s", "meas_comm_s", "pred_optimizer_s", "meas_optimizer_s",
	"pred_params_b", "meas_params_b", "pred_grads_b", "meas_grads_b", "pred_optimizer_b", "meas_optimizer_b",
	"pred_activations_b", "meas_activations_b", "pred_workspace_b", "meas_workspace_b", "pred_peak_b", "meas_peak_b",
	"pred_dp_bytes", "meas_dp_bytes", "pred_tp_bytes", "meas_tp_bytes", "max_rel_diff_vs_single"}

func writeCSV(path string, rows []resultRow) error {
	var out [][]string
	g := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, r := range rows {
		p, m := r.Predicted, r.Measured
		out = append(out, []string{r.Strategy, r.Mesh, fmt.Sprint(r.Ranks),
			g(p.Time.Step), g(m.Time.Step), g(r.Simulated.Time.Step), g(r.Errors.StepTimeAPE), g(r.Errors.SimStepTimeAPE),
			g(p.Time.Compute), g(m.Time.Compute), g(p.Time.CommExposed), g(m.Time.CommExposed), g(p.Time.Optimizer), g(m.Time.Optimizer),
			g(p.Memory["params"]), g(m.Memory["params"]), g(p.Memory["grads"]), g(m.Memory["grads"]), g(p.Memory["optimizer"]), g(m.Memory["optimizer"]),
			g(p.Memory["activations"]), g(m.Memory["activations"]), g(p.Memory["workspace"]), g(m.Memory["workspace"]), g(p.Memory["peak"]), g(m.Memory["peak"]),
			g(p.CommBytes["dp"]), g(m.CommBytes["dp"]), g(p.CommBytes["tp"]), g(m.CommBytes["tp"]), g(r.MaxRelDiff)})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := reports.CSV(f, csvHeader, out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tableRows are the rows of the terminal and Markdown tables.
func tableRows(rows []resultRow) ([]string, [][]string) {
	header := []string{"strategy", "mesh", "step predicted", "step simulated", "step measured", "error", "peak mem pred", "peak mem meas", "params/rank", "bytes sent/rank/step", "max rel diff"}
	var out [][]string
	for _, r := range rows {
		var sent float64
		for _, v := range r.Measured.CommBytes {
			sent += v
		}
		out = append(out, []string{r.Strategy, r.Mesh,
			unitsSeconds(r.Predicted.Time.Step), unitsSeconds(r.Simulated.Time.Step), unitsSeconds(r.Measured.Time.Step),
			fmt.Sprintf("%+.1f%%", 100*(r.Predicted.Time.Step-r.Measured.Time.Step)/r.Measured.Time.Step),
			units.Bytes(r.Predicted.Memory["peak"]).String(), units.Bytes(r.Measured.Memory["peak"]).String(),
			units.Bytes(r.Measured.Memory["params"]).String(), commas(int64(sent)), fmt.Sprintf("%.2g", r.MaxRelDiff)})
	}
	return header, out
}

func writeCompareTable(w io.Writer, res *compareResults, dir string) error {
	header, rows := tableRows(res.Rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := res.Summary
	fmt.Fprintf(w, "\nstep time: mean absolute error %.1f%% (simulator %.1f%%), worst %.1f%% (%s); comm bytes max error %.0f B; params/grads/optimizer/activations max error %.2g%%, peak %.1f%%\n",
		100*s.StepTimeMAPE, 100*s.SimStepTimeMAPE, 100*s.StepTimeMaxAPE, s.WorstStepTimeStrategy, s.CommBytesMaxAbsError,
		100*max(s.MemoryMaxRelError["params"], s.MemoryMaxRelError["grads"], s.MemoryMaxRelError["optimizer"], s.MemoryMaxRelError["activations"]),
		100*s.MemoryMaxRelError["peak"])
	for _, rec := range res.Recommendation {
		fmt.Fprintf(w, "%s: %s. %s\n", rec.Objective, rec.Choice, rec.Reason)
	}
	for _, sk := range res.Skipped {
		fmt.Fprintf(w, "skipped %s %s: %s\n", sk.Strategy, sk.Mesh, sk.Reason)
	}
	_, err := fmt.Fprintf(w, "\nwrote %s: results.json, results.csv, report.md and figures\n", dir)
	return err
}

func writeReport(w io.Writer, res *compareResults, figs []figure) error {
	ew := &errWriter{w: w}
	ew.printf("# tpsim compare: %s\n\n", res.Model)
	ew.printf("%s (%s parameters), global batch %d, %d steps (the first a warm-up), seed %d, %s, plan %s for tp and hybrid. ",
		res.Model, shortCount(res.Params), res.Batch, res.Steps, res.Seed, res.Optimizer, res.Plan)
	ew.printf("Predicted by the cost model and the simulator from the `%s` profile (%s), measured by training with `tpsim exec` on goroutine ranks. The prediction never sees the measurement.\n\n",
		res.Profile.Name, res.Profile.Source)
	header, rows := tableRows(res.Rows)
	if err := reports.Markdown(ew, header, rows); err != nil {
		return err
	}
	s := res.Summary
	ew.printf("\n## Accuracy\n\n")
	ew.printf("- Step time: mean absolute percentage error **%.1f%%** over %d rows (simulator %.1f%%), worst %.1f%% (%s).\n",
		100*s.StepTimeMAPE, s.Rows, 100*s.SimStepTimeMAPE, 100*s.StepTimeMaxAPE, s.WorstStepTimeStrategy)
	ew.printf("- Bytes sent per rank: largest difference between predicted and measured %.0f bytes.\n", s.CommBytesMaxAbsError)
	cats := make([]string, 0, len(s.MemoryMaxRelError))
	for k := range s.MemoryMaxRelError {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	var parts []string
	for _, k := range cats {
		parts = append(parts, fmt.Sprintf("%s %.2g%%", k, 100*s.MemoryMaxRelError[k]))
	}
	ew.printf("- Memory per rank, largest relative error by category: %s. Workspace includes kernel scratch that the Program does not list, so it is measured above the prediction.\n", strings.Join(parts, ", "))
	ew.printf("- Every strategy's losses and parameters after %d steps match single-device training to a relative difference of %.2g or less.\n", res.Steps, s.MaxRelDiffVsSingle)
	ew.printf("\nWhere the prediction is off, and why: %s\n", explainErrors(res))
	ew.printf("\n## Recommendation\n\n")
	for _, rec := range res.Recommendation {
		ew.printf("- **%s: %s.** %s\n", rec.Objective, rec.Choice, rec.Reason)
	}
	if len(res.Skipped) > 0 {
		ew.printf("\nNot run:\n\n")
		for _, sk := range res.Skipped {
			ew.printf("- %s %s: %s\n", sk.Strategy, sk.Mesh, sk.Reason)
		}
	}
	ew.printf("\n## Figures\n\n")
	for _, f := range figs {
		ew.printf("### %s\n\n![%s](%s.png)\n\n", f.caption, f.caption, f.base)
	}
	return ew.err
}

// explainErrors names the rows whose step time is furthest off and the part of the step that
// differs most.
func explainErrors(res *compareResults) string {
	var worst []resultRow
	for _, r := range res.Rows {
		if r.Errors.StepTimeAPE > 0.15 {
			worst = append(worst, r)
		}
	}
	if len(worst) == 0 {
		return "every row is within 15% of its measured step time."
	}
	var out []string
	for _, r := range worst {
		p, m := r.Predicted.Time, r.Measured.Time
		part, d := "compute", p.Compute-m.Compute
		if math.Abs(p.CommExposed-m.CommExposed) > math.Abs(d) {
			part, d = "communication", p.CommExposed-m.CommExposed
		}
		if math.Abs(p.Optimizer-m.Optimizer) > math.Abs(d) {
			part, d = "the optimizer", p.Optimizer-m.Optimizer
		}
		dir := "over"
		if d < 0 {
			dir = "under"
		}
		out = append(out, fmt.Sprintf("%s is %+.0f%% off, mostly because %s is %spredicted by %v (predicted %v, measured %v)",
			r.Label(), 100*(p.Step-m.Step)/m.Step, part, dir, units.Seconds(math.Abs(d)),
			units.Seconds(pick(part, p)), units.Seconds(pick(part, m))))
	}
	return strings.Join(out, "; ") + ". Ranks are goroutines sharing this machine's cores, so runs of more ranks than cores depend on how the Go scheduler and gonum's own worker goroutines share them, which the profile's measured slowdown describes only on average."
}

func pick(part string, t reports.StepTime) float64 {
	switch part {
	case "communication":
		return t.CommExposed
	case "the optimizer":
		return t.Optimizer
	}
	return t.Compute
}
