package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
)

var compareHelp = `Usage: tpsim compare [flags]

Run every strategy twice on a mesh of local goroutine ranks: predicted by the cost model (and laid
out by the simulator) from this machine's calibrated profile, and measured by really training with
exec. Shows the trade-offs side by side (step time and where it goes, memory per rank by category,
bytes sent per mesh dimension), the accuracy of the prediction, and which strategy to use for
speed, for memory and for communication, with the reasons in numbers.

With no flags it compares single, data, tensor and hybrid parallel, pipelines (1F1B and GPipe),
ZeRO-3 and full recompute for gpt-tiny on 1, 2 and 4 ranks (a pipeline stage needs a
layer: gpt-tiny's 2 layers give pp=2), calibrating this machine first if no profile is cached
(about 15 s), and writes results.json, results.csv, report.md and figures (PNG and SVG) to
tpsim-out/. The strategies (--strategies), each run on every number of --meshes it fits
(the mechanisms on the smallest only):
` + compare.FamilyHelp() + `
Pipeline rows report the bubble, ZeRO rows the time in their parameter all-gathers over dp, and
recompute rows the time of the forward ops replayed in backward, predicted (the cost model's
price of those ops) against measured (exec's timeline); a row whose measured memory differs
from the prediction, or whose ranks held memory the Program does not declare, is a memory error:
it is reported and compare exits with status 1.

On a shared machine: every round measures every strategy in turn, and the share of the CPU that
other processes use is read (from /proc) around every run; above 10% compare warns and says what
that does to the figures (--max-load refuses to start on a machine busier than a given share). Each row reports its spread over rounds, and strategies whose ranges
overlap are a tie in the recommendation rather than one "faster" than the other. The predicted
split of the step counts the time ranks beyond the cores wait, descheduled, at collectives as
exposed communication (as exec measures it), and its error is reported beside the total's.

Ctrl-C writes the rounds that finished (marked partial) and exits with status 130. --hardware must
be a profile of this machine (host, or a file from 'tpsim calibrate --out'); a GPU preset needs
--foreign-hardware, since its predictions would be compared with this CPU's measurements.

Examples:
  tpsim compare
  tpsim compare --model seed-mlp --meshes 1,2,4 --plan "0=colwise,2=rowwise"
  tpsim compare --strategies dp,tp --meshes 2,4,8 --steps 20 --out results/
`

// compareOptions are the flags of tpsim compare.
type compareOptions struct {
	Model       string
	Meshes      []int
	Strategies  []string
	Plan        string
	Steps       int
	Batch       int
	Seed        uint64
	Optimizer   string
	Hardware    string
	Out         string
	JSON        bool
	Recalibrate bool
	Rounds      int
	// MaxLoad refuses to measure when other processes use more of the CPU (0: never refuse).
	MaxLoad float64
	// ForeignHardware allows --hardware to name a profile of other hardware (a GPU preset).
	ForeignHardware bool
}

// strategyNames are the strategy families compare runs (suggestions for a misspelt one).
var strategyNames = compare.FamilyNames()

func runCompare(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseCompare(args)
	if err == nil {
		err = o.run(stdout, stderr)
	}
	return finish("compare", fs, compareHelp, err, stdout, stderr)
}

