package reports

// StepTime is the time of one training step and where it goes, in seconds. The JSON keys are
// those of the "time_s" object of `tpsim predict --json`. Compute + CommExposed + Bubble +
// Optimizer is the step time when the caller's breakdown is complete; reports draws the parts as
// given and does not check their sum.
type StepTime struct {
	Step        float64 `json:"step"`
	Compute     float64 `json:"compute"`
	CommExposed float64 `json:"comm_exposed"`
	Bubble      float64 `json:"bubble"`
	Optimizer   float64 `json:"optimizer"`
}

// Sample is one prediction, simulation or measurement of a (strategy, mesh). Its JSON keys are
// those of `tpsim predict --json` ("time_s", "memory_bytes", "comm_bytes"), so a prediction's JSON
// object decodes into a Sample (other keys are ignored).
type Sample struct {
	Time StepTime `json:"time_s"`
	// Memory is bytes per rank by category: the keys of MemoryCategories, and "peak" (the most
	// live bytes at once). Missing keys count as zero.
	Memory map[string]float64 `json:"memory_bytes"`
	// CommBytes is bytes sent per rank per step on each mesh dimension ("dp", "tp", "pp", "cp").
	CommBytes map[string]float64 `json:"comm_bytes"`
	// Phases is the time per step, in seconds, of the mechanisms of PhaseNames the strategy has
	// (a pipeline's bubble, the critical pipeline rank's; ZeRO's gathers and recompute's replayed
	// forward, per rank); nil or missing keys: the strategy does not have them (or they were not
	// measured).
	Phases map[string]float64 `json:"phase_s,omitempty"`
}

// PhaseNames are the keys of Sample.Phases, in the order the phase figure draws them: the
// pipeline bubble, ZeRO's parameter all-gathers over dp, and recompute's replayed forward ops.
var PhaseNames = []string{"bubble", "zero_gather", "recompute"}

// Row is one (strategy, mesh) of a comparison: what was predicted, what was measured and,
// optionally, what the simulator said.
type Row struct {
	Strategy  string  `json:"strategy"` // "dp", "tp", "hybrid", ...: one colour per strategy
	Mesh      string  `json:"mesh"`     // "dp=2,tp=2": labels points and bars
	Ranks     int     `json:"ranks"`    // the x of the scaling figure
	Predicted Sample  `json:"predicted"`
	Measured  Sample  `json:"measured"`
	Simulated *Sample `json:"simulated,omitempty"` // nil: not simulated
}

// Label names r in figures: "strategy mesh", or whichever of the two is not empty.
func (r Row) Label() string {
	switch {
	case r.Mesh == "":
		return r.Strategy
	case r.Strategy == "" || r.Strategy == r.Mesh:
		return r.Mesh
	default:
		return r.Strategy + " " + r.Mesh
	}
}

// MemoryCategories are the keys of Sample.Memory that the memory figure stacks, bottom to top.
var MemoryCategories = []string{"params", "grads", "optimizer", "activations", "workspace", "comm"}

// MeshDims are the mesh dimensions in the order the communication figure draws them, strategies.DimOrder's
// (reports imports no model package, so it spells the order once more); other keys
// of Sample.CommBytes follow in lexical order.
var MeshDims = []string{"pp", "dp", "cp", "tp"}

// Candidate is one strategy of a search, for the Pareto figure.
type Candidate struct {
	Label      string  `json:"label"`      // e.g. "dp=8,tp=8,pp=4 zero=1"
	StepTime   float64 `json:"step_s"`     // seconds
	PeakMemory float64 `json:"peak_bytes"` // bytes per device
}
