package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
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

func runValidate(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseValidate(args)
	if err == nil {
		err = o.run(stdout)
	}
	return finish("validate", fs, validateHelp, err, stdout, stderr)
}

func parseValidate(args []string) (*validateOptions, *pflag.FlagSet, error) {
	o := &validateOptions{}
	fs := newFlagSet("validate")
	fs.StringSliceVar(&o.Data, "data", nil, "JSON file(s) of published runs (the format of validate/data/runs.json); default: the shipped training split")
	fs.StringVar(&o.Out, "out", "", "directory to write validate.csv, validate.json and the figure (validate.png, validate.svg)")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return o, fs, parseFlags(fs, args, 0)
}

// loadRecords reads the files of records named, or the shipped training split when none is.
func loadRecords(paths []string) ([]validate.Record, []validate.Skip, string, error) {
	if len(paths) == 0 {
		recs, skips, err := validate.Training()
		return recs, skips, "validate/data/" + strings.Join(validate.TrainingFiles, ", "), err
	}
	var recs []validate.Record
	var skips []validate.Skip
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, "", fmt.Errorf("no file of runs at %s; give --data PATH of a JSON array of run records, or no --data for the shipped training split", p)
			}
			return nil, nil, "", err
		}
		r, s, err := validate.Parse(p, data)
		if err != nil {
			return nil, nil, "", err
		}
		recs, skips = append(recs, r...), append(skips, s...)
	}
	return recs, skips, strings.Join(paths, ", "), nil
}

func (o *validateOptions) run(w io.Writer) error {
	recs, skips, name, err := loadRecords(o.Data)
	if err != nil {
		return err
	}
	out := validate.Run(recs, skips, validate.Options{})
	var buf bytes.Buffer
	if o.JSON {
		err = writeJSON(&buf, out)
	} else {
		err = valWriteText(&buf, name, len(recs)+len(skips), out)
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.Out != "" {
		return valWriteFiles(o.Out, out)
	}
	return nil
}

func valFormat(metric string, v float64) string {
	switch metric {
	case validate.StepTime:
		return units.Seconds(v).String()
	case validate.TokensPerS, validate.TokensPerSPerGPU:
		return reports.Commas(int64(v + 0.5))
	case validate.TFLOPs, validate.ModelTFLOPsPerGPU:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// valWriteGroups prints one table of error by a key.
func valWriteGroups(ew *errWriter, title string, groups []validate.Group, all validate.Summary) {
	ew.printf("\nError by %s\n", title)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\trows\tMAPE\tmax APE\n", title)
	for _, s := range groups {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%.1f%%\n", s.Name, s.N, 100*s.MAPE, 100*s.MaxAPE)
	}
	fmt.Fprintf(tw, "  all\t%d\t%.1f%%\t%.1f%%\n", all.N, 100*all.MAPE, 100*all.MaxAPE)
	tw.Flush()
}

// valWriteText prints the human form.
func valWriteText(w io.Writer, name string, n int, out *validate.Output) error {
	ew := &errWriter{w: w}
	ew.printf("Validation against %d published runs (%s): %d compared, %d skipped\n\n", n, name, len(out.Rows), len(out.Skipped))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\thardware\tstrategy\tmetric\tpublished\tpredicted\tAPE\tmemory (pub/pred GiB)\n")
	for _, r := range out.Rows {
		mem := ""
		if r.Memory != nil {
			mem = fmt.Sprintf("%.1f / %.1f (%.1f%%)", r.Memory.PublishedGiB, r.Memory.PredictedGiB, 100*r.Memory.APE)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\n", r.ID, r.Hardware, r.Strategy, r.Metric, valFormat(r.Metric, r.Published), valFormat(r.Metric, r.Predicted), 100*r.APE, mem)
	}
	tw.Flush()
	valWriteGroups(ew, "source", out.BySource, out.Summary)
	valWriteGroups(ew, "GPU type", out.ByGPU, out.Summary)
	valWriteGroups(ew, "metric", out.ByMetric, out.Summary)
	if m := out.Memory; m.N > 0 {
		ew.printf("\nPeak memory: %d rows measured it; median APE %.1f%%, max %.1f%%\n", m.N, 100*m.MedianAPE, 100*m.MaxAPE)
	}
	if len(out.Rows) > 0 {
		ew.printf("\nHardest rows\n")
		for _, r := range validate.Hardest(out.Rows, 5) {
			ew.printf("  %s: %s published %s, predicted %s (%.1f%%)\n", r.ID, r.Metric, valFormat(r.Metric, r.Published), valFormat(r.Metric, r.Predicted), 100*r.APE)
		}
	}
	if len(out.Skipped) > 0 {
		ew.printf("\nSkipped\n")
		for _, s := range out.Skipped {
			ew.printf("  %s: %s\n", s.ID, s.Reason)
		}
	}
	ew.printf("\nAssumed (values the records do not give)\n")
	counts := map[string]int{}
	var order []string
	for _, r := range out.Rows {
		for _, a := range r.Assumed {
			if strings.HasPrefix(a, validate.ChosenBySearch) {
				continue
			}
			if counts[a] == 0 {
				order = append(order, a)
			}
			counts[a]++
		}
	}
	for _, a := range order {
		ew.printf("  %d rows: %s\n", counts[a], a)
	}
	for _, r := range out.Rows {
		for _, a := range r.Assumed {
			if strings.HasPrefix(a, validate.ChosenBySearch) {
				ew.printf("  %s: %s\n", r.ID, a)
			}
		}
	}
	return ew.err
}

// valWriteFiles writes validate.csv, validate.json and the figure into dir.
func valWriteFiles(dir string, out *validate.Output) error {
	if err := atomicfile.CheckDir(dir); err != nil {
		return err
	}
	header := []string{"id", "source", "gpu", "hardware", "strategy", "metric", "published", "predicted", "ape"}
	var rows [][]string
	for _, r := range out.Rows {
		rows = append(rows, []string{r.ID, r.Source, r.GPU, r.Hardware, r.Strategy, r.Metric,
			reports.Number(r.Published), strconv.FormatFloat(r.Predicted, 'g', 6, 64), strconv.FormatFloat(r.APE, 'f', 4, 64)})
	}
	var csv bytes.Buffer
	if err := reports.CSV(&csv, header, rows); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "validate.csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := writeJSON(&js, out); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "validate.json"), js.Bytes(), 0o644); err != nil {
		return err
	}
	if len(out.Rows) == 0 {
		return nil
	}
	// The figure compares step times: each row's published figure converted to the step time it
	// implies (tokens per step / tokens/s; FLOPs per step counted the source's way / (TFLOP/s x
	// GPUs)), one colour per source, y = x and a ±15% band.
	var prs []reports.Row
	for _, r := range out.Rows {
		prs = append(prs, reports.Row{Strategy: r.Source, Predicted: reports.Sample{Time: reports.StepTime{Step: r.PredStep}},
			Measured: reports.Sample{Time: reports.StepTime{Step: r.PubStep}}})
	}
	s := out.Summary
	fig, err := reports.PredictedVsMeasured(fmt.Sprintf("Step time: predicted vs published (%d runs, MAPE %.1f%%)", s.N, 100*s.MAPE), prs, reports.DefaultBand)
	if err != nil {
		return err
	}
	return reports.Save(fig, dir, "validate", reports.DefaultWidth, reports.DefaultHeight)
}
