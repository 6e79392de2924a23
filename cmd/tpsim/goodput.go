package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/goodput"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

const goodputHelp = `Usage: tpsim goodput [flags]

Account for what a training at scale loses to failures, restarts, checkpoints and stragglers:
goodput (useful time / wall time) and its breakdown, as a closed form and as a seeded event
simulation side by side. Failure rates per GPU-hour are the Llama 3 paper's Table 5 (419
unexpected and 47 planned interruptions in 54 days on 16,384 H100s), scaled with --gpus. The
checkpoint is --params x 14 bytes written by every node at --storage-bw; its interval defaults to
Young/Daly's sqrt(2 x checkpoint x MTBF). Stragglers: each rank's step is normal with
--jitter-cv, the step is the slowest rank's. The defaults are Llama 3 405B on 16,384 GPUs
(5.93 s steps, about 54 days); see the goodput package's documentation for every formula.
`

// goodputOptions are the flags of tpsim goodput.
type goodputOptions struct {
	GPUs        int
	StepTime    float64
	Steps       int
	Params      float64
	Interval    float64
	Async       bool
	JitterCV    float64
	StorageGBps float64
	Detection   float64
	Restart     float64
	NoSpares    bool
	Seed        uint64
	JSON        bool
}

var runGoodput = subcommand("goodput", goodputHelp, parseGoodput)

func parseGoodput(args []string) (*goodputOptions, *pflag.FlagSet, error) {
	o := &goodputOptions{}
	fs := cli.NewFlagSet("goodput")
	fs.IntVar(&o.GPUs, "gpus", 16384, "GPUs in the job")
	fs.Float64Var(&o.StepTime, "step-time", 6*405e9*16e6/(16384*400e12), "mean step time in seconds, before stragglers")
	fs.IntVar(&o.Steps, "steps", 708000, "training steps")
	fs.Float64Var(&o.Params, "params", 405e9, "model parameters (checkpoint size)")
	fs.Float64Var(&o.Interval, "checkpoint-interval", 0, "seconds of training between checkpoints (0: Young/Daly's optimum)")
	fs.BoolVar(&o.Async, "async", false, "asynchronous checkpoints: the step pays only the device-to-host copy")
	fs.Float64Var(&o.JitterCV, "jitter-cv", 0, "coefficient of variation of each rank's step time (normal), e.g. 0.02")
	fs.Float64Var(&o.StorageGBps, "storage-bw", 1, "checkpoint storage bandwidth per node, GB/s")
	fs.Float64Var(&o.Detection, "detection", float64(goodput.DefaultDetection), "seconds from a failure to its detection")
	fs.Float64Var(&o.Restart, "restart", float64(goodput.DefaultRestart), "seconds to restart the job, checkpoint read apart")
	fs.BoolVar(&o.NoSpares, "no-hot-spares", false, "hardware failures wait for the replacement (1 h) before the restart")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the simulation")
	fs.BoolVar(&o.JSON, "json", false, "print both results as JSON")
	return o, fs, cli.ParseFlags(fs, args, 0)
}

func (o *goodputOptions) run(w, _ io.Writer) error {
	if !(o.StorageGBps > 0) {
		return cli.Usagef("--storage-bw is %v; give the per-node storage bandwidth in GB/s, > 0", o.StorageGBps)
	}
	for _, d := range []struct {
		name string
		v    float64
	}{{"--detection", o.Detection}, {"--restart", o.Restart}} {
		if !(d.v > 0) {
			return cli.Usagef("%s is %v; give a duration in seconds, > 0", d.name, d.v)
		}
	}
	if o.Interval < 0 {
		return cli.Usagef("--checkpoint-interval is %v; give seconds > 0, or 0 for Young/Daly's optimum", o.Interval)
	}
	c := goodput.Config{
		GPUs: o.GPUs, StepTime: units.Seconds(o.StepTime), Steps: o.Steps, Params: o.Params,
		CheckpointInterval: units.Seconds(o.Interval), Async: o.Async, JitterCV: o.JitterCV,
		StorageBandwidthPerNode: units.BytesPerSecond(o.StorageGBps * 1e9),
		Detection:               units.Seconds(o.Detection), Restart: units.Seconds(o.Restart), HotSpares: !o.NoSpares,
	}
	cf, err := goodput.ClosedForm(c)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	sim, err := goodput.Simulate(c, o.Seed)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if o.JSON {
		return reports.WriteJSON(w, map[string]goodput.Result{"closed_form": cf, "simulation": sim})
	}
	return goodput.WriteComparison(w, c, o.Seed, cf, sim)
}
