package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
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
(about 20 s on a quiet machine, minutes on a loaded one) and timing the model's matrix products
and kernels again, alone, before every round of measurements (a few seconds each: this
machine's speed drifts; the rows are predicted with the median of those timings, as their
measured steps are medians over the rounds), and writes results.json, results.csv, report.md
and figures (PNG and SVG) to tpsim-out/. The strategies (--strategies), each run on every number of --meshes it fits
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
split of the step counts as exposed communication (as exec measures it) the time ranks beyond
the cores wait, descheduled, at collectives, and the time ranks that each have a core wait there
for the slowest (the measured contention slowdown's excess); its error is reported beside the
total's.

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

var runCompare = subcommand("compare", compareHelp, parseCompare)

func parseCompare(args []string) (*compareOptions, *pflag.FlagSet, error) {
	o := &compareOptions{}
	fs := cli.NewFlagSet("compare")
	var meshes, strats string
	fs.StringVar(&o.Model, "model", "gpt-tiny", "model: a preset name or a config.json (small enough to train here, without dropout)")
	fs.StringVar(&meshes, "meshes", "1,2,4", "numbers of ranks to run each strategy on")
	fs.StringVar(&strats, "strategies", strings.Join(compare.DefaultFamilies, ","), "strategies to run on each of --meshes (see the list above): "+strings.Join(compare.FamilyNames(), ", "))
	fs.StringVar(&o.Plan, "plan", "megatron", "tensor-parallel plan for tp and hybrid: a style, \"megatron\", a map or a JSON file")
	fs.IntVar(&o.Steps, "steps", compare.DefaultSteps, "optimizer steps per run (the first is a warm-up)")
	fs.IntVar(&o.Rounds, "rounds", compare.DefaultRounds, "runs of every strategy, in turn; the measured step time is the median over all their steps")
	fs.IntVar(&o.Batch, "batch", 0, "global batch in samples (0: the model's)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the weights and the batch")
	fs.StringVar(&o.Optimizer, "optimizer", "sgd", "sgd or adam")
	fs.StringVar(&o.Hardware, "hardware", "host", "profile to predict with: host (this machine, calibrated and cached) or a hardware JSON file")
	fs.StringVar(&o.Out, "out", "tpsim-out", "directory for results.json, results.csv, report.md and the figures")
	fs.BoolVar(&o.JSON, "json", false, "print results.json to stdout as well")
	fs.BoolVar(&o.Recalibrate, "recalibrate", false, "calibrate this machine again even if a profile is cached")
	fs.Float64Var(&o.MaxLoad, "max-load", 0, "refuse to measure when other processes use more than this share of the CPU (0.3 = 30%), sampled for a second first; 0: only warn")
	fs.BoolVar(&o.ForeignHardware, "foreign-hardware", false, "allow --hardware to be a profile of other hardware (a GPU preset): its predictions are compared with measurements of this machine")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	var err error
	if o.Meshes, err = compare.ParseMeshes(meshes); err != nil {
		return o, fs, cli.Usagef("--meshes: %v", err)
	}
	if o.Strategies, err = compare.ParseFamilies(strats); err != nil {
		return o, fs, cli.Usagef("--strategies: %v", err)
	}
	if o.Steps < 2 {
		return o, fs, cli.Usagef("--steps=%d; compare needs at least 2 steps (one warm-up, one measured)", o.Steps)
	}
	if o.Rounds < 1 {
		return o, fs, cli.Usagef("--rounds=%d; measure at least one round", o.Rounds)
	}
	if o.MaxLoad < 0 || o.MaxLoad >= 1 || o.MaxLoad != o.MaxLoad {
		return o, fs, cli.Usagef("--max-load=%v; give a share of the CPU between 0 and 1, e.g. 0.3 (or 0 to only warn)", o.MaxLoad)
	}
	if o.Batch < 0 {
		return o, fs, cli.Usagef("--batch=%d; it must be positive (or 0 for the model's batch)", o.Batch)
	}
	if _, err := cli.ParseOptimizer(o.Optimizer); err != nil {
		return o, fs, err
	}
	return o, fs, nil
}

func (o *compareOptions) run(stdout, stderr io.Writer) error {
	m, err := model.Load(o.Model)
	if err != nil {
		return err
	}
	grid, skipped, err := compare.Grid(o.Strategies, o.Meshes)
	if err != nil {
		return cli.Usagef("--strategies: %v", err)
	}
	if len(grid) == 0 {
		return cli.Usagef("the strategies %v on meshes %v give nothing to run; add 1 to --meshes for single, 2 or more for dp and tp, 4 or more for hybrid", o.Strategies, o.Meshes)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		// After the first Ctrl-C compare writes what finished; a second one ends it at once.
		<-ctx.Done()
		stop()
	}()
	opt, _ := cli.ParseOptimizer(o.Optimizer)
	res := &compare.Results{Model: m.Name, Params: m.Params(), Steps: o.Steps, Seed: o.Seed, Optimizer: string(opt), Plan: o.Plan}
	pts, more, batch := compare.Points(m, grid, exec.MeshSettings{Optimizer: opt, Attention: strategies.AttentionEager, Plan: o.Plan,
		Batch: o.Batch, Steps: o.Steps, Seed: o.Seed}, stderr)
	skipped = append(skipped, more...)
	res.Batch = batch
	if len(pts) == 0 {
		return fmt.Errorf("no strategy could run:\n%s", compare.SkippedText(skipped))
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
	res.Skipped = skipped
	tl, err := compare.Measure(ctx, res, pts, compare.HostOptions{Hardware: o.Hardware, Recalibrate: o.Recalibrate, ForeignHardware: o.ForeignHardware, Progress: stderr},
		compare.Options{Rounds: o.Rounds, Progress: stderr})
	if errors.Is(err, compare.ErrInterrupted) && len(res.Rows) == 0 {
		return cli.ErrInterrupted
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
		return cli.ErrInterrupted
	}
	return res.MemoryError(o.Out)
}
