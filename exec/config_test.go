package exec

import (
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// MeshConfig splits the global batch over dp (gpt-tiny's batch is 8, presets.json), trains in
// fp32, reads the plan only when tp > 1, and refuses a batch dp does not divide.
func TestMeshConfig(t *testing.T) {
	m, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	s := MeshSettings{Optimizer: strategies.OptimizerAdam, Attention: strategies.AttentionFlash, Plan: "megatron", Steps: 3, Seed: 7, LR: 0.5}
	cfg, err := MeshConfig(m, strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 2}, s)
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.Strategy
	if st.GBS != 8 || st.MBS != 4 || st.Precision != strategies.PrecisionFP32 || st.Optimizer != strategies.OptimizerAdam ||
		st.Attention != strategies.AttentionFlash || st.Plan == nil || cfg.Steps != 3 || cfg.Seed != 7 || cfg.LR != 0.5 {
		t.Errorf("dp=2,tp=2: got gbs %d mbs %d precision %s optimizer %s attn %s plan %v steps %d seed %d lr %g; want 8 4 fp32 adam flash megatron 3 7 0.5",
			st.GBS, st.MBS, st.Precision, st.Optimizer, st.Attention, st.Plan, cfg.Steps, cfg.Seed, cfg.LR)
	}

	// No tp: the plan is not read, even a bad one.
	s.Plan, s.MBS, s.Batch = "no-such-style", 1, 4
	cfg, err = MeshConfig(m, strategies.Mesh{PP: 1, DP: 4, CP: 1, TP: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Strategy.GBS != 4 || cfg.Strategy.MBS != 1 || cfg.Strategy.Plan != nil {
		t.Errorf("dp=4 batch 4 mbs 1: got gbs %d mbs %d plan %v", cfg.Strategy.GBS, cfg.Strategy.MBS, cfg.Strategy.Plan)
	}
	if _, err := MeshConfig(m, strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 2}, s); err == nil || !strings.Contains(err.Error(), "no-such-style") {
		t.Errorf("tp=2 with a bad plan: err %v, want one naming the style", err)
	}

	s.Batch = 0
	_, err = MeshConfig(m, strategies.Mesh{PP: 1, DP: 3, CP: 1, TP: 1}, s)
	if want := "the batch of 8 samples does not split over dp=3 ranks; use --batch a multiple of 3 or dp among the divisors of 8"; err == nil || err.Error() != want {
		t.Errorf("dp=3: err %v, want %q", err, want)
	}
}
