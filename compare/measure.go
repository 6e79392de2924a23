package compare

import (
	"context"

	"github.com/tpsim/tpsim/hardware"
)

// Measure is tpsim compare after its grid: it finds the profile to predict with (HostProfile,
// calibrating when needed), times the points' matrix products and kernels alone (TimeKernels,
// and again before every round: o.Retime) and runs the rounds (Run) into res. Cancelled before
// the rounds, it returns ErrInterrupted with res.Rows empty; during them, ErrInterrupted with the
// rows of the rounds that finished, as Run.
func Measure(ctx context.Context, res *Results, pts []Point, host HostOptions, o Options) (*Timeline, error) {
	hw, load, err := HostProfile(ctx, host)
	if err == nil {
		base := hw
		hw, err = TimeKernels(ctx, base, pts, o.Progress)
		o.Retime = func(ctx context.Context) (*hardware.Hardware, error) { return TimeKernels(ctx, base, pts, o.Progress) }
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	res.Profile, res.Load = hw, load
	return Run(ctx, res, pts, o)
}
