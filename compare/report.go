package compare

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

// Figure is one figure written: its file base name (base.png, base.svg) and caption.
type Figure struct{ Base, Caption string }

// Timeline is the optional timeline figure: one simulated and one measured step of a row.
type Timeline struct {
	Titles []string
	Spans  [][]reports.Span
}

// WriteFiles writes results.json, results.csv, the figures and report.md into dir, each
// atomically (internal/atomicfile): an interrupted or failed write leaves the previous file or
// none, never half of one.
func WriteFiles(dir string, res *Results, tl *Timeline) error {
	var js bytes.Buffer
	if err := reports.WriteJSON(&js, res); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.json"), js.Bytes(), 0o644); err != nil {
		return err
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, res.Rows, res.Partial); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "results.csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	figs, err := DrawFigures(dir, res.Model, ReportRows(res.Rows))
	if err != nil {
		return err
	}
	if tl != nil && len(tl.Spans) > 0 {
		fig, err := reports.Timelines("Timeline of one step: simulated (top) and measured (bottom)\n"+res.Model, tl.Titles, tl.Spans)
		if err != nil {
			return err
		}
		if err := reports.Save(fig, dir, "timeline", reports.DefaultWidth, reports.DefaultHeight); err != nil {
			return err
		}
		figs = append(figs, Figure{"timeline", "Timeline of one step, simulated against measured (" + tl.Titles[len(tl.Titles)-1] + ")"})
	}
	var md bytes.Buffer
	if err := WriteReport(&md, res, figs); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644)
}

// figureSpec is one figure DrawFigures draws.
type figureSpec struct {
	base, caption string
	make          func() (*reports.Figure, error)
}

// DrawFigures draws the comparison figures of rows into dir (figureSpecs).
func DrawFigures(dir, name string, rows []reports.Row) ([]Figure, error) {
	var out []Figure
	for _, f := range figureSpecs(name, rows) {
		fig, err := f.make()
		if err != nil {
			return nil, fmt.Errorf("figure %s: %v", f.base, err)
		}
		if err := reports.Save(fig, dir, f.base, reports.DefaultWidth, reports.DefaultHeight); err != nil {
			return nil, err
		}
		out = append(out, Figure{f.base, f.caption})
	}
	return out, nil
}

