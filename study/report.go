package study

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// Statuses of a report row.
const (
	StatusOK         = "ok"         // a strategy fits; the row has numbers
	StatusInfeasible = "infeasible" // the planner searched and nothing fits (Reason says why)
	StatusRefused    = "refused"    // the planner refused the question (Reason is its error)
	StatusOverLimit  = "over limit" // more GPUs than the hardware has; not planned
)

// Row is one cell for one objective, with what the report derives from its plan.
type Row struct {
	Cell      Cell
	Model     *Model
	Variant   *Variant
	Objective string
	Status    string
	Reason    string
	Record    *Record       // nil when over limit
	Best      *search.Entry // the winner; nil unless Status is ok
	Label     string        // the winner's short strategy name
	// Mesh of the winner.
	Mesh strategies.Mesh
	// TimeToTrain is the token budget over the winner's tokens per second (closed form), in
	// seconds; GPUHours = GPUs x TimeToTrain / 3600; Cost = GPUHours x price (HasCost when the
	// hardware has a price).
	TimeToTrain float64
	GPUHours    float64
	Cost        float64
	HasCost     bool
	// SmallestFit is the smallest GPU count at which some strategy of this model fits on this
	// hardware variant (0: none of the swept counts): the smallest swept count, or with
	// fit_search the smallest found below it. FitHow says which, FitArgs is the plan command
	// line of the count found by the search (nil for a swept count).
	SmallestFit int
	FitHow      string
	FitArgs     []string
	// PlanArgs is the `tpsim plan` command line that reproduces the row.
	PlanArgs []string
}

// Report is everything the outputs show, in the study's fixed order.
type Report struct {
	Study   *Study
	Version string
	Rows    []Row // cells in order, objectives in the file's order within a cell
}

// HardwareArg is what `tpsim plan --hardware` takes for variant v: the preset name, or the JSON
// file the report writes under hardware/.
func HardwareArg(dir string, v *Variant) string {
	if v.Preset {
		return v.Name
	}
	return dir + "/hardware/" + v.Name + ".json"
}