func parseCompare(args []string) (*compareOptions, *pflag.FlagSet, error) {
	o := &compareOptions{}
	fs := newFlagSet("compare")
	var meshes, strats string
	fs.StringVar(&o.Model, "model", "gpt-tiny", "model: a preset name or a config.json (small enough to train here, without dropout)")
	fs.StringVar(&meshes, "meshes", "1,2,4", "numbers of ranks to run each strategy on")
	fs.StringVar(&strats, "strategies", strings.Join(compare.DefaultFamilies, ","), "strategies to run on each of --meshes (see the list above): "+strings.Join(compare.FamilyNames(), ", "))
	fs.StringVar(&o.Plan, "plan", "megatron", "tensor-parallel plan for tp and hybrid: a style, \"megatron\", a map or a JSON file")
	fs.IntVar(&o.Steps, "steps", 10, "optimizer steps per run (the first is a warm-up)")
	fs.IntVar(&o.Rounds, "rounds", 3, "runs of every strategy, in turn; the measured step time is the median over all their steps")
	fs.IntVar(&o.Batch, "batch", 0, "global batch in samples (0: the model's)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the weights and the batch")
	fs.StringVar(&o.Optimizer, "optimizer", "sgd", "sgd or adam")
	fs.StringVar(&o.Hardware, "hardware", "host", "profile to predict with: host (this machine, calibrated and cached) or a hardware JSON file")
	fs.StringVar(&o.Out, "out", "tpsim-out", "directory for results.json, results.csv, report.md and the figures")
	fs.BoolVar(&o.JSON, "json", false, "print results.json to stdout as well")
	fs.BoolVar(&o.Recalibrate, "recalibrate", false, "calibrate this machine again even if a profile is cached")
	fs.Float64Var(&o.MaxLoad, "max-load", 0, "refuse to measure when other processes use more than this share of the CPU (0.3 = 30%), sampled for a second first; 0: only warn")
	fs.BoolVar(&o.ForeignHardware, "foreign-hardware", false, "allow --hardware to be a profile of other hardware (a GPU preset): its predictions are compared with measurements of this machine")
	if err := parseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	for _, part := range strings.Split(meshes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return o, fs, usagef("--meshes: %q is not a positive number of ranks; write e.g. --meshes 1,2,4", part)
		}
		if n > 64 {
			return o, fs, usagef("--meshes: %d ranks is more goroutine ranks than compare runs (64 at most)", n)
		}
		o.Meshes = append(o.Meshes, n)
	}
	for _, s := range strings.Split(strats, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if _, ok := compare.FamilyNamed(s); !ok {
			return o, fs, usagef("--strategies: unknown strategy %q; valid: %s", s, strings.Join(compare.FamilyNames(), ", "))
		}
		o.Strategies = append(o.Strategies, s)
	}
	if o.Steps < 2 {
		return o, fs, usagef("--steps=%d; compare needs at least 2 steps (one warm-up, one measured)", o.Steps)
	}
	if o.Rounds < 1 {
		return o, fs, usagef("--rounds=%d; measure at least one round", o.Rounds)
	}
	if o.MaxLoad < 0 || o.MaxLoad >= 1 || o.MaxLoad != o.MaxLoad {
		return o, fs, usagef("--max-load=%v; give a share of the CPU between 0 and 1, e.g. 0.3 (or 0 to only warn)", o.MaxLoad)
	}
	if o.Batch < 0 {
		return o, fs, usagef("--batch=%d; it must be positive (or 0 for the model's batch)", o.Batch)
	}
	if _, err := parseOptimizer(o.Optimizer); err != nil {
		return o, fs, err
	}
	return o, fs, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hostProfile returns the hardware to predict with and how it was calibrated (the share of the CPU
// other processes used meanwhile, -1 unknown, and whether it was quick), calibrating when the host profile is missing or stale. A
// profile of other hardware (a GPU preset) is refused unless --foreign-hardware says that is
// intended: compare measures this machine.
func (o *compareOptions) hostProfile(ctx context.Context, stderr io.Writer) (*hardware.Hardware, compare.Load, error) {
	load := compare.NewLoad(-1)
	if o.Hardware != hardware.HostName {
		h, err := hardware.Load(o.Hardware)
		if err != nil {
			return nil, load, err
		}
		if h.Cores == 0 && !o.ForeignHardware {
			return nil, load, fmt.Errorf("--hardware %s is a profile of %s, not of this machine: compare measures strategies here, so its errors would compare two machines (the issue's -95%%); use --hardware host (calibrated here), a file written by `tpsim calibrate --out`, or pass --foreign-hardware if that is what you mean",
				o.Hardware, h.Device.Name)
		}
		if h.Cores > 0 && h.Cores != runtime.NumCPU() {
			fmt.Fprintf(stderr, "tpsim compare: warning: %s was measured on a machine with %d cores and this one has %d: its slowdowns and rates describe that machine, not this one; use --hardware host to calibrate here\n",
				o.Hardware, h.Cores, runtime.NumCPU())
		}
		return h, load, nil
	}
	if !o.Recalibrate {
		h, info, err := calibrate.CachedInfo()
		if err == nil {
			fmt.Fprintf(stderr, "tpsim compare: using the cached host profile (%s; %s)\n", info.Path, info.Describe())
			load.Calibration, load.CalibrationQuick = info.OtherCPU, info.Quick
			return h, load, nil
		}
		var stale *calibrate.StaleError
		switch {
		case errors.Is(err, calibrate.ErrNoCache):
			fmt.Fprintf(stderr, "tpsim compare: no host profile cached; calibrating this machine first (about 15 s)\n")
		case errors.As(err, &stale):
			fmt.Fprintf(stderr, "tpsim compare: the cached host profile is stale (%v); calibrating again\n", err)
		default:
			fmt.Fprintf(stderr, "tpsim compare: the cached host profile cannot be used (%v); calibrating again\n", err)
		}
	}
	h, rep, err := calibrate.Run(ctx, calibrate.Options{Progress: stderr})
	if err != nil {
		return nil, load, err
	}
	if saved, err := calibrate.SaveCache(h, rep); err != nil {
		fmt.Fprintf(stderr, "tpsim compare: could not cache the profile: %v\n", err)
	} else if saved.Written {
		fmt.Fprintf(stderr, "tpsim compare: host profile cached in %s\n", saved.Path)
	} else {
		fmt.Fprintf(stderr, "tpsim compare: %s\n", saved.Reason)
	}
	load.Calibration = rep.OtherCPU
	return h, load, nil
}

func (o *compareOptions) run(stdout, stderr io.Writer) error {
	m, err := model.Load(o.Model)
	if err != nil {
		return err
	}
	grid, skipped, err := compare.Grid(o.Strategies, o.Meshes)
	if err != nil {
		return usagef("--strategies: %v", err)
	}
	if len(grid) == 0 {
		return usagef("the strategies %v on meshes %v give nothing to run; add 1 to --meshes for single, 2 or more for dp and tp, 4 or more for hybrid", o.Strategies, o.Meshes)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		// After the first Ctrl-C compare writes what finished; a second one ends it at once.
		<-ctx.Done()
		stop()
	}()
	opt, _ := parseOptimizer(o.Optimizer)
	res := &compare.Results{Model: m.Name, Params: m.Params(), Steps: o.Steps, Seed: o.Seed, Optimizer: string(opt), Plan: o.Plan}
	var pts []compare.Point
	for i, pt := range grid {
		eo := &execOptions{Model: o.Model, Mesh: pt.Mesh.String(), Plan: o.Plan, Steps: o.Steps, Batch: o.Batch, Seed: o.Seed, Optimizer: string(opt)}
		cfg, err := eo.configFor(m, pt.Mesh)
		if err == nil {
			err = pt.Apply(&cfg.Strategy)
		}
		// exec blocks its rank in every collective (nothing overlaps compute), so the
		// prediction is made for that: overlap off, as exec runs it.
		cfg.Strategy.Overlap = false
		var prog *program.Program
		if err == nil {
			prog, err = exec.Lowered(cfg)
		}
		if err != nil {
			skipped = append(skipped, compare.Skipped{Strategy: pt.Strategy, Mesh: pt.Mesh.String(), Reason: err.Error()})
			fmt.Fprintf(stderr, "tpsim compare: [%d/%d] %s %s skipped: %v\n", i+1, len(grid), pt.Strategy, pt.Mesh, err)
			continue
		}
		res.Batch = cfg.Strategy.GBS
		pts = append(pts, compare.Point{Strategy: pt.Strategy, Mesh: pt.Mesh, Config: cfg, Program: prog})
	}
	if len(pts) == 0 {
		return fmt.Errorf("no strategy could run:\n%s", skippedText(skipped))
	}
	// Refuse an output directory that cannot be written before calibrating and measuring.
	if err := atomicfile.CheckDir(o.Out); err != nil {
		return fmt.Errorf("%v; pass --out a writable directory", err)
	}
	if o.MaxLoad > 0 {
		if share := compare.SampleLoad(time.Second); share > o.MaxLoad {
			return fmt.Errorf("other processes use %.0f%% of the CPU, more than --max-load %.0f%%: measurements now would be slower and noisier than this machine alone; wait for a quieter moment, or raise --max-load", 100*share, 100*o.MaxLoad)
		}
	}
	hw, load, err := o.hostProfile(ctx, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	res.Profile = hw
	res.Skipped = skipped
	res.Load = load
	tl, err := compare.Run(ctx, res, pts, compare.Options{Rounds: o.Rounds, Progress: stderr})
	if errors.Is(err, compare.ErrInterrupted) && len(res.Rows) == 0 {
		return errInterrupted
	}
	if err != nil && !errors.Is(err, compare.ErrInterrupted) {
		return err
	}
	interrupted := err != nil
	for _, w := range res.Load.Warnings {
		fmt.Fprintf(stderr, "tpsim compare: warning: %s\n", w)
	}
	if err := compare.WriteFiles(o.Out, res, tl); err != nil {
		return err
	}
	if o.JSON {
		err = reports.WriteJSON(stdout, res)
	} else {
		err = compare.WriteTable(stdout, res, o.Out)
	}
	if err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
	}
	return memoryErrorsErr(res, o.Out)
}

// memoryErrorsErr is compare's failure when rows have memory errors (exit status 1, after the
// files and the table are written), nil when none has.
func memoryErrorsErr(res *compare.Results, out string) error {
	n := res.Summary.MemoryErrorRows
	if n == 0 {
		return nil
	}
	var rows []string
	for _, r := range res.Rows {
		if len(r.MemoryErrors) > 0 {
			rows = append(rows, r.Label())
		}
	}
	return fmt.Errorf("memory errors in %d of %d rows (%s): the memory the ranks held differs from the prediction or from what the Program declares; see \"memory error\" above and report.md in %s",
		n, len(res.Rows), strings.Join(rows, ", "), out)
}

// skippedText lists skipped rows one per line.
func skippedText(rows []compare.Skipped) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s %s: %s\n", r.Strategy, r.Mesh, r.Reason)
	}
	return strings.TrimRight(b.String(), "\n")
}