// figureSpecs are the figures of rows: the five of every comparison, and the mechanisms figure
// (bubble, ZeRO gathers, recompute) when a row has any of them.
func figureSpecs(name string, rows []reports.Row) []figureSpec {
	list := []figureSpec{
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
	for _, r := range rows {
		if len(phasesOf(r.Predicted, r.Measured)) > 0 {
			list = append(list, figureSpec{"mechanisms", "Time per step of the pipeline bubble (the critical rank's), ZeRO's parameter all-gathers and recompute's replayed forward (per rank), predicted (P), simulated (S, the bubble) and measured (M)",
				func() (*reports.Figure, error) {
					return reports.PhaseTimes("Pipeline bubble, ZeRO gathers and recompute: predicted vs measured\n"+name, rows)
				}})
			break
		}
	}
	return list
}

// CSVHeader is the header of results.csv: seconds (_s) and shares at full precision, bytes (_b,
// _bytes) as integers where they are whole. partial is results.json's "partial" on every row:
// true when the compare was interrupted and the row holds only the rounds that finished.
var CSVHeader = []string{"strategy", "mesh", "ranks", "rounds",
	"pred_step_s", "meas_step_s", "sim_step_s", "step_ape", "sim_step_ape", "meas_step_low_s", "meas_step_high_s", "spread_rel",
	"pred_compute_s", "meas_compute_s", "pred_comm_exposed_s", "meas_comm_s", "pred_optimizer_s", "meas_optimizer_s",
	"pred_comm_share", "meas_comm_share", "comm_share_error",
	"pred_params_b", "meas_params_b", "pred_grads_b", "meas_grads_b", "pred_optimizer_b", "meas_optimizer_b",
	"pred_activations_b", "meas_activations_b", "pred_workspace_b", "meas_workspace_b", "pred_peak_b", "meas_peak_b",
	"pred_dp_bytes", "meas_dp_bytes", "pred_tp_bytes", "meas_tp_bytes", "max_other_cpu_share", "max_rel_diff_vs_single",
	"pred_pp_bytes", "meas_pp_bytes", "pred_bubble_s", "sim_bubble_s", "meas_bubble_s", "pred_zero_gather_s", "meas_zero_gather_s",
	"pred_recompute_s", "meas_recompute_s", "memory_errors", "partial"}

// num is reports.Number: integers as integers, other numbers at full precision.
func num(v float64) string { return reports.Number(v) }

// phaseCell is the CSV cell of mechanism ph of s: empty when s does not have it (a row without a
// pipeline has no bubble, which is not a bubble of 0 s).
func phaseCell(s *reports.Sample, ph string) string {
	if s == nil {
		return ""
	}
	v, ok := s.Phases[ph]
	if !ok {
		return ""
	}
	return num(v)
}

// WriteCSV writes results.csv of rows; partial marks them all as from an interrupted compare
// (Results.Partial), so that a CSV read alone cannot be taken for a finished one.
func WriteCSV(w io.Writer, rows []Row, partial bool) error {
	var out [][]string
	for _, r := range rows {
		p, m := r.Predicted, r.Measured
		other := -1.0
		for _, s := range r.OtherCPU {
			other = max(other, s)
		}
		out = append(out, []string{r.Strategy, r.Mesh, strconv.Itoa(r.Ranks), strconv.Itoa(r.Rounds),
			num(p.Time.Step), num(m.Time.Step), num(r.Simulated.Time.Step), num(r.Errors.StepTimeAPE), num(r.Errors.SimStepTimeAPE),
			num(r.Spread.Low), num(r.Spread.High), num(r.Spread.Rel),
			num(p.Time.Compute), num(m.Time.Compute), num(p.Time.CommExposed), num(m.Time.CommExposed), num(p.Time.Optimizer), num(m.Time.Optimizer),
			num(r.Errors.CommSharePred), num(r.Errors.CommShareMeas), num(r.Errors.CommShareErr),
			num(p.Memory["params"]), num(m.Memory["params"]), num(p.Memory["grads"]), num(m.Memory["grads"]), num(p.Memory["optimizer"]), num(m.Memory["optimizer"]),
			num(p.Memory["activations"]), num(m.Memory["activations"]), num(p.Memory["workspace"]), num(m.Memory["workspace"]), num(p.Memory["peak"]), num(m.Memory["peak"]),
			num(p.CommBytes["dp"]), num(m.CommBytes["dp"]), num(p.CommBytes["tp"]), num(m.CommBytes["tp"]), num(other), num(r.MaxRelDiff),
			num(p.CommBytes["pp"]), num(m.CommBytes["pp"]), phaseCell(&p, PhaseBubble), phaseCell(r.Simulated, PhaseBubble), phaseCell(&m, PhaseBubble),
			phaseCell(&p, PhaseGather), phaseCell(&m, PhaseGather), phaseCell(&p, PhaseRecompute), phaseCell(&m, PhaseRecompute),
			strconv.Itoa(len(r.MemoryErrors)), strconv.FormatBool(partial)})
	}
	return reports.CSV(w, CSVHeader, out)
}

// pctText is a share as a percentage: two significant digits below 1%, whole percent above.
func pctText(v float64) string {
	if 100*v < 1 {
		return fmt.Sprintf("%.2g%%", 100*v)
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func msText(s float64) string { return fmt.Sprintf("%.3g ms", s*1e3) }

// TableRows are the rows of the terminal and Markdown tables.
func TableRows(rows []Row) ([]string, [][]string) {
	header := []string{"strategy", "mesh", "step predicted", "step simulated", "step measured", "spread", "error", "comm share pred/meas",
		"peak mem pred", "peak mem meas", "params/rank", "bytes sent/rank/step", "max rel diff"}
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.Strategy, r.Mesh,
			msText(r.Predicted.Time.Step), msText(r.Simulated.Time.Step), msText(r.Measured.Time.Step),
			fmt.Sprintf("±%.0f%%", 50*r.Spread.Rel),
			fmt.Sprintf("%+.1f%%", 100*(r.Predicted.Time.Step-r.Measured.Time.Step)/r.Measured.Time.Step),
			fmt.Sprintf("%.0f%% / %.0f%%", 100*r.Errors.CommSharePred, 100*r.Errors.CommShareMeas),
			units.Bytes(r.Predicted.Memory["peak"]).String(), units.Bytes(r.Measured.Memory["peak"]).String(),
			units.Bytes(r.Measured.Memory["params"]).String(), reports.Commas(int64(math.Round(sentBytes(r)))), fmt.Sprintf("%.2g", r.MaxRelDiff)})
	}
	return header, out
}

