package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/validate"
)

const validateHelp = `Usage: tpsim validate [flags]

Check the cost model against published training runs. For each record with enough information
(model sizes, GPU type and count, tp/pp/dp, global batch) tpsim predicts the run with the preset
hardware of its GPU and compares with what the record measured, counted the way the source counts
it: step time if the record measured it, else tokens/s (in total or per GPU), else TFLOP/s per
GPU (Megatron-LM's Eq. 3, which counts the recompute forward pass, for Megatron-LM, BLOOM and
MT-NLG records; model FLOPs otherwise), else MFU. Where a record measured peak memory, the
predicted peak is compared with it too.

It prints predicted against published with the absolute percentage error (APE) per row, the mean
(MAPE) and max by source, by GPU type, by metric and overall, the rows it skipped and why (an
unreadable record is skipped with the field that is wrong; the others are still validated), and
what it assumed where a record is silent: the architecture, attention kernel, optimizer sharding,
overlap and sequence parallel follow the source's software (Megatron-LM, MPT, BLOOM, NeMo 24.x on
Megatron-Core, torchtitan), a stated network replaces the preset's, and knobs still missing are
chosen by tpsim's own search (the fastest that fits, as the sources tuned their runs for
throughput). The measured figures are never used to choose anything.

By default it reads the training split shipped with tpsim (validate/data/runs.json and
runs_h100.json, see its README); --data reads your own file of records in that format instead.
The presets' achieved fractions were fitted on that split by 'tpsim fit'.

Examples:
  tpsim validate
  tpsim validate --out validation
  tpsim validate --data my-runs.json --json
`

// validateOptions are the flags of tpsim validate.
type validateOptions struct {
	Data []string
	Out  string
	JSON bool
}

var runValidate = subcommand("validate", validateHelp, parseValidate)

func parseValidate(args []string) (*validateOptions, *pflag.FlagSet, error) {
	o := &validateOptions{}
	fs := cli.NewFlagSet("validate")
	fs.StringSliceVar(&o.Data, "data", nil, "JSON file(s) of published runs (the format of validate/data/runs.json); default: the shipped training split")
	fs.StringVar(&o.Out, "out", "", "directory to write validate.csv, validate.json and the figure (validate.png, validate.svg)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return o, fs, cli.ParseFlags(fs, args, 0)
}

func (o *validateOptions) run(w, _ io.Writer) error {
	recs, skips, name, err := validate.Load(o.Data)
	if err != nil {
		return err
	}
	out := validate.Run(recs, skips, validate.Options{})
	if err := reports.PrintResult(w, o.JSON, out, func(w io.Writer) error { return validate.WriteText(w, name, len(recs)+len(skips), out) }); err != nil {
		return err
	}
	if o.Out != "" {
		header, rows := out.Table()
		if err := reports.WriteResults(o.Out, "validate", header, rows, out, "validate", out.Figure); err != nil {
			return err
		}
	}
	if len(out.Rows) == 0 {
		// "0 compared" is no validation: an error, after the report that lists why each was skipped.
		return fmt.Errorf("none of the %d records of %s could be compared (the skipped list above says why each was skipped); give records with the model sizes, GPU type and count, tp/pp/dp and global batch", len(recs)+len(skips), name)
	}
	return nil
}
