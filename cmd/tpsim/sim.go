package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/reports"
)

const simHelp = `Usage: tpsim sim [flags]

Lay one training step out on a timeline with the discrete-event simulator: per pipeline rank a
compute and a communication stream, the pipeline schedule (gpipe, 1f1b, interleaved), data-parallel
gradient buckets overlapping backward (overlap=on), ZeRO-3 prefetch. Prints the keys of
'tpsim predict' with the simulated time, each rank's utilisation and the critical path; --trace
writes a Chrome trace (one process per pipeline rank, threads for compute and communication) that
opens in Perfetto beside 'tpsim exec --trace'.

Data-, tensor- and context-parallel replicas of a pipeline rank do the same work and are
simulated once, so a run of thousands of GPUs costs what one pipeline does.

Examples:
  tpsim sim --model gpt3-175b --hardware a100-80g --strategy dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full
  tpsim sim --model llama3-8b --strategy pp=4,dp=2,gbs=64,schedule=interleaved,vpp=2 --trace step.json
`

// simOptions are the flags of tpsim sim: predict's, and a trace file.
type simOptions struct {
	cli.Pricing
	JSON  bool
	Trace string
	Path  int // critical-path ops to print
}

var runSim = subcommand("sim", simHelp, parseSim)

func parseSim(args []string) (*simOptions, *pflag.FlagSet, error) {
	o := &simOptions{}
	fs := cli.NewFlagSet("sim")
	o.Register(fs)
	fs.BoolVar(&o.JSON, "json", false, "print the simulated step as JSON")
	fs.StringVar(&o.Trace, "trace", "", "write the simulated timeline as a Chrome trace to this file")
	fs.IntVar(&o.Path, "path", 12, "number of critical-path ops to print (the last ones)")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	if o.Path < 0 {
		return o, fs, cli.Usagef("--path=%d; give the number of critical-path ops to print, 0 or more", o.Path)
	}
	return o, fs, o.Check(fs)
}

func (o *simOptions) run(w, _ io.Writer) error {
	p, err := predict(&o.Pricing)
	if err != nil {
		return err
	}
	rep, res, err := p.Simulate(o.Trace != "")
	if err != nil {
		return err
	}
	if o.Trace != "" {
		if err := writeTraceFile(o.Trace, compare.SimSpans(res, p.Program.Strategy.Mesh)); err != nil {
			return err
		}
	}
	if o.JSON {
		return reports.WriteJSON(w, rep)
	}
	return rep.WriteText(w, o.Path)
}
