package exec

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// MatchTolerance is the largest max_rel_diff_vs_single a run may show against single-device
// training (Compare): a step's loss relative to the reference's, or a parameter's difference
// beyond what float32 rounding can explain, relative to the update it received. Issue 33's
// acceptance; measured on gpt-tiny's strategies after 4 steps: at most 4.4e-8 (the losses), every
// parameter within its rounding floor, under Adam and SGD.
const MatchTolerance = 1e-5

// Report is a run checked against single-device training, in the JSON of `tpsim exec --json`
// (the keys of `tpsim predict --json` where they mean the same).
type Report struct {
	Model     string               `json:"model"`
	Strategy  string               `json:"strategy"`
	Plan      string               `json:"plan"`
	Devices   int                  `json:"devices"`
	Steps     int                  `json:"steps"`
	Seed      uint64               `json:"seed"`
	Optimizer strategies.Optimizer `json:"optimizer"`
	// MemoryBytes is the most loaded rank's peak per category; CommBytes the most bytes any rank
	// sent per step on each dimension.
	MemoryBytes map[string]int64 `json:"memory_bytes"`
	CommBytes   map[string]int64 `json:"comm_bytes"`
	Time        struct {
		Step        float64 `json:"step"`
		Compute     float64 `json:"compute"`
		CommExposed float64 `json:"comm_exposed"`
		Bubble      float64 `json:"bubble"`
		Optimizer   float64 `json:"optimizer"`
	} `json:"time_s"`
	StepTimes  []float64   `json:"step_times_s"`
	TokensPerS float64     `json:"tokens_per_s"`
	Loss       []JSONFloat `json:"loss"`
	MaxRelDiff JSONFloat   `json:"max_rel_diff_vs_single"`
	// MaxRelDiffAt names where MaxRelDiff is (a parameter or "loss step N"); WorstParam is the
	// parameter closest to failing (Match.WorstParam).
	MaxRelDiffAt string    `json:"max_rel_diff_at"`
	WorstParam   ParamDiff `json:"worst_param_vs_single"`
	// ParamsVsSingle is every parameter's comparison, by name (Compare).
	ParamsVsSingle []ParamDiff `json:"params_vs_single"`
	// OK is false when Failures lists why the run failed.
	OK       bool     `json:"ok"`
	Failures []string `json:"failures"`
	// BubbleFraction is the measured pipeline bubble of the median step on the wall clock,
	// DeviceBubbleFraction on the ranks' device clocks, timed as DeviceClock says (Result).
	BubbleFraction       float64 `json:"bubble_fraction"`
	DeviceBubbleFraction float64 `json:"device_bubble_fraction"`
	DeviceClock          string  `json:"device_clock"`
	// TrackedBytes and GoHeapLiveBytes are the allocators' bytes and the Go heap's live bytes at
	// the end of the run (Result); MemoryErrors where the ranks held other memory than the
	// Program declares.
	TrackedBytes     uint64             `json:"tracked_bytes"`
	UntrackedPerStep uint64             `json:"untracked_alloc_bytes_per_step"`
	GoHeapLiveBytes  uint64             `json:"go_heap_live_bytes"`
	MemoryErrors     []string           `json:"memory_errors"`
	Ranks            []RankResult       `json:"ranks"`
	GoHeapBytes      uint64             `json:"go_heap_bytes"`
	GoTotalAlloc     uint64             `json:"go_total_alloc_bytes"`
	Collectives      []CollectiveRecord `json:"collectives"`
	// Ops are the durations of every op of the slowest rank in the median step.
	Ops           []OpRecord  `json:"ops"`
	SingleDevice  []JSONFloat `json:"loss_single_device"`
	MeasuredNotes string      `json:"notes"`
}

// OpRecord is one executed op and how long it took.
type OpRecord struct {
	Phase   string  `json:"phase"`
	Kind    string  `json:"kind"`
	Module  string  `json:"module"`
	Seconds float64 `json:"seconds"`
}

// CollectiveRecord is one collective (or pipeline send) the Program inserted, with the bytes a
// rank sends for it.
type CollectiveRecord struct {
	Stage     int    `json:"stage"`
	Phase     string `json:"phase"`
	Kind      string `json:"kind"`
	Dim       string `json:"dim"`
	Module    string `json:"module"`
	Shape     []int  `json:"shape"`
	SentBytes int64  `json:"sent_bytes"`
}

// JSONFloat encodes NaN and infinities as null (JSON has no such numbers), so that a diverged
// run's report still encodes.
type JSONFloat float64

