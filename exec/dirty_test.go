package exec

import (
	"context"
	"math"
	"testing"
)

// TestDirtyOutputsAreOverwritten: the outputs exec does not zero when it recycles a buffer (rank.out)
// are filled with NaN first, and every strategy family must still train to the same losses, bit
// for bit: a kernel that left an element of its output unwritten would read NaN into the loss.
func TestDirtyOutputsAreOverwritten(t *testing.T) {
	llama, gpt := tinyModels(t)
	for _, c := range []struct {
		name string
		s    string
	}{
		{"llama", "dp=2,tp=2,sp=on,mbs=2,optimizer=adam"},
		{"llama", "dp=2,zero=3,recompute=full,mbs=1"},
		{"llama", "pp=2,dp=2,zero=1,mbs=1"},
		{"llama", "tp=2,recompute=selective,mbs=2"},
		{"gpt", "pp=2,tp=2,schedule=1f1b,mbs=1"},
	} {
		m := llama
		if c.name == "gpt" {
			m = gpt
		}
		cfg := tenSteps(t, m, c.s)
		cfg.Steps = 3
		clean, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.s, err)
		}
		poisonDirty = true
		dirty, err := Run(context.Background(), cfg)
		poisonDirty = false
		if err != nil {
			t.Fatalf("%s %s poisoned: %v", c.name, c.s, err)
		}
		for i, l := range dirty.Losses {
			if math.Float64bits(l) != math.Float64bits(clean.Losses[i]) {
				t.Errorf("%s %s: step %d loss %v with recycled outputs poisoned, %v without", c.name, c.s, i+1, l, clean.Losses[i])
			}
		}
	}
}
