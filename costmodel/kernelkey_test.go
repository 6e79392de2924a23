package costmodel

import (
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/testmodels"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// Every kernel a lowered op is priced by is one hardware declares (so exec/calibrate, which
// writes the rates, and the cost model, which reads them, cannot drift apart by a spelling), and
// the presets' every kind of op has one.
func TestKernelKeysAreDeclared(t *testing.T) {
	seen := map[hardware.Kernel]bool{}
	for _, c := range []struct{ model, strategy string }{
		{"seed-mlp", "dp=1"}, {"seed-mlp", "dp=1,optimizer=sgd"}, {"gpt-tiny", "tp=2"}, {"gpt-tiny", "dp=1"},
		{"llama", "tp=2,sp=on"}, {"llama", "dp=1,recompute=full"},
	} {
		m := testmodels.Llama(t, 2)
		if c.model != "llama" {
			var err error
			if m, err = model.Load(c.model); err != nil {
				t.Fatal(err)
			}
		}
		st, err := strategies.Parse(c.strategy)
		if err != nil {
			t.Fatal(err)
		}
		p, err := program.Lower(m, st.Resolve(m))
		if err != nil {
			t.Fatalf("%s %s: %v", c.model, c.strategy, err)
		}
		for _, s := range p.Stages {
			for _, ops := range [][]program.Op{s.Forward, s.Backward, s.Optimizer} {
				for i := range ops {
					k := KernelKey(&ops[i], st.Optimizer)
					if k == "" {
						continue
					}
					if !k.Known() {
						t.Errorf("%s %s: op %s is priced by kernel %q, which hardware does not declare", c.model, c.strategy, ops[i].Module+"."+string(ops[i].Kind), k)
					}
					seen[k] = true
				}
			}
		}
	}
	for _, k := range []hardware.Kernel{hardware.KernelReLU, hardware.KernelGELU.Backward(), hardware.KernelLayerNorm, hardware.KernelAdam, hardware.KernelSGD, hardware.KernelCrossEntropy} {
		if !seen[k] {
			t.Errorf("no lowered op is priced by kernel %q", k)
		}
	}
}