// MarshalJSON writes f, or null when it is not finite.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func jsonFloats(v []float64) []JSONFloat {
	out := make([]JSONFloat, len(v))
	for i, x := range v {
		out[i] = JSONFloat(x)
	}
	return out
}

// measuredNotes says what Report.MemoryBytes counts.
const measuredNotes = "memory_bytes counts the slices exec's allocator hands the kernels and collectives (params, grads, optimizer state, gradient buckets and gathered parameters as comm or params, kernel scratch as workspace); a microbatch's tensor is an activation when the rank still holds it at the end of that microbatch's forward, workspace otherwise, whatever the Program declares. The communicator's and pipeline's message copies are not in it; tracked_bytes against go_heap_live_bytes shows what is not"

// NewReport checks run res of cfg against ref, the single-device run of Single(cfg), and gathers
// what it measured.
func NewReport(cfg Config, res, ref *Result) *Report {
	p := res.Program
	st := p.Strategy
	rep := &Report{Model: cfg.Model.Name, Strategy: st.String(), Plan: st.Plan.String(), Devices: st.Mesh.Devices(),
		Steps: cfg.Steps, Seed: cfg.Seed, Optimizer: st.Optimizer, MemoryBytes: map[string]int64{}, CommBytes: map[string]int64{},
		Loss: jsonFloats(res.Losses), SingleDevice: jsonFloats(ref.Losses), Ranks: res.Ranks,
		GoHeapBytes: res.GoHeapBytes, GoTotalAlloc: res.GoTotalAllocBytes, BubbleFraction: res.BubbleFraction,
		DeviceBubbleFraction: res.DeviceBubbleFraction, DeviceClock: res.DeviceClock,
		TrackedBytes: res.TrackedBytes, UntrackedPerStep: res.UntrackedAllocBytesPerStep, GoHeapLiveBytes: res.GoHeapLiveBytes, MemoryErrors: res.MemoryErrors,
		MeasuredNotes: measuredNotes}
	m := Compare(res, ref)
	rep.MaxRelDiff, rep.MaxRelDiffAt, rep.WorstParam, rep.ParamsVsSingle = JSONFloat(m.Worst), m.Where, m.WorstParam, m.Params
	rep.Failures = Failures(cfg, res, ref, m)
	rep.OK = len(rep.Failures) == 0
	if rep.Failures == nil {
		rep.Failures = []string{}
	}
	if rep.MemoryErrors == nil {
		rep.MemoryErrors = []string{}
	}
	if st.Mesh.TP == 1 {
		rep.Plan = "none"
	}
	for _, r := range res.Ranks {
		for k, v := range r.PeakBytes {
			rep.MemoryBytes[k] = max(rep.MemoryBytes[k], v)
		}
		for k, v := range r.CommBytes {
			rep.CommBytes[k] = max(rep.CommBytes[k], v)
		}
	}
	b := res.Breakdown
	rep.Time.Step = res.StepTime.Seconds()
	rep.Time.Compute, rep.Time.CommExposed, rep.Time.Optimizer = b.Compute.Seconds(), (b.Comm - b.Bubble).Seconds(), b.Optimizer.Seconds()
	rep.Time.Bubble = b.Bubble.Seconds()
	for _, d := range res.StepTimes {
		rep.StepTimes = append(rep.StepTimes, d.Seconds())
	}
	if res.StepTime > 0 {
		rep.TokensPerS = float64(p.Tokens) / res.StepTime.Seconds()
	}
	for _, e := range b.Ops {
		rep.Ops = append(rep.Ops, OpRecord{Phase: e.Phase, Kind: e.Kind, Module: e.Module, Seconds: (e.End - e.Start).Seconds()})
	}
	rep.Collectives = Collectives(p)
	return rep
}

// Collectives lists the collectives and pipeline sends of p that cross ranks (group > 1), stage
// by stage in program order, with the bytes a rank sends for each.
func Collectives(p *program.Program) []CollectiveRecord {
	var out []CollectiveRecord
	for _, s := range p.Stages {
		for _, list := range [][]program.Op{s.Forward, s.Backward, s.Optimizer} {
			for _, op := range list {
				if !(op.Kind.IsCollective() || op.Kind == program.OpSend) || op.Group <= 1 {
					continue
				}
				var shape []int
				if len(op.In) > 0 {
					shape = s.Value(op.In[0]).Shape
				}
				mod := op.Module
				switch {
				case len(op.Params) > 0 && op.Phase == program.Optimizer:
					mod = fmt.Sprintf("%d gradients", len(op.Params))
					if op.Kind == program.OpAllGather {
						mod = fmt.Sprintf("%d parameters", len(op.Params))
					}
				case op.Kind == program.OpSend:
					mod = fmt.Sprintf("to stage %d", op.Peer)
				}
				out = append(out, CollectiveRecord{Stage: s.Index, Phase: op.Phase.String(), Kind: string(op.Kind), Dim: string(op.Dim),
					Module: mod, Shape: shape, SentBytes: int64(op.SentBytes)})
			}
		}
	}
	return out
}

