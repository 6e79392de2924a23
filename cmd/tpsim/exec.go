package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
)

const execHelp = `Usage: tpsim exec [flags]

Really train the model, sharded over a local mesh of goroutine ranks with real collectives, and
check it against single-device training on the same global batch. Prints the losses, the bytes
each rank sent per collective and mesh dimension, memory per category, the step time (slowest
rank, median after a warm-up step) and max_rel_diff_vs_single.

Examples (the tensor-parallel tutorial's MLP, then a transformer):
  tpsim exec --model seed-mlp --mesh tp=2 --plan "0=colwise,2=rowwise"
  tpsim exec --model seed-mlp --mesh tp=2 --plan "0=rowwise,1=noparallel,2=colwise"
  tpsim exec --model seed-mlp --mesh dp=2
  tpsim exec --model gpt-tiny --mesh dp=2,tp=2 --plan megatron --optimizer adam --trace trace.json
  tpsim exec --model gpt-tiny --strategy pp=2,dp=2,zero=1,recompute=full,mbs=1 --trace trace.json
  tpsim exec --model gpt-tiny --strategy pp=2,schedule=gpipe,mbs=2
  tpsim exec --model gpt-tiny --strategy dp=2,tp=2,zero=3,sp=on

--strategy takes the strategy string of 'tpsim predict' and 'tpsim sim' (their defaults too:
mbs=1, optimizer=adam); --mesh is its mesh alone, with one microbatch per dp rank and SGD.
--optimizer, --attn, --batch, --mbs and --plan, when given, override the strategy's.

PLAN is a style name (colwise, rowwise, sequence, noparallel, ...), "megatron", an inline map
("0=colwise,2=rowwise") or a JSON file of pattern -> style. exec runs, in fp32: single device,
data, tensor and pipeline parallel and their dp x pp x tp hybrids; pipeline schedules gpipe,
1f1b and interleaved (vpp); zero=0-3; recompute=none, selective or full; sp=on; eager or flash
attention (flash keeps the softmax's log-sum-exp and recomputes the probabilities in backward).
Context parallel (cp), precision=mixed and overlap=on are priced by 'tpsim predict' but not
executed (every collective here blocks its rank), and are refused.

It fails (exit 1) when training diverges (a non-finite loss), when the run does not match
single-device training (max_rel_diff_vs_single above 1e-5, as exec's doc derives), or when the
memory the ranks held differs from what the Program declares. Ctrl-C prints the losses of the
finished steps and exits 130.
`

// execOptions are the flags of tpsim exec.
type execOptions struct {
	Model     string
	Strategy  string // strategies.Parse form; "" = --mesh
	Mesh      string
	Plan      string
	Steps     int
	Batch     int // global batch; 0 = the model's
	MBS       int // microbatch per dp rank; 0 = batch/dp (one microbatch)
	Seed      uint64
	Optimizer string
	Attn      string
	LR        float64
	JSON      bool
	Trace     string
	// set names the flags given on the command line (nil when built in code).
	set map[string]bool
	// onStep, when set, is called after each finished step (tests interrupt a run with it).
	onStep func(step int)
}

var runExec = subcommand("exec", execHelp, parseExec)

