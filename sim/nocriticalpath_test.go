package sim

import (
	"testing"

	"github.com/tpsim/tpsim/model"
)

// NoCriticalPath drops the path and nothing else: the planner's simulations kept a million-span
// path each that it never read (the llama3 study's memory peak).
func TestNoCriticalPathKeepsTheStep(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("g", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	p := lowerT(t, m, "pp=4,gbs=8,schedule=1f1b,overlap=off")
	cost := unitCoster{fwd: 1, bwd: 2}
	full, err := Simulate(p, cost, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lean, err := Simulate(p, cost, Options{NoCriticalPath: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.CriticalPath) == 0 || len(lean.CriticalPath) != 0 {
		t.Errorf("critical path: %d spans by default, %d without; want some, then none", len(full.CriticalPath), len(lean.CriticalPath))
	}
	// (8 + 3)(1 x 3) = 33, Narayanan et al.'s 1F1B step worked out by hand (TestPipelineEqualsClosedForm).
	if lean.Step != full.Step || !near(lean.Step, 33) || lean.Compute != full.Compute || lean.Bubble != full.Bubble || lean.Events != full.Events {
		t.Errorf("without the path: step %v, compute %v, bubble %v; with it %v, %v, %v", lean.Step, lean.Compute, lean.Bubble, full.Step, full.Compute, full.Bubble)
	}
}