// Failures lists what makes run res a failure, with m its Compare against ref: divergence (a
// non-finite loss in either run), a mismatch against single-device training above
// MatchTolerance, memory the ranks held that the Program does not declare.
func Failures(cfg Config, res, ref *Result, m Match) []string {
	var out []string
	for _, r := range []*Result{res, ref} {
		for i, l := range r.Losses {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				what := "the run"
				if r == ref {
					what = "single-device training"
				}
				out = append(out, fmt.Sprintf("diverged: %s's loss is %g at step %d (lr %g); lower --lr", what, l, i+1, LearningRate(cfg.LR, cfg.Strategy.Optimizer)))
				break
			}
		}
	}
	if len(out) == 0 && !(m.Worst <= MatchTolerance) {
		out = append(out, fmt.Sprintf("the run does not match single-device training: max_rel_diff_vs_single %.3g > %g at %s", m.Worst, MatchTolerance, m.Where))
	}
	for _, e := range res.MemoryErrors {
		out = append(out, "memory: "+e)
	}
	return out
}

// LearningRate is the learning rate a run uses: lr, or when it is 0 the optimizer's default
// (0.01 for SGD, 1e-3 for Adam).
func LearningRate(lr float64, optimizer strategies.Optimizer) float64 {
	if lr != 0 {
		return lr
	}
	if optimizer == strategies.OptimizerAdam {
		return 1e-3
	}
	return 0.01
}

// CommKinds lists, sorted, the "kind/dim" keys of the bytes any rank sent (RankResult.CommByKind).
func (r *Report) CommKinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, rk := range r.Ranks {
		for k := range rk.CommByKind {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckSpec refuses the options strategy string spec (parsed as st) sets that exec prices but
// does not execute: a precision other than fp32 (exec trains in fp32), overlap=on and
// tpoverlap=on (every collective here blocks its rank), tensorlists=on (ZeRO-3 here gathers flat
// units), a prefetch depth other than 1 (exec gathers each op's parameters as the op runs),
// fusion=on and compile=on (exec runs every op as its own kernel), kernels=eager (exec's norms are
// one kernel each). A precision left out is not refused: exec runs fp32.
func CheckSpec(spec string, st strategies.Strategy) error {
	for _, part := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		switch {
		case k == "precision" && v != string(strategies.PrecisionFP32):
			return fmt.Errorf("--strategy: precision=%s is priced by 'tpsim predict', not executed: exec trains in fp32; use precision=fp32 or leave precision out", v)
		case k == "overlap" && st.Overlap:
			return fmt.Errorf("--strategy: overlap=%s is priced by 'tpsim predict', not executed: every collective in exec blocks its rank; use overlap=off or leave overlap out", v)
		case k == "tpoverlap" && st.TPOverlap:
			return fmt.Errorf("--strategy: tpoverlap=%s is priced by 'tpsim predict', not executed: every collective in exec blocks its rank; use tpoverlap=off or leave tpoverlap out", v)
		case k == "prefetch" && st.Prefetch != 1:
			return fmt.Errorf("--strategy: prefetch=%s is priced by 'tpsim predict', not executed: exec gathers each op's parameters as the op runs; leave prefetch out", v)
		case k == "fusion" && st.Fusion:
			return fmt.Errorf("--strategy: fusion=%s is priced by 'tpsim predict', not executed: exec runs the bias, dropout and residual add as separate kernels; use fusion=off or leave fusion out", v)
		case k == "compile" && st.Compile:
			return fmt.Errorf("--strategy: compile=%s is priced by 'tpsim predict', not executed: exec runs every op as its own kernel, as PyTorch eager does; use compile=off or leave compile out", v)
		case k == "kernels" && st.Kernels == strategies.KernelsEager:
			return fmt.Errorf("--strategy: kernels=%s is priced by 'tpsim predict', not executed: exec runs each norm as one kernel; use kernels=fused or leave kernels out", v)
		case k == "tensorlists" && st.TensorLists:
			return fmt.Errorf("--strategy: tensorlists=%s is priced by 'tpsim predict', not executed: exec gathers each op's parameters as one flat unit; use tensorlists=off or leave tensorlists out", v)
		}
	}
	return nil
}
