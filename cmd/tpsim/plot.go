package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	fs := newFlagSet("plot")
	fs.StringVar(&o.In, "in", "tpsim-out/results.json", "results.json written by tpsim compare")
	fs.StringVar(&o.Out, "out", "", "directory for the figures (default: the directory of --in)")
	err := parseFlags(fs, args, 0)
	if err == nil {
		err = o.run(stdout)
	}
	return finish("plot", fs, plotHelp, err, stdout, stderr)
}

func (o *plotOptions) run(w io.Writer) error {
	data, err := os.ReadFile(o.In)
	if err != nil {
		return fmt.Errorf("cannot read the results: %v; run 'tpsim compare' first or pass --in its results.json", err)
	}
	var res compareResults
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("%s is not a results.json of tpsim compare: %v", o.In, err)
	}
	if len(res.Rows) == 0 {
		return fmt.Errorf("%s has no rows to plot", o.In)
	}
	dir := o.Out
	if dir == "" {
		dir = filepath.Dir(o.In)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %v", dir, err)
	}
	figs, err := drawCompareFigures(dir, res.Model, rowsOf(res.Rows))
	if err != nil {
		return err
	}
	for _, f := range figs {
		fmt.Fprintf(w, "%s/%s.png and .svg: %s\n", dir, f.base, f.caption)
	}
	return nil
}
