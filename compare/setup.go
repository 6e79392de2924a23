package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// DefaultSteps and DefaultRounds are how compare measures a strategy unless told otherwise: 10
// optimizer steps per run (the first a warm-up), every strategy run 3 times in turn, the median
// step over all their steps. A study measures its winners the same way (MeasureWinner).
const (
	DefaultSteps  = 10
	DefaultRounds = 3
)

// MaxRanks is the most goroutine ranks one row runs on.
const MaxRanks = 64

// ParseMeshes reads a comma-separated list of numbers of ranks ("1,2,4").
func ParseMeshes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number of ranks; write e.g. --meshes 1,2,4", part)
		}
		if n > MaxRanks {
			return nil, fmt.Errorf("%d ranks is more goroutine ranks than compare runs (%d at most)", n, MaxRanks)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseFamilies reads a comma-separated list of family names, in any case.
func ParseFamilies(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if _, ok := FamilyNamed(name); !ok {
			return nil, fmt.Errorf("unknown strategy %q%s; valid: %s", name, suggest.DidYouMean(name, FamilyNames()), strings.Join(FamilyNames(), ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// Points configures every point of the grid for exec with s, as exec runs it: overlap off (exec
// blocks its rank in every collective, so nothing overlaps compute and the prediction is made for
// that). A point that cannot run is skipped with the reason, and a line about it goes to progress
// (nil: none). batch is the global batch of the points that run.
func Points(m *model.Model, grid []GridPoint, s exec.MeshSettings, progress io.Writer) (pts []Point, skipped []Skipped, batch int) {
	for i, gp := range grid {
		cfg, err := exec.MeshConfig(m, gp.Mesh, s)
		if err == nil {
			err = gp.Apply(&cfg.Strategy)
		}
		cfg.Strategy.Overlap = false
		var pt Point
		if err == nil {
			pt = Point{Strategy: gp.Strategy, Mesh: gp.Mesh, Config: cfg}
			pt.Program, err = exec.Lowered(cfg)
		}
		if err != nil {
			skipped = append(skipped, Skipped{Strategy: gp.Strategy, Mesh: gp.Mesh.String(), Reason: err.Error()})
			if progress != nil {
				fmt.Fprintf(progress, "tpsim compare: [%d/%d] %s %s skipped: %v\n", i+1, len(grid), gp.Strategy, gp.Mesh, err)
			}
			continue
		}
		batch = cfg.Strategy.GBS
		pts = append(pts, pt)
	}
	return pts, skipped, batch
}

// SkippedText lists skipped rows one per line.
func SkippedText(rows []Skipped) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s: %s\n", r.Strategy, r.Mesh, r.Reason)
	}
	return strings.TrimRight(b.String(), "\n")
}

// HostOptions say which hardware profile compare predicts with.
type HostOptions struct {
	// Hardware is hardware.HostName (this machine's cached profile, calibrated when missing or
	// stale) or what hardware.Load reads.
	Hardware string
	// Recalibrate calibrates this machine even when a profile is cached.
	Recalibrate bool
	// ForeignHardware allows a profile of other hardware (a GPU preset).
	ForeignHardware bool
	// Progress receives what was chosen and why ("tpsim compare: ..." lines); nil: nothing.
	Progress io.Writer
}

// HostProfile returns the hardware to predict with and how it was calibrated (the share of the
// CPU other processes used meanwhile, -1 unknown, and whether it was quick), calibrating when the
// host profile is missing or stale. A profile of other hardware (a GPU preset) is refused unless
// o.ForeignHardware says that is intended: compare measures this machine.
func HostProfile(ctx context.Context, o HostOptions) (*hardware.Hardware, Load, error) {
	log := o.Progress
	if log == nil {
		log = io.Discard
	}
	load := NewLoad(-1)
	if o.Hardware != hardware.HostName {
		h, err := hardware.Loader{Host: calibrate.Cached}.Load(o.Hardware)
		if err != nil {
			return nil, load, err
		}
		if h.Cores == 0 && !o.ForeignHardware {
			return nil, load, fmt.Errorf("--hardware %s is a profile of %s, not of this machine: compare measures strategies here, so its errors would compare two machines (the issue's -95%%); use --hardware host (calibrated here), a file written by `tpsim calibrate --out`, or pass --foreign-hardware if that is what you mean",
				o.Hardware, h.Device.Name)
		}
		if h.Cores > 0 && h.Cores != runtime.NumCPU() {
			fmt.Fprintf(log, "tpsim compare: warning: %s was measured on a machine with %d cores and this one has %d: its slowdowns and rates describe that machine, not this one; use --hardware host to calibrate here\n",
				o.Hardware, h.Cores, runtime.NumCPU())
		}
		return h, load, nil
	}
	if !o.Recalibrate {
		h, info, err := calibrate.CachedInfo()
		if err == nil {
			fmt.Fprintf(log, "tpsim compare: using the cached host profile (%s; %s)\n", info.Path, info.Describe())
			load.Calibration, load.CalibrationQuick = info.OtherCPU, info.Quick
			return h, load, nil
		}
		var stale *calibrate.StaleError
		switch {
		case errors.Is(err, calibrate.ErrNoCache):
			fmt.Fprintf(log, "tpsim compare: no host profile cached; calibrating this machine first (about 20 s on a quiet machine, minutes under load)\n")
		case errors.As(err, &stale):
			fmt.Fprintf(log, "tpsim compare: the cached host profile is stale (%v); calibrating again\n", err)
		default:
			fmt.Fprintf(log, "tpsim compare: the cached host profile cannot be used (%v); calibrating again\n", err)
		}
	}
	h, rep, err := calibrate.Run(ctx, calibrate.Options{Progress: o.Progress})
	if err != nil {
		return nil, load, err
	}
	if saved, err := calibrate.SaveCache(h, rep); err != nil {
		fmt.Fprintf(log, "tpsim compare: could not cache the profile: %v\n", err)
	} else if saved.Written {
		fmt.Fprintf(log, "tpsim compare: host profile cached in %s\n", saved.Path)
	} else {
		fmt.Fprintf(log, "tpsim compare: %s\n", saved.Reason)
	}
	load.Calibration = rep.OtherCPU
	return h, load, nil
}

// MeasureWinner measures a strategy on this machine with exec, as compare measures a row: the
// median step time after warm-up over DefaultRounds runs of DefaultSteps steps, seed 1. exec
// trains data and tensor parallel in fp32 here; a strategy with anything else is not measured and
// the error says what to fix. plan is the tensor-parallel plan ("": Megatron).
func MeasureWinner(ctx context.Context, m *model.Model, st strategies.Strategy, plan string) (float64, error) {
	switch {
	case st.Mesh.PP > 1 || st.Mesh.CP > 1:
		return 0, fmt.Errorf("exec runs data and tensor parallel only (the winner has pp=%d, cp=%d)", st.Mesh.PP, st.Mesh.CP)
	case st.ZeRO > 0 || st.Recompute != strategies.RecomputeNone:
		return 0, fmt.Errorf("exec runs neither ZeRO nor recompute (the winner has zero=%d, recompute=%s); fix zero: 0, recompute: none", st.ZeRO, st.Recompute)
	case st.Precision != strategies.PrecisionFP32:
		return 0, fmt.Errorf("exec trains in fp32; fix precision: fp32")
	}
	// The stack's options exec prices but does not run (fusion, compile, kernels=eager,
	// tpoverlap, tensorlists): measured without them, the winner would not be the run priced.
	if err := exec.CheckSpec(st.Short(), st); err != nil {
		return 0, fmt.Errorf("the winner %s: %w", st.Short(), err)
	}
	if plan == "" {
		plan = "megatron"
	}
	cfg, err := exec.MeshConfig(m, st.Mesh, exec.MeshSettings{Optimizer: st.Optimizer, Attention: st.Attention, Plan: plan,
		Batch: st.GBS, MBS: st.MBS, Steps: DefaultSteps, Seed: 1})
	if err != nil {
		return 0, err
	}
	var steps []time.Duration
	for range DefaultRounds {
		res, err := exec.Run(ctx, cfg)
		if err != nil {
			return 0, err
		}
		steps = append(steps, res.StepTimes[1:]...)
	}
	return exec.Median(steps).Seconds(), nil
}