// PhaseRows are the rows of the mechanisms table: one line per row and mechanism it has.
func PhaseRows(rows []Row) ([]string, [][]string) {
	header := []string{"strategy", "mesh", "mechanism", "predicted", "simulated", "measured", "error"}
	var out [][]string
	for _, r := range rows {
		for _, ph := range phasesOf(r.Predicted, r.Measured) {
			sim := "-"
			if r.Simulated != nil {
				if v, ok := r.Simulated.Phases[ph]; ok {
					sim = msText(v)
				}
			}
			meas, errText := "not matched", "-"
			if v, ok := r.Measured.Phases[ph]; ok {
				meas = msText(v)
				if v > 0 {
					errText = fmt.Sprintf("%+.0f%%", 100*(r.Predicted.Phases[ph]-v)/v)
				}
			}
			out = append(out, []string{r.Strategy, r.Mesh, phaseTitle[ph], msText(r.Predicted.Phases[ph]), sim, meas, errText})
		}
	}
	return header, out
}

// phaseTitle names each mechanism in tables and figures.
var phaseTitle = map[string]string{PhaseBubble: "pipeline bubble", PhaseGather: "ZeRO all-gathers", PhaseRecompute: "recompute"}

// accuracyLine is the one-line summary of the accuracy, for the terminal.
func accuracyLine(s Summary) string {
	line := fmt.Sprintf("step time: mean absolute error %.1f%% (simulator %.1f%%), worst %.1f%% (%s); exposed-communication share of the step off by %.0f points on average, worst %.0f (%s); comm bytes max error %.0f B; params/grads/optimizer/activations max error %.2g%%, peak %.1f%%",
		100*s.StepTimeMAPE, 100*s.SimStepTimeMAPE, 100*s.StepTimeMaxAPE, s.WorstStepTimeStrategy,
		100*s.CommShareMeanAbsErr, 100*s.CommShareMaxAbsErr, s.WorstCommShareRow, s.CommBytesMaxAbsError,
		100*max(s.MemoryMaxRelError["params"], s.MemoryMaxRelError["grads"], s.MemoryMaxRelError["optimizer"], s.MemoryMaxRelError["activations"]),
		100*s.MemoryMaxRelError["peak"])
	var ph []string
	for _, k := range reports.PhaseNames {
		if v, ok := s.PhaseMaxRelError[k]; ok {
			ph = append(ph, fmt.Sprintf("%s %.0f%%", phaseTitle[k], 100*v))
		}
	}
	if len(ph) > 0 {
		line += "; mechanisms' time max error: " + strings.Join(ph, ", ")
	}
	if s.MemoryErrorRows > 0 {
		line += fmt.Sprintf("; MEMORY ERRORS in %d rows", s.MemoryErrorRows)
	}
	return line
}

