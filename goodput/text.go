package goodput

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

// WriteComparison writes what tpsim goodput prints: the run (GPUs, steps, checkpoint, interval,
// MTBF), then the closed form cf and the simulation sim (of seed) side by side, the time in hours
// by where it went, the interruptions, goodput and effective training time.
func WriteComparison(w io.Writer, c Config, seed uint64, cf, sim Result) error {
	ew := &reports.ErrWriter{W: w}
	fmt.Fprintf(ew, "%d GPUs, %d steps of %v (%v with stragglers); checkpoint %.3g TB, stall %v, every %d steps (%v); job MTBF %.2f h\n\n",
		c.GPUs, c.Steps, c.StepTime, cf.StepTime, float64(cf.Checkpoint.Bytes)/1e12, cf.Checkpoint.Stall, cf.IntervalSteps, cf.Interval, float64(cf.MTBF)/3600)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tCLOSED FORM\tSIMULATION (seed %d)\n", seed)
	hours := func(s units.Seconds) string { return fmt.Sprintf("%.1f h", float64(s)/3600) }
	for _, row := range []struct {
		name string
		a, b units.Seconds
	}{
		{"wall", cf.Wall, sim.Wall}, {"useful", cf.Useful, sim.Useful}, {"stragglers", cf.Stragglers, sim.Stragglers},
		{"checkpoints", cf.Checkpoints, sim.Checkpoints}, {"recompute", cf.Recompute, sim.Recompute}, {"restarts", cf.Restarts, sim.Restarts},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.name, hours(row.a), hours(row.b))
	}
	fmt.Fprintf(tw, "interruptions\t%.1f\t%.0f\n", cf.TotalInterruptions(), sim.TotalInterruptions())
	fmt.Fprintf(tw, "goodput\t%.1f%%\t%.1f%%\n", 100*cf.Goodput, 100*sim.Goodput)
	fmt.Fprintf(tw, "effective training time\t%.1f%%\t%.1f%%\n", 100*cf.EffectiveTrainingTime, 100*sim.EffectiveTrainingTime)
	tw.Flush()
	return ew.Err
}
