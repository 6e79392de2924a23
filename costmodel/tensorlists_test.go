package costmodel

import (
	"math"
	"testing"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// With tensorlists=on (DeepSpeed's ZeRO-3 of 2021) every ZeRO-3 parameter gather and gradient
// reduce-scatter of the forward and backward costs, besides the collective, one copy per rank and
// parameter: group x len(Params) x the preset's list_copy_us, written out here op by op; nothing
// else changes, and with overlap off (every collective on the critical path, one pipeline stage)
// the step grows by exactly the microbatches' sum of those copies. Below ZeRO-3 it changes nothing.
// (Under full recompute it also gathers again for the backward, which changes the Program:
// program's TestZeRO3RecomputeGathersOncePerBackward.)
func TestTensorListsCopies(t *testing.T) {
	m := mustPreset(t, "gpt3-1.3b")
	hw := loadHW(t, "a100-80g")
	us := hw.Efficiency.ListCopyMicros
	if us <= 0 {
		t.Fatalf("the a100-80g preset has list_copy_us %g: the test needs the fitted value", us)
	}
	for _, base := range []string{"dp=16,mbs=1,gbs=32,zero=3,overlap=off", "dp=8,mbs=2,gbs=32,zero=3,overlap=off,recompute=selective", "dp=16,mbs=1,gbs=32,zero=1,overlap=off"} {
		off, err := program.Lower(m, mustParse(t, base))
		if err != nil {
			t.Fatal(err)
		}
		on, err := program.Lower(m, mustParse(t, base+",tensorlists=on"))
		if err != nil {
			t.Fatal(err)
		}
		cOff, err := NewCoster(off, hw)
		if err != nil {
			t.Fatal(err)
		}
		cOn, err := NewCoster(on, hw)
		if err != nil {
			t.Fatal(err)
		}
		var extra units.Seconds
		copies := 0
		for si, s := range on.Stages {
			for pi, ph := range [][]program.Op{s.Forward, s.Backward, s.Optimizer} {
				phOff := [][]program.Op{off.Stages[si].Forward, off.Stages[si].Backward, off.Stages[si].Optimizer}[pi]
				for i := range ph {
					op := &ph[i]
					if !op.Kind.IsComm() {
						continue
					}
					var want units.Seconds
					if on.Strategy.ZeRO == 3 && op.Dim == strategies.DimDP && op.Phase != program.Optimizer &&
						(op.Kind == program.OpAllGather || op.Kind == program.OpReduceScatter) {
						want = units.Seconds(float64(op.Group*len(op.Params)) * us * 1e-6)
						copies += op.Group * len(op.Params)
					}
					got := cOn.Comm(op) - cOff.Comm(&phOff[i])
					if math.Abs(float64(got-want)) > 1e-12 {
						t.Fatalf("%s: %s %s %s: tensorlists adds %v, want %v", base, op.Phase, op.Kind, op.Module, got, want)
					}
					if op.Phase != program.Optimizer {
						extra += want
					}
				}
			}
		}
		if (on.Strategy.ZeRO == 3) != (copies > 0) {
			t.Errorf("%s: %d copies priced", base, copies)
		}
		rOff, err := Predict(off, hw)
		if err != nil {
			t.Fatal(err)
		}
		rOn, err := Predict(on, hw)
		if err != nil {
			t.Fatal(err)
		}
		got, want := rOn.Time.Step-rOff.Time.Step, units.Seconds(on.Microbatches)*extra
		if math.Abs(float64(got-want)) > 1e-9*float64(rOff.Time.Step) {
			t.Errorf("%s: tensorlists=on adds %v to the step, want %d microbatches x %v = %v", base, got, on.Microbatches, extra, want)
		}
		t.Logf("%-48s %d copies per microbatch, step %v -> %v", base, copies, rOff.Time.Step, rOn.Time.Step)
	}
}
