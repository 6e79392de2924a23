package compare

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
)

// TimeProducts returns hw with the matrix products of the points' Programs that it does not time
// yet (hardware.Efficiency.GEMMTimes) timed alone on one core of this machine, as calibrate times
// its grid (calibrate.TimeGEMMs): no one line prices every shape of this CPU's GEMM to within
// tens of percent, and the model compare runs may be none that calibrate knows. hw itself is not
// changed. A profile that is not of a CPU (no GEMMParallelMACs: a GPU preset under
// --foreign-hardware) is returned as it is.
func TimeProducts(ctx context.Context, hw *hardware.Hardware, pts []Point, progress io.Writer) (*hardware.Hardware, error) {
	if hw.Cores == 0 || hw.GEMMParallelMACs <= 0 {
		return hw, nil
	}
	var todo []hardware.GEMMTime
	for _, pt := range pts {
		for _, s := range pt.Program.Stages {
			for _, ops := range [][]program.Op{s.Forward, s.Backward} {
				for i := range ops {
					if ops[i].Kind != program.OpLinear {
						continue
					}
					for _, g := range costmodel.HostGEMMs(&ops[i]) {
						if _, ok := hw.Efficiency.Measured(g); !ok && !slices.ContainsFunc(todo, g.Same) {
							todo = append(todo, g)
						}
					}
				}
			}
		}
	}
	if len(todo) == 0 {
		return hw, nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "tpsim compare: timing the model's %d matrix products that the profile lacks, each alone on one core\n", len(todo))
	}
	timed, err := calibrate.TimeGEMMs(ctx, todo)
	if err != nil {
		return nil, err
	}
	out := *hw
	out.Efficiency.GEMMTimes = append(slices.Clip(hw.Efficiency.GEMMTimes), timed...)
	return &out, nil
}
