package validate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

// What `tpsim validate` and `tpsim fit` read and print: the files of records, the text report,
// the CSV table and the figure, and the fitted values written into the presets.

// Load reads the files of records named, or the shipped training split when none is; name says
// which, for the report's first line.
func Load(paths []string) (recs []Record, skips []Skip, name string, err error) {
	if len(paths) == 0 {
		recs, skips, err := Training()
		return recs, skips, "validate/data/" + strings.Join(TrainingFiles, ", "), err
	}
	for _, p := range paths {
		if err := checkDataPath(p); err != nil {
			return nil, nil, "", err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, "", fmt.Errorf("no file of runs at %s; give --data PATH of a JSON array of run records, or no --data for the shipped training split", p)
			}
			return nil, nil, "", err
		}
		r, s, err := Parse(p, data)
		if err == nil && len(r) == 0 {
			err = unreadableFile(p, s)
		}
		if err != nil {
			return nil, nil, "", err
		}
		recs, skips = append(recs, r...), append(skips, s...)
	}
	return recs, skips, strings.Join(paths, ", "), nil
}

// Format prints a value of metric in its unit: a step time in seconds, tokens/s as a whole
// number with thousands separators, TFLOP/s with one decimal, MFU as a percentage.
func Format(metric string, v float64) string {
	switch metric {
	case StepTime:
		return units.Seconds(v).String()
	case TokensPerS, TokensPerSPerGPU:
		return reports.Commas(int64(v + 0.5))
	case TFLOPs, ModelTFLOPsPerGPU:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// Assumed lists what the rows assumed where their records are silent: each assumption shared by
// rows once with its number of rows, in the order first met (shared), then each choice the
// search made, per row ("ID: not stated, chosen by search among ...").
func Assumed(rows []Row) (shared []string, counts map[string]int, chosen []string) {
	counts = map[string]int{}
	for _, r := range rows {
		for _, a := range r.Assumed {
			if strings.HasPrefix(a, ChosenBySearch) {
				continue
			}
			if counts[a] == 0 {
				shared = append(shared, a)
			}
			counts[a]++
		}
	}
	for _, r := range rows {
		for _, a := range r.Assumed {
			if strings.HasPrefix(a, ChosenBySearch) {
				chosen = append(chosen, r.ID+": "+a)
			}
		}
	}
	return shared, counts, chosen
}

// writeGroups prints one table of error by a key.
func writeGroups(ew *reports.ErrWriter, title string, groups []Group, all Summary) {
	ew.Printf("\nError by %s\n", title)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\trows\tMAPE\tmax APE\n", title)
	for _, s := range groups {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%.1f%%\n", s.Name, s.N, 100*s.MAPE, 100*s.MaxAPE)
	}
	fmt.Fprintf(tw, "  all\t%d\t%.1f%%\t%.1f%%\n", all.N, 100*all.MAPE, 100*all.MaxAPE)
	tw.Flush()
}

// WriteText prints the report of `tpsim validate`: the rows, the error by source, GPU type and
// metric, peak memory, the hardest rows, the skipped records and the assumptions. name is what
// was read (Load) and n the number of records in it.
func WriteText(w io.Writer, name string, n int, out *Output) error {
	ew := &reports.ErrWriter{W: w}
	ew.Printf("Validation against %d published runs (%s): %d compared, %d skipped\n\n", n, name, len(out.Rows), len(out.Skipped))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\thardware\tstrategy\tmetric\tpublished\tpredicted\tAPE\tmemory (pub/pred GiB)\n")
	for _, r := range out.Rows {
		mem := ""
		if r.Memory != nil {
			mem = fmt.Sprintf("%.1f / %.1f (%.1f%%)", r.Memory.PublishedGiB, r.Memory.PredictedGiB, 100*r.Memory.APE)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\n", r.ID, r.Hardware, r.Strategy, r.Metric, Format(r.Metric, r.Published), Format(r.Metric, r.Predicted), 100*r.APE, mem)
	}
	tw.Flush()
	writeGroups(ew, "source", out.BySource, out.Summary)
	writeGroups(ew, "GPU type", out.ByGPU, out.Summary)
	writeGroups(ew, "metric", out.ByMetric, out.Summary)
	if m := out.Memory; m.N > 0 {
		ew.Printf("\nPeak memory: %d rows measured it; median APE %.1f%%, max %.1f%%\n", m.N, 100*m.MedianAPE, 100*m.MaxAPE)
	}
	if len(out.Rows) > 0 {
		ew.Printf("\nHardest rows\n")
		for _, r := range Hardest(out.Rows, 5) {
			ew.Printf("  %s: %s published %s, predicted %s (%.1f%%)\n", r.ID, r.Metric, Format(r.Metric, r.Published), Format(r.Metric, r.Predicted), 100*r.APE)
		}
	}
	if len(out.Skipped) > 0 {
		ew.Printf("\nSkipped\n")
		for _, s := range out.Skipped {
			ew.Printf("  %s: %s\n", s.ID, s.Reason)
		}
	}
	ew.Printf("\nAssumed (values the records do not give)\n")
	shared, counts, chosen := Assumed(out.Rows)
	for _, a := range shared {
		ew.Printf("  %d rows: %s\n", counts[a], a)
	}
	for _, c := range chosen {
		ew.Printf("  %s\n", c)
	}
	return ew.Err
}

// Table is validate.csv: one row per compared record.
func (out *Output) Table() (header []string, rows [][]string) {
	header = []string{"id", "source", "gpu", "hardware", "strategy", "metric", "published", "predicted", "ape"}
	for _, r := range out.Rows {
		rows = append(rows, []string{r.ID, r.Source, r.GPU, r.Hardware, r.Strategy, r.Metric,
			reports.Number(r.Published), strconv.FormatFloat(r.Predicted, 'g', 6, 64), strconv.FormatFloat(r.APE, 'f', 4, 64)})
	}
	return header, rows
}

// Figure compares step times: each row's published figure converted to the step time it implies
// (tokens per step / tokens/s; FLOPs per step counted the source's way / (TFLOP/s x GPUs)), one
// colour per source, y = x and a ±15% band. It is nil when no row was compared.
func (out *Output) Figure() (*reports.Figure, error) {
	if len(out.Rows) == 0 {
		return nil, nil
	}
	var prs []reports.Row
	for _, r := range out.Rows {
		prs = append(prs, reports.Row{Strategy: r.Source, Predicted: reports.Sample{Time: reports.StepTime{Step: r.PredStep}},
			Measured: reports.Sample{Time: reports.StepTime{Step: r.PubStep}}})
	}
	s := out.Summary
	return reports.PredictedVsMeasured(fmt.Sprintf("Step time: predicted vs published (%d runs, MAPE %.1f%%)", s.N, 100*s.MAPE), prs, reports.DefaultBand)
}

// FitCommand is the command the fitted values' provenance names.
const FitCommand = "tpsim fit --write hardware/presets"

// WriteFitText prints what `tpsim fit` found over the n records of the training split: the
// fitted values beside their start values, the in-sample and leave-one-source-out errors.
func WriteFitText(w io.Writer, res *FitResult, n int) error {
	ew := &reports.ErrWriter{W: w}
	ew.Printf("Fit on the training split (validate/data/%s): %d records, %d rows priced\n\n", strings.Join(TrainingFiles, ", "), n, res.Rows)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPU type\tstack\tparameter\tstart\tfitted\trows\n")
	for i, p := range Params {
		stack := p.Stack
		if stack == "" {
			stack = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%d\n", p.GPU, stack, p.Field, p.Start, res.Values[i], res.ParamRows[i])
	}
	for _, s := range sharedValues {
		fmt.Fprintf(tw, "%s\tany\t%s\tshared\t%.3f\t%s's\n", s.GPU, s.Field, res.Values[s.Param], s.From)
	}
	tw.Flush()
	ew.Printf("\n%d parameters over %d GPU types; a GPU type with no row of its own for a field takes its chip's fitted value (shared, not fitted); the GEMM fractions are of the preset's gemm_max_fraction (the matmul sweep's ceiling), list_copy_us is microseconds per copy, the others fractions of peak.\n", len(Params), paramGPUs())
	ew.Printf("\nIn-sample MAPE %.1f%% (max %.1f%%) over %d rows; leave-one-source-out MAPE %.1f%% (max %.1f%%)\n",
		100*res.InSample.MAPE, 100*res.InSample.MaxAPE, res.InSample.N, 100*res.LOSO.MAPE, 100*res.LOSO.MaxAPE)
	ew.Printf("\nIn sample by GPU type\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, g := range res.InByGPU {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\n", g.Name, g.N, 100*g.MAPE)
	}
	tw.Flush()
	ew.Printf("\nLeft out, by source (rows priced with the values fitted on the other sources)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	for _, g := range res.BySource {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\t%s\n", g.Name, g.N, 100*g.MAPE, FoldDiff(res.FoldValues[g.Name], res.Values))
	}
	tw.Flush()
	return ew.Err
}

// FoldDiff lists the values a fold fitted that differ from the in-sample fit all: "fold: a100
// gemm_fraction 0.612, ..."; "" when none does.
func FoldDiff(fold, all Values) string {
	var diff []string
	for i, p := range Params {
		if fold[i] != all[i] {
			diff = append(diff, fmt.Sprintf("%s %s %.3f", p.GPU, strings.TrimPrefix(p.Name(), "efficiency."), fold[i]))
		}
	}
	if len(diff) == 0 {
		return ""
	}
	return "fold: " + strings.Join(diff, ", ")
}

// WritePresets writes the fitted values and their provenance (naming command) into the preset
// files in dir (GPUPresets), each atomically.
func WritePresets(dir string, res *FitResult, command string) error {
	files, err := fittedPresets(dir, res, command)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := atomicfile.WriteFile(f.path, f.fitted, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CheckPresets reports whether the preset files in dir hold what WritePresets would write: an
// error naming each file that differs and its first differing lines, nil when all are the
// fit's, byte for byte.
func CheckPresets(dir string, res *FitResult, command string) error {
	files, err := fittedPresets(dir, res, command)
	if err != nil {
		return err
	}
	var diffs []string
	for _, f := range files {
		if string(f.text) == string(f.fitted) {
			continue
		}
		old, fit := strings.Split(string(f.text), "\n"), strings.Split(string(f.fitted), "\n")
		var lines []string
		for i := 0; i < max(len(old), len(fit)) && len(lines) < 3; i++ {
			if i >= len(old) || i >= len(fit) || old[i] != fit[i] {
				lines = append(lines, fmt.Sprintf("    line %d: %s -> %s", i+1, clip(at(old, i)), clip(at(fit, i))))
			}
		}
		diffs = append(diffs, f.path+" differs from the fit:\n"+strings.Join(lines, "\n"))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("fit: the presets are not what the fit gives on this code and data:\n%s\nrun `%s` and rebuild", strings.Join(diffs, "\n"), command)
	}
	return nil
}

// presetFile is a preset file's text and the same text with the fitted values written in.
type presetFile struct {
	path         string
	text, fitted []byte
}

// fittedPresets reads the preset files of dir (GPUPresets, in sorted order) and writes the
// fitted values and their provenance into copies of their text.
func fittedPresets(dir string, res *FitResult, command string) ([]presetFile, error) {
	var out []presetFile
	for _, gpu := range presetGPUs() {
		for _, name := range GPUPresets[gpu] {
			path := filepath.Join(dir, name+".json")
			text, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("fit: %v; give the directory of the presets (hardware/presets from the repository root)", err)
			}
			fitted := text
			for i, p := range Params {
				if p.GPU != gpu {
					continue
				}
				if fitted, err = SetPresetValue(fitted, p, res.Values[i], res.Provenance(i, command)); err != nil {
					return nil, fmt.Errorf("fit: %s: %v", path, err)
				}
			}
			for _, s := range sharedValues {
				if s.GPU != gpu {
					continue
				}
				q := Param{GPU: gpu, Field: s.Field}
				if fitted, err = SetPresetValue(fitted, q, res.Values[s.Param], res.SharedProvenance(s, command)); err != nil {
					return nil, fmt.Errorf("fit: %s: %v", path, err)
				}
			}
			out = append(out, presetFile{path, text, fitted})
		}
	}
	return out, nil
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return strings.TrimSpace(lines[i])
	}
	return "(none)"
}

// clip shortens a line of a diff to 100 characters.
func clip(s string) string {
	if len(s) > 100 {
		return s[:97] + "..."
	}
	return s
}

// paramGPUs is the number of GPU types Params fits values for.
func paramGPUs() int {
	seen := map[string]bool{}
	for _, p := range Params {
		seen[p.GPU] = true
	}
	return len(seen)
}
