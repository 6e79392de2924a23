package main

import (
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/export"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

const exportHelp = `Usage: tpsim export --format FORMAT [--model M] (--strategy S | --plan-json FILE) [--out FILE]

Write a strategy as what a training framework runs (dense transformers):
` + export.FormatHelp + `Each output names the tpsim version and the strategy in a header. What a format cannot
express is an error naming it and the fix. --plan-json takes the winner of 'tpsim plan --json'
(and its model unless --model is given).

Examples:
  tpsim export --format pytorch --model llama3-8b --strategy dp=2,tp=4,zero=3,sp=on --out train.py
  tpsim plan --model gpt3-175b --gpus 1024 --json > plan.json && tpsim export --format megatron --plan-json plan.json
`

type exportOptions struct {
	Format   string
	Model    string
	Strategy string
	PlanJSON string
	Out      string
	fs       *pflag.FlagSet
}

var runExport = subcommand("export", exportHelp, parseExport)

func parseExport(args []string) (*exportOptions, *pflag.FlagSet, error) {
	o := &exportOptions{}
	fs := cli.NewFlagSet("export")
	fs.StringVar(&o.Format, "format", "", "pytorch, torchtitan, megatron, deepspeed or hf-tp-plan")
	fs.StringVar(&o.Model, "model", cli.DefaultModel, "model: a preset name (see 'tpsim models') or a Hugging Face config.json")
	fs.StringVar(&o.Strategy, "strategy", "", `strategy, e.g. "dp=2,tp=4,zero=3,sp=on"`)
	fs.StringVar(&o.PlanJSON, "plan-json", "", "take the strategy (and the model) of the winner of this 'tpsim plan --json' output")
	fs.StringVar(&o.Out, "out", "", "write to this file (atomically) instead of standard output")
	o.fs = fs
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	if _, err := export.ParseFormat(o.Format); err != nil {
		return o, fs, cli.Usagef("--format: %v", strings.TrimPrefix(err.Error(), "export: "))
	}
	if (o.Strategy == "") == (o.PlanJSON == "") {
		return o, fs, cli.Usagef("give exactly one of --strategy and --plan-json")
	}
	return o, fs, nil
}

func (o *exportOptions) run(stdout, _ io.Writer) error {
	f, _ := export.ParseFormat(o.Format)
	modelName, strategy := o.Model, o.Strategy
	if o.PlanJSON != "" {
		m, s, err := search.ReadWinner(o.PlanJSON)
		if err != nil {
			return err
		}
		strategy = s
		if !o.fs.Changed("model") {
			modelName = m
		}
	}
	m, err := model.Load(modelName)
	if err != nil {
		return err
	}
	st, err := strategies.Parse(strategy)
	if err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	out, err := export.Render(f, m, st, export.Options{Version: reports.VersionLine(bi)})
	if err != nil {
		return err
	}
	if o.Out == "" {
		_, err = stdout.Write(out)
		return err
	}
	return atomicfile.WriteFile(o.Out, out, 0o644)
}