// NewReport joins the records (in the order of st.Jobs) with the study. dir is the output
// directory as the user wrote it (for the command lines).
func NewReport(st *Study, res *Results, version, dir string) (*Report, error) {
	records := res.Records
	jobs := st.Jobs(version)
	if len(jobs) != len(records) {
		return nil, fmt.Errorf("study: %d records for %d jobs", len(records), len(jobs))
	}
	byCell := map[int]map[string]int{}
	for i, j := range jobs {
		if records[i].Key != j.Key {
			return nil, fmt.Errorf("study: record %d has key %s, job %s", i, records[i].Key, j.Key)
		}
		if byCell[j.Cell] == nil {
			byCell[j.Cell] = map[string]int{}
		}
		byCell[j.Cell][j.Objective] = i
	}
	rep := &Report{Study: st, Version: version}
	fit := map[[2]int]int{} // (model, variant) -> smallest fitting GPUs
	for ci, c := range st.Cells {
		for _, obj := range st.File.Objectives {
			row := Row{Cell: c, Model: &st.Models[c.Model], Variant: &st.Variants[c.Variant], Objective: obj}
			if c.Limit != "" {
				row.Status, row.Reason = StatusOverLimit, c.Limit
				rep.Rows = append(rep.Rows, row)
				continue
			}
			ji := byCell[ci][obj]
			r := &records[ji]
			row.Record = r
			row.PlanArgs = st.PlanArgs(jobs[ji], HardwareArg(dir, row.Variant))
			switch {
			case r.Error != "":
				row.Status, row.Reason = StatusRefused, r.Error
			case r.Plan == nil || len(r.Plan.Top) == 0 || !r.Plan.Top[0].Feasible:
				row.Status = StatusInfeasible
				if r.Plan != nil {
					row.Reason = firstLine(r.Plan.Explanation)
				}
			default:
				row.Status = StatusOK
				row.Best = &r.Plan.Top[0]
				ws, err := ParseWinner(row.Best.Strategy)
				if err != nil {
					return nil, fmt.Errorf("study: the plan's winner %q: %w", row.Best.Strategy, err)
				}
				row.Label, row.Mesh = search.Label(ws), ws.Mesh
				if tps := row.Best.TokensPerS; tps > 0 {
					row.TimeToTrain = st.File.Tokens / tps
					row.GPUHours = float64(c.GPUs) * row.TimeToTrain / 3600
					if p := row.Variant.Entry.PricePerGPUHour; p > 0 {
						row.Cost, row.HasCost = row.GPUHours*p, true
					}
				}
				k := [2]int{c.Model, c.Variant}
				if g, ok := fit[k]; !ok || c.GPUs < g {
					fit[k] = c.GPUs
				}
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	type fitFound struct {
		how  string
		g    int
		args []string
	}
	found := map[[2]int]fitFound{}
	for _, f := range res.Fits {
		k := [2]int{f.Model, f.Variant}
		if f.Swept != fit[k] {
			return nil, fmt.Errorf("study: fit search of %s on %s starts from %d GPUs; the smallest swept count that fits is %d",
				st.Models[f.Model].Name, st.Variants[f.Variant].Name, f.Swept, fit[k])
		}
		n := len(f.Probes)
		s := fitFound{g: f.Smallest, how: fmt.Sprintf("searched: %d counts tried between %d and %d", n, f.Lo, f.Swept)}
		if n == 0 {
			s.how = fmt.Sprintf("searched: no count between %d and %d to try", f.Lo, f.Swept)
		}
		if f.Smallest < f.Swept {
			v := &st.Variants[f.Variant]
			s.args = st.PlanArgs(st.probe(f.Model, f.Variant, f.Smallest, version), HardwareArg(dir, v))
		} else if n > 0 {
			s.how += ", none fits"
		}
		found[k] = s
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		k := [2]int{r.Cell.Model, r.Cell.Variant}
		r.SmallestFit, r.FitHow = fit[k], "swept"
		if s, ok := found[k]; ok {
			r.SmallestFit, r.FitHow, r.FitArgs = s.g, s.how, s.args
		}
	}
	return rep, nil
}

// StrategyArg is a winner's strategy as `tpsim predict --strategy` takes it: as the cost model
// printed it, less seq=0, which a model without a sequence (an MLP) prints and which is Parse's
// default but which Parse refuses written out.
func StrategyArg(s string) string {
	var keep []string
	for _, kv := range strings.Split(s, ",") {
		if kv != "seq=0" {
			keep = append(keep, kv)
		}
	}
	return strings.Join(keep, ",")
}

// ParseWinner reads a winner's strategy as the cost model printed it.
func ParseWinner(s string) (strategies.Strategy, error) { return strategies.Parse(StrategyArg(s)) }

// PredictArgs is the `tpsim predict` command line that prices the row's winner alone; nil
// unless the row has one.
func (r Row) PredictArgs() []string {
	if r.Best == nil {
		return nil
	}
	return []string{"predict", "--model", r.PlanArgs[2], "--hardware", r.PlanArgs[4], "--strategy", StrategyArg(r.Best.Strategy)}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// CSVHeader is the header of cells.csv.
var CSVHeader = []string{"model", "params", "hardware", "base_hardware", "what_if", "gpus", "nodes", "objective", "status", "reason",
	"strategy", "label", "pp", "dp", "cp", "tp", "step_s", "sim_step_s", "measured_step_s", "tokens_per_s", "mfu", "peak_bytes", "capacity_bytes",
	"compute_s", "comm_exposed_s", "bubble_s", "optimizer_s", "global_batch", "seq", "tokens", "time_to_train_s", "gpu_hours", "price_per_gpu_hour", "cost",
	"smallest_fitting_gpus", "smallest_fit_how", "smallest_fit_command", "searched", "feasible", "plan_command", "predict_command"}

// CSVRows are the rows of cells.csv.
func (rep *Report) CSVRows() [][]string {
	var out [][]string
	for _, r := range rep.Rows {
		v := r.Variant
		what := ""
		if v.WhatIf != nil {
			what = v.WhatIf.Name
		}
		nodes := ""
		if v.NodeSize > 0 {
			nodes = strconv.Itoa((r.Cell.GPUs + v.NodeSize - 1) / v.NodeSize)
		}
		row := []string{r.Model.Name, strconv.FormatInt(r.Model.Params, 10), v.Name, v.Base, what, strconv.Itoa(r.Cell.GPUs), nodes, r.Objective, r.Status, r.Reason}
		blank := func(n int) {
			for range n {
				row = append(row, "")
			}
		}
		if b := r.Best; b != nil {
			sim, meas := "", ""
			if b.SimStep != nil {
				sim = reports.Number(*b.SimStep)
			}
			if r.Record.MeasuredStep != nil {
				meas = reports.Number(*r.Record.MeasuredStep)
			}
			row = append(row, b.Strategy, r.Label, strconv.Itoa(r.Mesh.PP), strconv.Itoa(r.Mesh.DP), strconv.Itoa(r.Mesh.CP), strconv.Itoa(r.Mesh.TP),
				reports.Number(float64(b.Time.Step)), sim, meas, reports.Number(b.TokensPerS), reports.Number(b.MFU), reports.Number(float64(b.Memory.Peak)), reports.Number(float64(v.HW.Device.Memory)),
				reports.Number(float64(b.Time.Compute)), reports.Number(float64(b.Time.CommExposed)), reports.Number(float64(b.Time.Bubble)), reports.Number(float64(b.Time.Optimizer)),
				strconv.Itoa(r.Record.Plan.GlobalBatch), strconv.Itoa(r.Record.Plan.Seq), reports.Number(rep.Study.File.Tokens),
				reports.Number(r.TimeToTrain), reports.Number(r.GPUHours))
			if r.HasCost {
				row = append(row, reports.Number(v.Entry.PricePerGPUHour), reports.Number(r.Cost))
			} else {
				blank(2)
			}
		} else {
			blank(24)
		}
		fit := ""
		if r.SmallestFit > 0 {
			fit = strconv.Itoa(r.SmallestFit)
		}
		searched, feasible := "", ""
		if r.Record != nil && r.Record.Plan != nil {
			searched, feasible = strconv.Itoa(r.Record.Plan.Searched), strconv.Itoa(r.Record.Plan.Feasible)
		}
		cmd := ""
		if r.PlanArgs != nil {
			cmd = "tpsim " + ShellJoin(r.PlanArgs)
		}
		pcmd := ""
		if a := r.PredictArgs(); a != nil {
			pcmd = "tpsim " + ShellJoin(a)
		}
		fcmd := ""
		if r.FitArgs != nil {
			fcmd = "tpsim " + ShellJoin(r.FitArgs)
		}
		how := r.FitHow
		if r.SmallestFit == 0 && how == "swept" {
			how = "swept, none fits"
		}
		row = append(row, fit, how, fcmd, searched, feasible, cmd, pcmd)
		out = append(out, row)
	}
	return out
}

// ShellJoin quotes args for a POSIX shell where they need it.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ',' || r == '+' || r == ':' ||
				(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
		}) < 0 {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
