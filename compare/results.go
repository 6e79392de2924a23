package compare

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/reports"
)

// Skipped is a (strategy, mesh) that was not run, and why.
type Skipped struct {
	Strategy string `json:"strategy"`
	Mesh     string `json:"mesh"`
	Reason   string `json:"reason"`
}

// Row is one row of results.json: the reports.Row (predicted, measured, simulated samples), the
// errors of the prediction, and how the measurement varied.
type Row struct {
	reports.Row
	Errors     Errors  `json:"errors"`
	MaxRelDiff float64 `json:"max_rel_diff_vs_single"`
	// WorstParam is the parameter closest to failing the match check (exec.Match.WorstParam).
	WorstParam string    `json:"worst_param_vs_single"`
	Loss       []float64 `json:"loss"`
	Plan       string    `json:"plan"`
	// Rounds is how many rounds measured this row (fewer than planned when interrupted).
	Rounds int `json:"rounds"`
	// RoundSteps is the median post-warm-up step time of each round, in seconds.
	RoundSteps []float64 `json:"round_step_s"`
	// Spread is how far the measured step time moved between rounds.
	Spread Spread `json:"spread"`
	// OtherCPU is the share of the machine's CPU that other processes used during each of this
	// row's runs (-1: unknown).
	OtherCPU []float64 `json:"other_cpu_share"`
	// MemoryErrors are the row's memory errors (MemoryErrors): memory the ranks held that the
	// Program does not declare, or params/grads/optimizer/activations bytes other than predicted.
	MemoryErrors []string `json:"memory_errors,omitempty"`
	// Sharing is how the prediction's compute was split when the ranks outnumber the cores
	// (SplitSharing); nil when they do not.
	Sharing *Sharing `json:"sharing,omitempty"`
}

// Spread is the range of the measured step time: the lowest and highest round median (with one
// round, the first and third quartiles of its steps), and that range over the median.
type Spread struct {
	Low  float64 `json:"low_s"`
	High float64 `json:"high_s"`
	Rel  float64 `json:"rel"`
}

// Overlaps reports whether the ranges of a and b overlap: their difference is within the spread.
func (a Spread) Overlaps(b Spread) bool { return a.Low <= b.High && b.Low <= a.High }

// Errors are the prediction's errors on one row.
type Errors struct {
	// StepTimeAPE is |predicted - measured| / measured of the step time.
	StepTimeAPE float64 `json:"step_time_ape"`
	// SimStepTimeAPE is the same for the simulator.
	SimStepTimeAPE float64 `json:"sim_step_time_ape"`
	// CommSharePred and CommShareMeas are exposed communication over the step, predicted and
	// measured; CommShareErr is their difference (predicted - measured, in shares: 0.1 is ten
	// points). This is the error of the breakdown, beside the total's.
	CommSharePred float64 `json:"comm_share_predicted"`
	CommShareMeas float64 `json:"comm_share_measured"`
	CommShareErr  float64 `json:"comm_share_error"`
	// CommBytesAbs is |predicted - measured| bytes per mesh dimension.
	CommBytesAbs map[string]float64 `json:"comm_bytes_abs_error"`
	// MemoryRel is |predicted - measured| / measured per memory category.
	MemoryRel map[string]float64 `json:"memory_rel_error"`
	// PhaseRel is |predicted - measured| / measured of the time of each mechanism the row has
	// (bubble, zero_gather, recompute).
	PhaseRel map[string]float64 `json:"phase_rel_error,omitempty"`
}

// Summary is the accuracy over all rows.
type Summary struct {
	Rows                  int                `json:"rows"`
	StepTimeMAPE          float64            `json:"step_time_mape"`
	StepTimeMaxAPE        float64            `json:"step_time_max_ape"`
	SimStepTimeMAPE       float64            `json:"sim_step_time_mape"`
	WorstStepTimeStrategy string             `json:"worst_step_time_row"`
	CommShareMeanAbsErr   float64            `json:"comm_share_mean_abs_error"`
	CommShareMaxAbsErr    float64            `json:"comm_share_max_abs_error"`
	WorstCommShareRow     string             `json:"worst_comm_share_row"`
	MaxSpread             float64            `json:"max_spread_rel"`
	CommBytesMaxAbsError  float64            `json:"comm_bytes_max_abs_error"`
	MemoryMaxRelError     map[string]float64 `json:"memory_max_rel_error"`
	MaxRelDiffVsSingle    float64            `json:"max_rel_diff_vs_single"`
	// MemoryErrorRows counts the rows with memory errors.
	MemoryErrorRows int `json:"memory_error_rows"`
	// PhaseMaxRelError is the largest relative error of each mechanism's time over the rows.
	PhaseMaxRelError map[string]float64 `json:"phase_max_rel_error,omitempty"`
}

// Recommendation is the choice for one objective and its reasons, in numbers. Tied lists the
// rows whose difference from Choice is within the spread of the measurement.
type Recommendation struct {
	Objective string   `json:"objective"`
	Choice    string   `json:"choice"`
	Tied      []string `json:"tied,omitempty"`
	Reason    string   `json:"reason"`
}

// Results is results.json.
type Results struct {
	Model     string `json:"model"`
	Params    int64  `json:"params"`
	Batch     int    `json:"batch"`
	Steps     int    `json:"steps"`
	Seed      uint64 `json:"seed"`
	Optimizer string `json:"optimizer"`
	Plan      string `json:"plan"`
	// RoundsPlanned and RoundsDone: fewer done when interrupted.
	RoundsPlanned int `json:"rounds_planned"`
	RoundsDone    int `json:"rounds_done"`
	// Partial is true when the comparison was interrupted: the rows hold the rounds that
	// finished, and Interrupted says where it stopped.
	Partial        bool               `json:"partial"`
	Interrupted    string             `json:"interrupted,omitempty"`
	Rows           []Row              `json:"rows"`
	Skipped        []Skipped          `json:"skipped"`
	Summary        Summary            `json:"summary"`
	Load           Load               `json:"load"`
	Recommendation []Recommendation   `json:"recommendation"`
	Profile        *hardware.Hardware `json:"calibration_profile"`
}

// ReportRows returns the reports.Row of each row, for the figures.
func ReportRows(rows []Row) []reports.Row {
	out := make([]reports.Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}

// MemoryError is compare's failure when rows have memory errors (exit status 1, after the files
// and the table are written, to the directory out), nil when none has.
func (res *Results) MemoryError(out string) error {
	n := res.Summary.MemoryErrorRows
	if n == 0 {
		return nil
	}
	var rows []string
	for _, r := range res.Rows {
		if len(r.MemoryErrors) > 0 {
			rows = append(rows, r.Label())
		}
	}
	return fmt.Errorf("memory errors in %d of %d rows (%s): the memory the ranks held differs from the prediction or from what the Program declares; see \"memory error\" above and report.md in %s",
		n, len(res.Rows), strings.Join(rows, ", "), out)
}
