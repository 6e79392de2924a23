package main

import (
	"errors"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

const planHelp = `Usage: tpsim plan [flags]

Search every strategy for a model on N devices: every mesh pp x dp x cp x tp, microbatch size,
ZeRO stage 0-3, recompute none/selective/full, sequence parallel on/off, pipeline schedule
(1F1B, interleaved with each vpp, GPipe) and overlap on/off. Each valid candidate is priced with
the closed-form cost model; those that do not fit in device memory are dropped; the rest are
ranked by the objective, the best few re-ranked with the simulator, and the winner explained:
the model's size against device memory, where each mesh dimension runs on the hardware, and what
the runner-up would save and cost.

Objectives:
  time      step time
  memory    peak memory per device
  comm      bytes per device per step over the slowest link the job uses (InfiniBand across
            nodes, NVLink inside one node), counting every mesh dimension whose groups reach it
  balanced  the least max(step / fastest step, peak / smallest peak): the candidate whose worse
            relative loss against the best of each objective is least

Examples:
  tpsim plan --model gpt3-175b --hardware a100-80g --gpus 256 --global-batch 512
  tpsim plan --model llama2-7b --gpus 8 --objective memory
  tpsim plan --model llama2-70b --gpus 64 --fix "tp=8,recompute=full" --json
  tpsim plan --model gpt3-13b --gpus 32 --out plan-13b     (writes plan.csv, plan.json, pareto.png/svg)

--fix takes the keys of a strategy (pp, dp, cp, tp, mbs, zero, recompute, sp, schedule, vpp,
overlap; precision, optimizer, attn, bucket_mb, tpoverlap, tensorlists, prefetch, fusion,
compile and kernels set what is not searched: attn defaults to what the hardware's stack runs
(flash, FlashAttention-2, on a GPU whose preset cites its efficiency; eager for fp32 and the host),
said in an "assumed:" line; give attn=eager for unfused attention,
attn=flash1 for FlashAttention-1 or its Triton port, tpoverlap=on and fusion=on
for Megatron-LM (tpoverlap=full with NeMo's userbuffers or torchtitan's AsyncTP), compile=on for
torch.compile, kernels=eager for a PyTorch-op RMSNorm and rotary embedding (torchtitan's
default, Hugging Face's Llama), tensorlists=on
for DeepSpeed's ZeRO-3 of 2021, prefetch=N for a deeper ZeRO-3 prefetch than FSDP's one unit).

The simulator re-ranks the closed form's best --sim-top candidates (50 by default) and the
winner is its best of them; the table shows both step times, and the output names the time
source of the ranking, the Pareto front and the figure. --sim auto simulates as many of them as
take well under a second; on all of them; off none.
`

// planDefaultTop is how many candidates tpsim plan lists by default.
const planDefaultTop = 10

// planOptions are the flags of tpsim plan.
type planOptions struct {
	cli.Target
	GPUs        int
	GlobalBatch int
	Seq         int
	Objective   string
	Top         int
	Fix         string
	Sim         string // auto, on, off
	SimTop      int
	JSON        bool
	Out         string
	// Workers is the number of goroutines that price candidates (0: one per CPU).
	Workers int
}

var runPlan = subcommand("plan", planHelp, parsePlan)

// parsePlan reads the flags of tpsim plan.
func parsePlan(args []string) (*planOptions, *pflag.FlagSet, error) {
	o := &planOptions{}
	fs := cli.NewFlagSet("plan")
	o.RegisterTarget(fs)
	fs.IntVar(&o.GPUs, "gpus", 8, "number of devices")
	fs.IntVar(&o.GlobalBatch, "global-batch", 0, "global batch in sequences (samples); 0 = the model's default")
	fs.IntVar(&o.Seq, "seq", 0, "sequence length in tokens; 0 = the model's default")
	fs.StringVar(&o.Objective, "objective", search.Time, "what to minimise: time, memory, comm or balanced")
	fs.IntVar(&o.Top, "top", planDefaultTop, "how many of the best candidates to list")
	fs.StringVar(&o.Fix, "fix", "", `knobs not to search, e.g. "tp=8" or "tp=8,zero=1,recompute=full"`)
	fs.StringVar(&o.Sim, "sim", "auto", "re-rank the top candidates with the simulator: auto, on or off")
	fs.IntVar(&o.SimTop, "sim-top", search.DefaultSimTop, "how many of the closed form's best candidates the simulator re-ranks")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	fs.StringVar(&o.Out, "out", "", "directory to write plan.csv, plan.json and the Pareto figure (pareto.png, pareto.svg)")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines pricing candidates (0 = one per CPU); the result does not depend on it")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	if o.GPUs < 1 {
		return o, fs, cli.Usagef("--gpus=%d must be at least 1", o.GPUs)
	}
	if o.GlobalBatch < 0 {
		return o, fs, cli.Usagef("--global-batch=%d must be positive (or 0 for the model's)", o.GlobalBatch)
	}
	if o.Seq < 0 {
		return o, fs, cli.Usagef("--seq=%d must be positive (or 0 for the model's)", o.Seq)
	}
	if o.Top < 1 {
		return o, fs, cli.Usagef("--top=%d must be at least 1", o.Top)
	}
	if o.SimTop < 1 {
		return o, fs, cli.Usagef("--sim-top=%d must be at least 1", o.SimTop)
	}
	if o.Workers < 0 {
		return o, fs, cli.Usagef("--workers=%d must be 0 (one per CPU) or more", o.Workers)
	}
	obj, err := search.ParseObjective(o.Objective)
	if err != nil {
		return o, fs, cli.Usagef("--objective=%q is not valid; use one of %s", o.Objective, strings.Join(search.Objectives, ", "))
	}
	o.Objective = obj
	o.Sim = strings.ToLower(strings.TrimSpace(o.Sim))
	if o.Sim != "auto" && o.Sim != "on" && o.Sim != "off" {
		return o, fs, cli.Usagef("--sim=%q is not valid; use auto, on or off", o.Sim)
	}
	if _, err := strategies.ParseFix(o.Fix); err != nil {
		return o, fs, cli.Usagef("--fix: %v", err)
	}
	return o, fs, nil
}

// search runs the whole search.
func (o *planOptions) search() (*search.Planned, error) {
	m, hw, err := o.Load(hosts)
	if err != nil {
		return nil, err
	}
	fix, err := strategies.ParseFix(o.Fix)
	if err != nil {
		return nil, err
	}
	return search.Plan(m, hw, search.Request{GPUs: o.GPUs, GlobalBatch: o.GlobalBatch, Seq: o.Seq,
		Objective: o.Objective, Top: o.Top, Fix: fix, Sim: o.Sim, SimTop: o.SimTop, Workers: o.Workers})
}

func (o *planOptions) run(w, _ io.Writer) error {
	pr, err := o.search()
	if err != nil {
		return err
	}
	if err := reports.PrintResult(w, o.JSON, pr.Out, pr.WriteText); err != nil {
		return err
	}
	if o.Out != "" {
		header, rows := pr.Table()
		if err := reports.WriteResults(o.Out, "plan", header, rows, pr.Out, "pareto", pr.Figure); err != nil {
			return err
		}
	}
	if pr.Res.Feasible == 0 {
		return errors.New("no strategy is feasible; the explanation above says why")
	}
	return nil
}
