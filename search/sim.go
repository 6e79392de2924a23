package search

import (
	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// eventsPerLayer is about how many simulator events one microbatch costs per transformer layer
// when the simulator lays the ops out one by one (ZeRO-3 with overlap): the forward and backward
// ops of a layer and their collectives (measured: 46 to 49 on GPT-3 175B and Llama-2 7B under
// ZeRO-3; recompute adds the forward again, so 60 covers it).
const eventsPerLayer = 60

// bucketEventsPerLayer is about how many events a layer adds beyond the tasks elsewhere: the runs
// of its last backward up to each DDP bucket's last gradient, and its optimizer ops (measured:
// 9.7 on GPT-3 175B's best pipelines on 256 GPUs, fewer on Llama-2 7B; 10 covers them).
const bucketEventsPerLayer = 10

// SimEvents estimates, from above, the events sim.Simulate processes for st on m: a task (one
// microbatch's forward or backward on one model chunk) whose ops do not overlap is one event, so
// a pipeline costs about 2 x microbatches x pp x vpp events plus, for each layer, the runs of
// each chunk's last backward that feed the DDP buckets and the optimizer's ops
// (bucketEventsPerLayer); ZeRO-3 with overlap prefetches inside every task, so every op is an
// event, about microbatches x layers x eventsPerLayer. It lets a caller decide what it can
// afford to simulate before building the Program.
func SimEvents(m *model.Model, st strategies.Strategy) int {
	st = st.Resolve(m)
	layers := 4
	if m.Transformer != nil {
		layers = m.Transformer.Layers
	}
	mb := 1
	if st.Mesh.DP > 0 && st.MBS > 0 {
		mb = max(1, st.GBS/(st.Mesh.DP*st.MBS))
	}
	if st.ZeRO == 3 && st.Overlap {
		return mb*layers*eventsPerLayer + 1000
	}
	return 2*mb*st.Mesh.PP*max(st.VPP, 1) + layers*bucketEventsPerLayer + 1000
}

// Simulate lowers st on m to a Program and simulates one step on hw (program.Lower,
// costmodel.NewCoster, sim.Simulate), returning the simulated step time.
func Simulate(m *model.Model, hw *hardware.Hardware, st strategies.Strategy) (units.Seconds, error) {
	p, err := program.Lower(m, st)
	if err != nil {
		return 0, err
	}
	return simulateProgram(p, hw)
}

func simulateProgram(p *program.Program, hw *hardware.Hardware) (units.Seconds, error) {
	c, err := costmodel.NewCoster(p, hw)
	if err != nil {
		return 0, err
	}
	r, err := sim.Simulate(p, c, sim.Options{NoCriticalPath: true}) // the step is all the planner reads
	if err != nil {
		return 0, err
	}
	return r.Step, nil
}
