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

// eventsPerLayer is about how many simulator events one microbatch costs per transformer layer:
// the forward and backward ops of a layer and their collectives (measured: 46 to 49 on GPT-3 175B
// and Llama-2 7B under 1F1B and ZeRO-3; recompute adds the forward again, so 60 covers it).
const eventsPerLayer = 60

// SimEvents estimates the events sim.Simulate processes for st on m: each pipeline rank is
// simulated once for its layers (sim's symmetry), every microbatch runs every layer forward and
// backward, so about microbatches x layers x eventsPerLayer. It lets a caller decide what it can
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
	return mb*layers*eventsPerLayer + 1000
}

// Simulate lowers st on m to a Program and simulates one step on hw (program.Lower,
// costmodel.NewCoster, sim.Simulate), returning the simulated step time.
func Simulate(m *model.Model, hw *hardware.Hardware, st strategies.Strategy) (units.Seconds, error) {
	p, err := program.Lower(m, st)
	if err != nil {
		return 0, err
	}
	c, err := costmodel.NewCoster(p, hw)
	if err != nil {
		return 0, err
	}
	r, err := sim.Simulate(p, c, sim.Options{})
	if err != nil {
		return 0, err
	}
	return r.Step, nil
}
