package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/compare"
	"github.com/tpsim/tpsim/internal/atomicfile"
)

const plotHelp = `Usage: tpsim plot --in results.json [--out DIR]

Regenerate the comparison figures of 'tpsim compare' (predicted vs measured step time, step
breakdown, memory by category, bytes per mesh dimension, scaling) from a saved results.json, as
PNG and SVG. The timeline figure needs the runs' spans, which results.json does not keep: run
compare again for it.
`

type plotOptions struct {
	In, Out string
}

func runPlot(args []string, stdout, stderr io.Writer) int {
	o := &plotOptions{}
	fs := cli.NewFlagSet("plot")
	fs.StringVar(&o.In, "in", "tpsim-out/results.json", "results.json written by tpsim compare")
	fs.StringVar(&o.Out, "out", "", "directory for the figures (default: the directory of --in)")
	err := cli.ParseFlags(fs, args, 0)
	if err == nil {
		err = o.run(stdout)
	}
	return cli.Finish("plot", fs, plotHelp, err, stdout, stderr)
}

func (o *plotOptions) run(w io.Writer) error {
	data, err := os.ReadFile(o.In)
	if err != nil {
		return fmt.Errorf("cannot read the results: %v; run 'tpsim compare' first or pass --in its results.json", err)
	}
	res, err := compare.ParseResults(data)
	if err != nil {
		return fmt.Errorf("%s: %v", o.In, err)
	}
	dir := o.Out
	if dir == "" {
		dir = filepath.Dir(o.In)
	}
	if err := atomicfile.CheckDir(dir); err != nil {
		return fmt.Errorf("%v; pass --out a writable directory", err)
	}
	figs, err := compare.DrawFigures(dir, res.Model, compare.ReportRows(res.Rows))
	if err != nil {
		return err
	}
	for _, f := range figs {
		fmt.Fprintf(w, "%s.png and .svg: %s\n", filepath.Join(dir, f.Base), f.Caption)
	}
	return nil
}