// WriteTable prints the comparison for the terminal: the table, the accuracy, the load warnings,
// the recommendation and what was skipped; dir is where the files went.
func WriteTable(w io.Writer, res *Results, dir string) error {
	ew := &reports.ErrWriter{W: w}
	if res.Partial {
		ew.Printf("PARTIAL: %s\n\n", res.Interrupted)
	}
	header, rows := TableRows(res.Rows)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	if ph, prow := PhaseRows(res.Rows); len(prow) > 0 {
		ew.Printf("\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(ph, "\t"))
		for _, r := range prow {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	ew.Printf("\n%s\n", accuracyLine(res.Summary))
	for _, r := range res.Rows {
		for _, e := range r.MemoryErrors {
			ew.Printf("memory error: %s: %s\n", r.Label(), e)
		}
	}
	for _, wn := range res.Load.Warnings {
		ew.Printf("warning: %s\n", wn)
	}
	for _, rec := range res.Recommendation {
		ew.Printf("%s: %s. %s\n", rec.Objective, rec.Choice, rec.Reason)
	}
	for _, sk := range res.Skipped {
		ew.Printf("skipped %s %s: %s\n", sk.Strategy, sk.Mesh, sk.Reason)
	}
	ew.Printf("\nwrote %s: results.json, results.csv, report.md and figures\n", dir)
	return ew.Err
}

// WriteReport writes report.md.
func WriteReport(w io.Writer, res *Results, figs []Figure) error {
	ew := &reports.ErrWriter{W: w}
	ew.Printf("# tpsim compare: %s\n\n", res.Model)
	if res.Partial {
		ew.Printf("**Partial: %s.**\n\n", res.Interrupted)
	}
	ew.Printf("%s (%s parameters), global batch %d, %d steps (the first a warm-up), %d rounds, seed %d, %s, plan %s for tp and hybrid. ",
		res.Model, reports.Commas(res.Params), res.Batch, res.Steps, res.RoundsDone, res.Seed, res.Optimizer, res.Plan)
	ew.Printf("Predicted by the cost model and the simulator from the `%s` profile (%s), measured by training with `tpsim exec` on goroutine ranks. The prediction never sees the measurement.\n\n",
		res.Profile.Name, res.Profile.Source)
	header, rows := TableRows(res.Rows)
	if err := reports.Markdown(ew, header, rows); err != nil {
		return err
	}
	s := res.Summary
	ew.Printf("\n## Accuracy\n\n")
	ew.Printf("- Step time: mean absolute percentage error **%.1f%%** over %d rows (simulator %.1f%%), worst %.1f%% (%s).\n",
		100*s.StepTimeMAPE, s.Rows, 100*s.SimStepTimeMAPE, 100*s.StepTimeMaxAPE, s.WorstStepTimeStrategy)
	ew.Printf("- Where the step goes: the predicted share of exposed communication is off by **%.0f points** on average, worst %.0f (%s). Where the ranks outnumber the cores, the prediction counts the time a rank waits, descheduled, at the collective that ends each stretch of compute shorter than the Go scheduler's 10 ms time slice as exposed communication (as exec measures it), and the rest of its descheduled time as compute; where each rank has a core, the time the early ranks wait at collectives for the slowest (the measured contention slowdown's excess over one rank alone) is exposed communication.\n",
		100*s.CommShareMeanAbsErr, 100*s.CommShareMaxAbsErr, s.WorstCommShareRow)
	ew.Printf("- Spread of the measured step over rounds: at most %.0f%% of the median (each row's range is in results.json); differences within it are ties.\n", 100*s.MaxSpread)
	ew.Printf("- Bytes sent per rank: largest difference between predicted and measured %.0f bytes.\n", s.CommBytesMaxAbsError)
	cats := make([]string, 0, len(s.MemoryMaxRelError))
	for k := range s.MemoryMaxRelError {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	var parts []string
	for _, k := range cats {
		parts = append(parts, fmt.Sprintf("%s %s", k, pctText(s.MemoryMaxRelError[k])))
	}
	ew.Printf("- Memory per rank, largest relative error by category: %s. Workspace includes kernel scratch that the Program does not list, so it is measured above the prediction.\n", strings.Join(parts, ", "))
	ew.Printf("- Every strategy's losses and parameters after %d steps match single-device training to a relative difference of %.2g or less.\n", res.Steps, s.MaxRelDiffVsSingle)
	ew.Printf("\nWhere the prediction is off, and why: %s\n", ExplainErrors(res))
	if ph, prow := PhaseRows(res.Rows); len(prow) > 0 {
		ew.Printf("\n## Pipeline bubble, ZeRO gathers and recompute\n\n")
		ew.Printf("Time per step of each mechanism a row has: predicted by the cost model (the bubble as it prices the step, the critical pipeline rank's; gathers and replayed forward ops at its price of each op, every microbatch's, averaged over pipeline ranks), simulated (the bubble, the critical rank's), and measured from exec's timeline (the bubble: the critical stage's pipeline receives, the stage of the rank that ends each step last; gathers and recompute: the time of those ops on every rank after the warm-up, as a share of the op time; each times the measured step).\n\n")
		if err := reports.Markdown(ew, ph, prow); err != nil {
			return err
		}
	}
	ew.Printf("\n## Memory errors\n\n")
	if s.MemoryErrorRows == 0 {
		ew.Printf("None: on every row exec found no memory held other than the Program declares, and %s bytes per rank are as predicted.\n", strings.Join(ExactMemory, ", "))
	}
	for _, r := range res.Rows {
		for _, e := range r.MemoryErrors {
			ew.Printf("- **%s**: %s\n", r.Label(), e)
		}
	}
	ew.Printf("\n## Load on this machine\n\n")
	l := res.Load
	var per []string
	for _, x := range l.Rounds {
		per = append(per, shareText(x))
	}
	ew.Printf("Other processes used %s of the CPU during the calibration of the profile and %s during the measurement rounds (warning above %.0f%%).\n",
		shareText(l.Calibration), strings.Join(per, ", "), 100*l.Threshold)
	for _, wn := range l.Warnings {
		ew.Printf("\n**Warning:** %s.\n", wn)
	}
	ew.Printf("\n## Recommendation\n\n")
	for _, rec := range res.Recommendation {
		ew.Printf("- **%s: %s.** %s\n", rec.Objective, rec.Choice, rec.Reason)
	}
	if len(res.Skipped) > 0 {
		ew.Printf("\nNot run:\n\n")
		for _, sk := range res.Skipped {
			ew.Printf("- %s %s: %s\n", sk.Strategy, sk.Mesh, sk.Reason)
		}
	}
	ew.Printf("\n## Figures\n\n")
	for _, f := range figs {
		ew.Printf("### %s\n\n![%s](%s.png)\n\n", f.Caption, f.Caption, f.Base)
	}
	return ew.Err
}

// ExplainErrors names the rows whose step time is furthest off and the part of the step that
// differs most.
func ExplainErrors(res *Results) string {
	var worst []Row
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
		if math.Abs(p.Bubble-m.Bubble) > math.Abs(d) {
			part, d = "the pipeline bubble", p.Bubble-m.Bubble
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
	return strings.Join(out, "; ") + ". Ranks are goroutines sharing this machine's cores, so runs of more ranks than cores depend on how the Go scheduler shares them, which the profile's measured slowdown describes only on average."
}

func pick(part string, t reports.StepTime) float64 {
	switch part {
	case "communication":
		return t.CommExposed
	case "the optimizer":
		return t.Optimizer
	case "the pipeline bubble":
		return t.Bubble
	}
	return t.Compute
}
