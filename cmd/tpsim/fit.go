package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/validate"
)

const fitHelp = `Usage: tpsim fit [flags]

Fit the presets' declared achieved fractions on the training split of published runs
(validate/data/runs.json and runs_h100.json): per GPU type, the fraction of the matmul sweep's
ceiling that training GEMMs reach (and, on A100, where the records say which software stack ran,
that stack's own), the FP8 products' fraction of the FP8 peak, and the fused attention kernel's
fraction of peak, and on A100 the per-copy time of DeepSpeed 2021's list collectives
(tensorlists=on); 10 parameters in all (validate.Params), never one per record, model or GPU
count. The objective is the rows' mean absolute percentage error (MAPE); the search
is deterministic, so running it again gives the same bytes.

It prints the fitted values next to their start values and ceilings, the in-sample MAPE, and the
leave-one-source-out MAPE: each source's rows priced with the values fitted on the other
sources only. With --write DIR it writes the values into the presets in DIR (hardware/presets
from the repository root), each with its provenance (the records, the objective, the command)
under sources; rebuild tpsim to use them. With --check DIR it writes nothing and fails, naming
the lines, where the presets in DIR are not what the fit gives (CI runs it, so a change to the
model or the data that moves a fitted value must refit the presets in the same commit).

Examples:
  tpsim fit
  tpsim fit --write hardware/presets
  tpsim fit --check hardware/presets
`

type fitOptions struct {
	Write, Check string
	JSON         bool
}

func runFit(args []string, stdout, stderr io.Writer) int {
	o := &fitOptions{}
	fs := cli.NewFlagSet("fit")
	fs.StringVar(&o.Write, "write", "", "directory of the preset JSON files to write the fitted values into (hardware/presets)")
	fs.StringVar(&o.Check, "check", "", "directory of the preset JSON files to compare with the fit, writing nothing (hardware/presets)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	err := cli.ParseFlags(fs, args, 0)
	if err == nil && o.Write != "" && o.Check != "" {
		err = cli.Usagef("--write and --check exclude each other: --check compares the presets with the fit, --write replaces them")
	}
	if err == nil {
		err = o.run(stdout, fs)
	}
	return cli.Finish("fit", fs, fitHelp, err, stdout, stderr)
}

func (o *fitOptions) run(w io.Writer, _ *pflag.FlagSet) error {
	recs, skips, err := validate.Training()
	if err != nil {
		return err
	}
	cases, _ := validate.PrepareAll(recs)
	res := validate.Fit(cases)
	if err := reports.PrintResult(w, o.JSON, res, func(w io.Writer) error { return validate.WriteFitText(w, res, len(recs)+len(skips)) }); err != nil {
		return err
	}
	switch {
	case o.Write != "":
		return validate.WritePresets(o.Write, res, validate.FitCommand)
	case o.Check != "":
		return validate.CheckPresets(o.Check, res, validate.FitCommand)
	}
	return nil
}
