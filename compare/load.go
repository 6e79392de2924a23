package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/tpsim/tpsim/exec/calibrate"
)

// Load is the share of the machine's CPU that other processes used while the comparison ran
// (read from /proc: exec/calibrate's SampleCPU), during the calibration of the profile and
// during every measurement round. -1 is unknown (not Linux, or not readable).
type Load struct {
	// Threshold is the share above which a measurement counts as taken under load
	// (calibrate.BusyShare).
	Threshold float64 `json:"threshold"`
	// Calibration is the share during the profile's calibration (-1 unknown: a profile from a
	// file, or a cache older than the field).
	Calibration float64 `json:"calibration_other_cpu_share"`
	// CalibrationQuick: the profile is a quick (coarse) calibration.
	CalibrationQuick bool `json:"calibration_quick,omitempty"`
	// Rounds is the share during each measurement round; Max the largest.
	Rounds []float64 `json:"rounds_other_cpu_share"`
	Max    float64   `json:"max_other_cpu_share"`
	// Warnings say what the load does to the figures; empty on a quiet machine.
	Warnings []string `json:"warnings,omitempty"`
}

// SampleLoad returns the share of the CPU other processes use over d (-1 when unknown), for a
// check before measuring.
func SampleLoad(d time.Duration) float64 {
	a := calibrate.SampleCPU()
	time.Sleep(d)
	return calibrate.OtherCPUShare(a, calibrate.SampleCPU())
}

// NewLoad returns a Load with the calibration's share and no rounds yet.
func NewLoad(calibration float64) Load {
	return Load{Threshold: calibrate.BusyShare, Calibration: calibration, Max: -1}
}

// AddRound records the share of one round.
func (l *Load) AddRound(share float64) {
	l.Rounds = append(l.Rounds, share)
	l.Max = max(l.Max, share)
}

// Finish writes the warnings: one for a loaded calibration, one for loaded rounds, each saying
// what the load does to the figures.
func (l *Load) Finish(cores int) {
	l.Warnings = nil
	if l.CalibrationQuick {
		l.Warnings = append(l.Warnings, "the host profile is a quick calibration (fewer points, shorter timings): its rates are coarse; run `tpsim calibrate` for the full profile")
	}
	if l.Calibration > l.Threshold {
		l.Warnings = append(l.Warnings, fmt.Sprintf(
			"the host profile was calibrated while other processes used %.0f%% of the CPU (more than %.0f%%): its kernel and collective rates are slower than this machine alone, so the predicted step times come out too long, by up to %.2gx; run `tpsim calibrate` (or compare --recalibrate) when the machine is quiet",
			100*l.Calibration, 100*l.Threshold, slowerBy(l.Calibration)))
	}
	if l.Max > l.Threshold {
		var per []string
		for _, s := range l.Rounds {
			per = append(per, shareText(s))
		}
		free := ""
		if cores > 0 {
			free = fmt.Sprintf(" Only about %.1f of the %d cores were free for the ranks, so rows of more ranks than that also wait at collectives for descheduled ranks, which the predicted split (made for a quiet machine) counts as compute.",
				float64(cores)*(1-l.Max), cores)
		}
		l.Warnings = append(l.Warnings, fmt.Sprintf(
			"the machine is loaded: other processes used %s of the CPU during the measurement rounds (more than %.0f%%). The measured step times include the time they took from the ranks: up to %.2gx slower where the ranks use every core, more for rows with more ranks than cores, and noisier (see each row's spread); the prediction does not see that load, so it reads as too fast, and differences within the spread are ties.%s Compare on a quiet machine for figures to rely on",
			strings.Join(per, ", "), 100*l.Threshold, slowerBy(l.Max), free))
	}
}

// slowerBy is how much slower work that wants every core runs when other processes take share of
// them: 1 / (1 - share), with share the fraction of all cores' time.
func slowerBy(share float64) float64 {
	if share >= 0.95 {
		share = 0.95
	}
	return 1 / (1 - share)
}

func shareText(s float64) string {
	if s < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.0f%%", 100*s)
}
