package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/validate"
)

const fitHelp = `Usage: tpsim fit [flags]

Fit the presets' declared achieved fractions on the training split of published runs
(validate/data/runs.json and runs_h100.json): per GPU type, the fraction of the matmul sweep's
ceiling that training GEMMs reach (and, on A100, where the records say which software stack ran,
that stack's own), the FP8 products' fraction of the FP8 peak, and the fused attention kernel's
fraction of peak; 9 parameters in all (validate.Params), never one per record, model or GPU
count. The objective is the rows' mean absolute percentage error (MAPE); the search
is deterministic, so running it again gives the same bytes.

It prints the fitted values next to their start values and ceilings, the in-sample MAPE, and the
leave-one-source-out MAPE: each source's rows priced with the values fitted on the other
sources only. With --write DIR it writes the values into the presets in DIR (hardware/presets
from the repository root), each with its provenance (the records, the objective, the command)
under sources; rebuild tpsim to use them.

Examples:
  tpsim fit
  tpsim fit --write hardware/presets
`

type fitOptions struct {
	Write string
	JSON  bool
}

func runFit(args []string, stdout, stderr io.Writer) int {
	o := &fitOptions{}
	fs := newFlagSet("fit")
	fs.StringVar(&o.Write, "write", "", "directory of the preset JSON files to write the fitted values into (hardware/presets)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	err := parseFlags(fs, args, 0)
	if err == nil {
		err = o.run(stdout, fs)
	}
	return finish("fit", fs, fitHelp, err, stdout, stderr)
}

func (o *fitOptions) run(w io.Writer, _ *pflag.FlagSet) error {
	recs, skips, err := validate.Training()
	if err != nil {
		return err
	}
	cases, _ := validate.PrepareAll(recs)
	res := validate.Fit(cases)
	var buf bytes.Buffer
	if o.JSON {
		err = writeJSON(&buf, res)
	} else {
		err = fitWriteText(&buf, res, len(recs)+len(skips))
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.Write != "" {
		return fitWritePresets(o.Write, res)
	}
	return nil
}

// fitCommand is the command the provenance names.
const fitCommand = "tpsim fit --write hardware/presets"

func fitWriteText(w io.Writer, res *validate.FitResult, n int) error {
	ew := &errWriter{w: w}
	ew.printf("Fit on the training split (validate/data/%s): %d records, %d rows priced\n\n", strings.Join(validate.TrainingFiles, ", "), n, res.Rows)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPU type\tstack\tparameter\tstart\tfitted\trows\n")
	for i, p := range validate.Params {
		stack := p.Stack
		if stack == "" {
			stack = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%d\n", p.GPU, stack, p.Field, p.Start, res.Values[i], res.ParamRows[i])
	}
	tw.Flush()
	ew.printf("\n%d parameters over %d GPU types; the GEMM fractions are of the preset's gemm_max_fraction (the matmul sweep's ceiling), the others of peak.\n", len(validate.Params), len(validate.GPUPresets))
	ew.printf("\nIn-sample MAPE %.1f%% (max %.1f%%) over %d rows; leave-one-source-out MAPE %.1f%% (max %.1f%%)\n",
		100*res.InSample.MAPE, 100*res.InSample.MaxAPE, res.InSample.N, 100*res.LOSO.MAPE, 100*res.LOSO.MaxAPE)
	ew.printf("\nIn sample by GPU type\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, g := range res.InByGPU {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\n", g.Name, g.N, 100*g.MAPE)
	}
	tw.Flush()
	ew.printf("\nLeft out, by source (rows priced with the values fitted on the other sources)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, g := range res.BySource {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%s\n", g.Name, g.N, 100*g.MAPE, fitFold(res.FoldValues[g.Name], res.Values))
	}
	tw.Flush()
	return ew.err
}

// fitFold lists the values a fold fitted that differ from the in-sample fit.
func fitFold(fold, all validate.Values) string {
	var diff []string
	for i, p := range validate.Params {
		if fold[i] != all[i] {
			diff = append(diff, fmt.Sprintf("%s %s %.3f", p.GPU, strings.TrimPrefix(p.Name(), "efficiency."), fold[i]))
		}
	}
	if len(diff) == 0 {
		return ""
	}
	return "fold: " + strings.Join(diff, ", ")
}

// fitWritePresets writes the fitted values and their provenance into the preset files in dir.
func fitWritePresets(dir string, res *validate.FitResult) error {
	for gpu, names := range validate.GPUPresets {
		for _, name := range names {
			path := filepath.Join(dir, name+".json")
			text, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("fit: %v; give --write the directory of the presets (hardware/presets from the repository root)", err)
			}
			for i, p := range validate.Params {
				if p.GPU != gpu {
					continue
				}
				if text, err = validate.SetPresetValue(text, p, res.Values[i], res.Provenance(i, fitCommand)); err != nil {
					return fmt.Errorf("fit: %s: %v", path, err)
				}
			}
			if err := atomicfile.WriteFile(path, text, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
