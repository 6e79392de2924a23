package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/study"
)

const studyHelp = `Usage: tpsim study FILE [flags]

Run a planning study: tpsim plan for every model x hardware (and what-if) x GPU count x objective
of a study file (YAML or JSON), and write a report a team can decide from: for every cell the best
strategy per objective, step time, tokens/s, MFU, memory per device, time to train the token
budget, GPU-hours, cost, the smallest GPU count that fits, and the planner's explanation; cells
that cannot run say why.

Outputs in --out: study.html (one self-contained page with the figures), study.md, cells.csv,
cells.jsonl (one finished plan per line). The study resumes: a plan already in cells.jsonl with
the same inputs and tpsim build is not run again, so a rerun, or a run after Ctrl-C, only prices
what is missing or changed. The outputs depend only on the study and the build: the same bytes
however the run was split.

Study file keys (examples/studies has worked examples):
  name, description   what the study is
  models              presets or config.json paths; or {model, global_batch, seq}
  hardware            presets, host, or hardware JSON paths; or
                      {hardware, price_per_gpu_hour, max_nodes, max_gpus}
  gpus                a list, or a range {from, to, times} / {from, to, step}
  global_batch, seq   sequences per step and tokens per sequence (0: the model's)
  tokens              the token budget, e.g. 15e12
  objectives          time, memory, comm, balanced (default: time)
  fix                 strategy options not searched, e.g. {attn: flash, precision: mixed}
  what_if             [{name, hardware, nvlink_domain, inter_node_gbps, hbm_gb}]
  top, sim            plan's --top (default 3) and --sim (auto, on, off; default auto)
  currency            the price's currency, e.g. USD
  measure             true: measure each winner on this machine (host hardware only)
  fit_search          true: search the smallest GPU count that fits below the smallest swept
                      one (every count below a node, then whole nodes)

Examples:
  tpsim study examples/studies/llama3.yaml --out llama3-study
  tpsim study examples/studies/gpt3-175b.yaml --out gpt3 --workers 1
`

// studyOptions are the flags of tpsim study.
type studyOptions struct {
	File    string
	Out     string
	Workers int
	Quiet   bool
}

func runStudy(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseStudy(args)
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = o.run(ctx, stdout, stderr)
		stop()
	}
	return cli.Finish("study", fs, studyHelp, err, stdout, stderr)
}

func parseStudy(args []string) (*studyOptions, *pflag.FlagSet, error) {
	o := &studyOptions{}
	fs := cli.NewFlagSet("study")
	fs.StringVar(&o.Out, "out", "study-out", "directory for study.html, study.md, cells.csv and cells.jsonl")
	fs.IntVar(&o.Workers, "workers", 0, "plans run at once (0 = one per CPU); the outputs do not depend on it")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress bar")
	if err := cli.ParseFlags(fs, args, 1); err != nil {
		return o, fs, err
	}
	if fs.NArg() != 1 {
		return o, fs, cli.Usagef("give one study file, e.g. tpsim study examples/studies/llama3.yaml")
	}
	o.File = fs.Arg(0)
	if o.Workers < 0 {
		return o, fs, cli.Usagef("--workers=%d must be 0 (one per CPU) or more", o.Workers)
	}
	return o, fs, nil
}

// studyHardware loads a study's hardware: "host" is this machine's calibrated profile (cached,
// or calibrated now, as compare does), everything else hardware.Load.
func studyHardware(ctx context.Context, stderr io.Writer) study.HardwareLoader {
	return func(spec string) (*hardware.Hardware, error) {
		if spec == study.Host {
			hw, _, err := compare.HostProfile(ctx, compare.HostOptions{Hardware: hardware.HostName, Progress: stderr})
			return hw, err
		}
		return hosts.Load(spec)
	}
}

// studyMeasure measures a plan's winner on this machine with exec, as compare measures a row.
func studyMeasure(ctx context.Context, m *model.Model, _ *hardware.Hardware, strategy, plan string) (float64, error) {
	st, err := study.ParseWinner(strategy)
	if err != nil {
		return 0, err
	}
	return compare.MeasureWinner(ctx, m, st, plan)
}

func (o *studyOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	st, err := study.Load(o.File, studyHardware(ctx, stderr))
	if err != nil {
		return err
	}
	version := study.BuildVersion()
	progress, endBar := func(int, int) {}, func() {}
	if !o.Quiet {
		progress, endBar = study.ProgressBar(stderr)
	}
	start := time.Now()
	res, err := study.Run(ctx, st, o.Out, study.Options{Version: version, Workers: o.Workers, Progress: progress, Log: stderr,
		Measure: studyMeasure})
	endBar()
	if err != nil {
		if errors.Is(err, study.ErrInterrupted) {
			// What was kept and how to finish, then Finish's one line "interrupted" and exit
			// 130, as the help and docs/cli.md say (it exited 1).
			fmt.Fprintf(stderr, "\ntpsim study: %s\n", strings.TrimPrefix(err.Error(), study.ErrInterrupted.Error()+": "))
			return cli.ErrInterrupted
		}
		return err
	}
	rep, err := study.NewReport(st, res, version, o.Out)
	if err != nil {
		return err
	}
	if err := study.Write(o.Out, rep); err != nil {
		return err
	}
	ok, bad := 0, 0
	for _, r := range rep.Rows {
		if r.Status == study.StatusOK {
			ok++
		} else {
			bad++
		}
	}
	fmt.Fprintf(stdout, "%d cells x %d objectives: %d with a strategy that fits, %d without (the report says why); %.1f s\n",
		len(st.Cells), len(st.File.Objectives), ok, bad, time.Since(start).Seconds())
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join([]string{o.Out + "/" + study.HTMLFile, o.Out + "/" + study.MDFile, o.Out + "/" + study.CSVFile, o.Out + "/" + study.CellsFile}, ", "))
	return nil
}