func parseExec(args []string) (*execOptions, *pflag.FlagSet, error) {
	o := &execOptions{}
	fs := cli.NewFlagSet("exec")
	fs.StringVar(&o.Model, "model", "seed-mlp", "model: a preset name or a config.json (transformers without dropout)")
	fs.StringVar(&o.Strategy, "strategy", "", `strategy as for predict and sim, e.g. "pp=2,dp=2,tp=2,zero=1,recompute=full,sp=on" (instead of --mesh)`)
	fs.StringVar(&o.Mesh, "mesh", "tp=2", `mesh, e.g. "dp=2,tp=2"`)
	fs.StringVar(&o.Plan, "plan", "megatron", `tensor-parallel plan: a style, "megatron", a map ("0=colwise,2=rowwise") or a JSON file`)
	fs.IntVar(&o.Steps, "steps", 10, "optimizer steps (the first is a warm-up, left out of the step time)")
	fs.IntVar(&o.Batch, "batch", 0, "global batch in samples (0: the model's batch)")
	fs.IntVar(&o.MBS, "mbs", 0, "microbatch per data-parallel rank (0: the whole local batch at once)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the weights and the batch")
	fs.StringVar(&o.Optimizer, "optimizer", "sgd", "sgd or adam")
	fs.StringVar(&o.Attn, "attn", "eager", "attention kernel: eager, or flash/flash1 (FlashAttention-2/-1: one fused kernel here, they differ only in GPU speed)")
	fs.Float64Var(&o.LR, "lr", 0, "learning rate (0: 0.01 for sgd, 0.001 for adam)")
	fs.BoolVar(&o.JSON, "json", false, "print the measurement as JSON (keys of 'tpsim predict --json' where they mean the same)")
	fs.StringVar(&o.Trace, "trace", "", "write the measured timeline as a Chrome trace (opens in Perfetto)")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
	switch {
	case o.Strategy != "" && o.set["mesh"]:
		return o, fs, cli.Usagef("--strategy %q and --mesh %q both give the mesh; put the mesh in --strategy", o.Strategy, o.Mesh)
	case math.IsNaN(o.LR) || math.IsInf(o.LR, 0):
		return o, fs, cli.Usagef("--lr=%g; give a finite learning rate, e.g. --lr 0.01", o.LR)
	case o.Steps <= 0:
		return o, fs, cli.Usagef("--steps=%d; run at least one step", o.Steps)
	case o.Batch < 0:
		return o, fs, cli.Usagef("--batch=%d; it must be positive (or 0 for the model's batch)", o.Batch)
	case o.MBS < 0:
		return o, fs, cli.Usagef("--mbs=%d; it must be positive (or 0 for the whole local batch)", o.MBS)
	case o.LR < 0:
		return o, fs, cli.Usagef("--lr=%g; it must be positive", o.LR)
	}
	return o, fs, nil
}

// config builds the exec configuration the options describe: --mesh with the flags, or
// --strategy as predict and sim read it, the flags given on the command line over it, and what
// exec cannot run refused.
func (o *execOptions) config() (exec.Config, error) {
	m, err := model.Load(o.Model)
	if err != nil {
		return exec.Config{}, err
	}
	opt, err := cli.ParseOptimizer(o.Optimizer)
	if err != nil {
		return exec.Config{}, err
	}
	attn, err := cli.ParseAttn(o.Attn)
	if err != nil {
		return exec.Config{}, err
	}
	settings := exec.MeshSettings{Optimizer: opt, Attention: attn, Plan: o.Plan,
		Batch: o.Batch, MBS: o.MBS, Steps: o.Steps, Seed: o.Seed, LR: o.LR}
	if o.Strategy != "" {
		return exec.StrategyConfig(m, o.Strategy, settings, o.set)
	}
	mesh, err := strategies.ParseMesh(o.Mesh)
	if err != nil {
		return exec.Config{}, err
	}
	return exec.MeshConfig(m, mesh, settings)
}

func (o *execOptions) run(stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return o.runCtx(ctx, stdout, stderr)
}

func (o *execOptions) runCtx(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	// Refuse a trace that cannot be written before training, not after.
	if o.Trace != "" {
		if err := atomicfile.CheckFile(o.Trace); err != nil {
			return fmt.Errorf("cannot write the trace: %v; pass --trace a writable path", err)
		}
	}
	cfg.OnStep = o.onStep
	cfg.Warmup = min(1, cfg.Steps-1) // the first step is a warm-up, left out of the step time (the help)
	fmt.Fprintf(stderr, "tpsim exec: %s on %s, %d steps...\n", cfg.Model.Name, cfg.Strategy.Mesh, cfg.Steps)
	res, err := exec.Run(ctx, cfg)
	if ctx.Err() != nil {
		return errors.Join(compare.WriteFinished(stdout, res), cli.ErrInterrupted)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tpsim exec: single-device reference...\n")
	ref, err := exec.Run(ctx, exec.Single(cfg))
	if ctx.Err() != nil {
		return errors.Join(compare.WriteFinished(stdout, res), cli.ErrInterrupted)
	}
	if err != nil {
		return err
	}
	rep := exec.NewReport(cfg, res, ref)
	if o.Trace != "" {
		if err := writeTraceFile(o.Trace, compare.MeasuredSpans(res, -1)); err != nil {
			return err
		}
	}
	if o.JSON {
		err = reports.WriteJSON(stdout, rep)
	} else {
		err = compare.WriteExec(stdout, rep, res)
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return errors.New(strings.Join(rep.Failures, "; "))
	}
	return nil
}
