package exec

import (
	"fmt"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// MeshSettings describe a run on a mesh given alone, without a strategy string: `tpsim exec
// --mesh`, the rows of `tpsim compare` and a study's measured winner.
type MeshSettings struct {
	// Optimizer and Attention are strategies' names (strategies.OptimizerSGD, ...AttentionEager),
	// already checked by the caller.
	Optimizer strategies.Optimizer
	Attention strategies.Attention
	// Plan is the tensor-parallel plan in strategies.ParsePlan form, read when the mesh has tp > 1.
	Plan string
	// Batch is the global batch in samples (0: the model's); MBS the microbatch per dp rank (0:
	// the whole local batch at once, one microbatch).
	Batch, MBS int
	Steps      int
	Seed       uint64
	LR         float64 // 0: LearningRate's default for the optimizer
}

// MeshConfig is the configuration of m on mesh with s: fp32 (exec trains in fp32), the default
// strategy of the mesh otherwise, the global batch split evenly over the dp ranks. A batch that
// does not split is an error that says which batches do.
func MeshConfig(m *model.Model, mesh strategies.Mesh, s MeshSettings) (Config, error) {
	st := strategies.Default(mesh)
	st.Precision = strategies.PrecisionFP32
	st.Optimizer, st.Attention = s.Optimizer, s.Attention
	if mesh.TP > 1 {
		plan, err := strategies.ParsePlan(s.Plan)
		if err != nil {
			return Config{}, err
		}
		st.Plan = plan
	}
	st.GBS = s.Batch
	st = st.Resolve(m)
	if st.GBS%mesh.DP != 0 {
		return Config{}, fmt.Errorf("the batch of %d samples does not split over dp=%d ranks; use --batch a multiple of %d or dp among the divisors of %d", st.GBS, mesh.DP, mesh.DP, st.GBS)
	}
	st.MBS = st.GBS / mesh.DP
	if s.MBS > 0 {
		st.MBS = s.MBS
	}
	return Config{Model: m, Strategy: st, Steps: s.Steps, Seed: s.Seed, LR: s.LR}, nil
}

// StrategyConfig is the configuration of m under spec, a strategy in strategies.Parse form as
// predict and sim read it: fp32 (exec trains in fp32), what exec cannot run refused (CheckSpec),
// and the settings in set (names of MeshSettings' fields as tpsim exec's flags: "optimizer",
// "attn", "plan", "batch", "mbs") taken from s over the strategy's own.
func StrategyConfig(m *model.Model, spec string, s MeshSettings, set map[string]bool) (Config, error) {
	st, err := strategies.Parse(spec)
	if err != nil {
		return Config{}, err
	}
	if err := CheckSpec(spec, st); err != nil {
		return Config{}, err
	}
	st.Precision = strategies.PrecisionFP32
	if set["plan"] && st.Mesh.TP > 1 {
		if st.Plan, err = strategies.ParsePlan(s.Plan); err != nil {
			return Config{}, err
		}
	}
	if set["optimizer"] {
		st.Optimizer = s.Optimizer
	}
	if set["attn"] {
		st.Attention = s.Attention
	}
	if set["batch"] {
		st.GBS = s.Batch
	}
	if set["mbs"] {
		st.MBS = s.MBS
	}
	return Config{Model: m, Strategy: st.Resolve(m), Steps: s.Steps, Seed: s.Seed, LR: s.LR}, nil
}
