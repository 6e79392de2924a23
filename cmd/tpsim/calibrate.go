package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/internal/atomicfile"
)

const calibrateHelp = `Usage: tpsim calibrate [flags]

Measure this machine through the kernels and collectives that 'tpsim exec' runs, each in
isolation (never a model's training step): matrix multiply over the seed-mlp and gpt-tiny shapes
and larger ones, elementwise bandwidth from KiB to tens of MiB with exec's per-op bookkeeping, ring
all-reduce, all-gather and reduce-scatter on 2..8 goroutine ranks from 4 bytes to 32 MiB, and how
compute slows down when 1..8 goroutines share the cores. Fits the "host" hardware profile that the
cost model prices host runs with, prints what it measured and the profile, and caches it (see
below) for 'tpsim compare'. Takes about 20 s on 2 quiet cores and minutes on a loaded machine
(--quick: about 2 s, coarser).

The cache lives under the user cache directory (tpsim/host.json in $XDG_CACHE_HOME or ~/.cache on
Linux, ~/Library/Caches on macOS); it goes stale when the CPU, core count, GOMAXPROCS, Go version or
calibration format changes. Progress goes to stderr.

Examples:
  tpsim calibrate
  tpsim calibrate --out host.json && tpsim predict --hardware host.json --model gpt-tiny --strategy tp=2
  tpsim calibrate --quick --json
`

// calibrateOptions are the flags of tpsim calibrate.
type calibrateOptions struct {
	Out   string // also write the profile here
	Quick bool
	JSON  bool
}

var runCalibrate = subcommand("calibrate", calibrateHelp, parseCalibrate)

func parseCalibrate(args []string) (*calibrateOptions, *pflag.FlagSet, error) {
	o := &calibrateOptions{}
	fs := cli.NewFlagSet("calibrate")
	fs.StringVar(&o.Out, "out", "", "also write the profile to FILE (hardware JSON, for --hardware FILE)")
	fs.BoolVar(&o.Quick, "quick", false, "fewer points and shorter timings: about 5 s, a coarser profile")
	fs.BoolVar(&o.JSON, "json", false, "print the profile as hardware JSON instead of the tables")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	if fs.Changed("out") && strings.TrimSpace(o.Out) == "" {
		return o, fs, cli.Usagef("--out needs a file name, e.g. --out host.json")
	}
	return o, fs, nil
}

func (o *calibrateOptions) run(stdout, stderr io.Writer) error {
	if o.Out != "" {
		// Refuse a path that cannot be written before spending the calibration's seconds.
		if err := atomicfile.CheckFile(o.Out); err != nil {
			return fmt.Errorf("--out %s: %v", o.Out, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	hw, rep, err := calibrate.Run(ctx, calibrate.Options{Quick: o.Quick, Progress: stderr})
	if err != nil {
		if ctx.Err() != nil {
			return cli.ErrInterrupted // nothing measured is kept: a partial profile is not one
		}
		return err
	}
	if o.JSON {
		err = hw.Save(stdout)
	} else {
		err = rep.WriteText(stdout, hw)
	}
	if err != nil {
		return err
	}
	var errs []error
	if o.Out != "" {
		var buf bytes.Buffer
		if err := hw.Save(&buf); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(o.Out, buf.Bytes(), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%v; choose a writable --out path", err))
		} else {
			fmt.Fprintf(stderr, "tpsim calibrate: wrote %s\n", o.Out)
		}
	}
	if rep.Loaded() {
		fmt.Fprintf(stderr, "tpsim calibrate: warning: other processes used %.0f%% of the CPU while this machine was measured (more than %.0f%%): the figures are slower and noisier than this machine alone, and the profile is marked as measured under load\n",
			100*rep.OtherCPU, 100*calibrate.BusyShare)
	}
	saved, err := calibrate.SaveCache(hw, rep)
	switch {
	case err != nil:
		errs = append(errs, err)
	case saved.Written:
		fmt.Fprintf(stderr, "tpsim calibrate: cached %s\n", saved.Path)
	default:
		fmt.Fprintf(stderr, "tpsim calibrate: %s\n", saved.Reason)
	}
	return errors.Join(errs...)
}
