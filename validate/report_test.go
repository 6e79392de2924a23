package validate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
)

// runsFixture holds 7 records: 4 comparable on different metrics, 3 skipped for different reasons.
const runsFixture = "testdata/runs-fixture.json"

// Each fixture record is compared on the metric it measured, step time first, or skipped with
// its reason; APE and the summary follow from the rows.
func TestFixtureRows(t *testing.T) {
	recs, skips, name, err := Load([]string{runsFixture})
	if err != nil {
		t.Fatal(err)
	}
	if name != runsFixture || len(recs)+len(skips) != 7 {
		t.Fatalf("Load: name %q, %d records + %d unreadable; want the path and 7", name, len(recs), len(skips))
	}
	out := Run(recs, skips, Options{})
	metric := map[string]string{}
	// The published figures and the step times they imply, by hand from the fixture: a step time
	// as given; tokens/s over gbs x seq tokens a step; Narayanan et al.'s TFLOP/s per GPU over 256
	// GPUs of their Eq. 3 (recompute included), 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with
	// B 1024, s 2048, l 40, h 6144, V 51200. The APE then follows from the step times alone,
	// independently of how the metric is computed: |pred/pub - 1| for a step time,
	// |pub/pred - 1| for a throughput (which is inversely proportional to the step time).
	const B, s, l, h, V = 1024.0, 2048.0, 40.0, 6144.0, 51200.0
	hand := map[string]struct{ pub, pubStep float64 }{
		"narayanan2021_t1_18.4B":                      {135, 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h)) / (135e12 * 256)},
		"llmfoundry_mpt7b_s2048_8xa100_80gb_amp_bf16": {37130, 96 * 2048 / 37130.0},
		"megatron_readme_2020_dgxa100_mp_8B":          {1.343, 1.343},
		"llmfoundry_mpt1b_s2048_8xa100_40gb_bf16":     {154171, 512 * 2048 / 154171.0},
	}
	for _, r := range out.Rows {
		metric[r.ID] = r.Metric
		w, ok := hand[r.ID]
		if !ok || r.Published != w.pub || math.Abs(r.PubStep/w.pubStep-1) > 1e-9 {
			t.Errorf("%s: published %g (step %g s), by hand %g (%g s)", r.ID, r.Published, r.PubStep, w.pub, w.pubStep)
		}
		want := math.Abs(w.pubStep/r.PredStep - 1)
		if r.Metric == StepTime {
			want = math.Abs(r.PredStep/w.pubStep - 1)
		}
		if math.Abs(r.APE-want) > 1e-9 || r.Predicted <= 0 {
			t.Errorf("%s (%s): ape %g, from the step times %g", r.ID, r.Metric, r.APE, want)
		}
		if len(r.Assumed) == 0 {
			t.Errorf("%s: no assumptions listed", r.ID)
		}
	}
	wantMetric := map[string]string{
		"narayanan2021_t1_18.4B":                      TFLOPs,
		"llmfoundry_mpt7b_s2048_8xa100_80gb_amp_bf16": TokensPerS,
		"megatron_readme_2020_dgxa100_mp_8B":          StepTime, // measured both step time and TFLOP/s
		"llmfoundry_mpt1b_s2048_8xa100_40gb_bf16":     TokensPerS,
	}
	if !reflect.DeepEqual(metric, wantMetric) {
		t.Errorf("metrics %v, want %v", metric, wantMetric)
	}
	reasons := map[string]string{}
	for _, s := range out.Skipped {
		reasons[s.ID] = s.Reason
	}
	for id, want := range map[string]string{
		"megatron_readme_2020_dgx2_mp_1B": "no hardware preset for \"NVIDIA V100",
		"opt175b_992gpu":                  "no measured step time",
		"my_run_h100_missing_tp":          "parallel degrees not stated: tp",
	} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("%s skipped for %q, want %q", id, reasons[id], want)
		}
	}
	var sum, mx float64
	for _, r := range out.Rows {
		sum += r.APE
		mx = math.Max(mx, r.APE)
	}
	if s := out.Summary; s.N != 4 || math.Abs(s.MAPE-sum/4) > 1e-12 || s.MaxAPE != mx {
		t.Errorf("summary %+v, want n 4, mape %g, max %g", s, sum/4, mx)
	}
	for _, r := range out.Rows {
		if r.ID == "llmfoundry_mpt1b_s2048_8xa100_40gb_bf16" && r.Hardware != "a100-40g" {
			t.Errorf("the 40 GB run is priced on %s", r.Hardware)
		}
	}

	// The report: every row, the groups, the hardest rows, the skipped and the assumptions,
	// the same bytes every time.
	var text bytes.Buffer
	if err := WriteText(&text, name, 7, out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Validation against 7 published runs (" + runsFixture + "): 4 compared, 3 skipped", "Error by source", "Error by GPU type",
		"Error by metric", "Narayanan et al.", "Hardest rows", "Skipped\n  ", "Assumed (values the records do not give)", "MLP width not given", "chosen by search"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	var again bytes.Buffer
	WriteText(&again, name, 7, out)
	if again.String() != text.String() {
		t.Error("the report differs between two writes")
	}

	header, rows := out.Table()
	if len(header) != 9 || len(rows) != 4 || rows[0][0] != out.Rows[0].ID || rows[0][5] != out.Rows[0].Metric {
		t.Errorf("table %v, %d rows", header, len(rows))
	}
	if fig, err := out.Figure(); err != nil || fig == nil {
		t.Errorf("figure: %v, %v", fig, err)
	}
	if fig, err := (&Output{}).Figure(); fig != nil || err != nil {
		t.Errorf("no rows: figure %v, %v; want none", fig, err)
	}
}

func TestLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.json")
	if _, _, _, err := Load([]string{missing}); err == nil || err.Error() != "no file of runs at "+missing+"; give --data PATH of a JSON array of run records, or no --data for the shipped training split" {
		t.Errorf("missing file: %v", err)
	}
	recs, skips, name, err := Load(nil)
	if err != nil || name != "validate/data/runs.json, runs_h100.json" || len(recs) == 0 {
		t.Errorf("the training split: %d records, %d skips, %q, %v", len(recs), len(skips), name, err)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{TokensPerS, 1234567.4, "1,234,567"}, {TokensPerSPerGPU, 2999.5, "3,000"},
		{TFLOPs, 148.04, "148.0"}, {ModelTFLOPsPerGPU, 99.96, "100.0"}, {MFU, 0.4567, "45.7%"},
	} {
		if got := Format(c.metric, c.v); got != c.want {
			t.Errorf("Format(%s, %g) = %q, want %q", c.metric, c.v, got, c.want)
		}
	}
}

// Assumed counts each shared assumption once, in the order first met, and lists the search's
// choices per row.
func TestAssumed(t *testing.T) {
	rows := []Row{
		{ID: "a", Assumed: []string{"x", ChosenBySearch + " 3 options: mbs=1", "y"}},
		{ID: "b", Assumed: []string{"y", "z"}},
	}
	shared, counts, chosen := Assumed(rows)
	if !reflect.DeepEqual(shared, []string{"x", "y", "z"}) || !reflect.DeepEqual(counts, map[string]int{"x": 1, "y": 2, "z": 1}) ||
		!reflect.DeepEqual(chosen, []string{"a: " + ChosenBySearch + " 3 options: mbs=1"}) {
		t.Errorf("shared %q, counts %v, chosen %q", shared, counts, chosen)
	}
}

func TestFoldDiff(t *testing.T) {
	all := StartValues()
	if got := FoldDiff(all, all); got != "" {
		t.Errorf("same values: %q", got)
	}
	fold := append(Values{}, all...)
	fold[0] = all[0] + 0.25
	p := Params[0]
	if got, want := FoldDiff(fold, all), "fold: "+p.GPU+" "+strings.TrimPrefix(p.Name(), "efficiency.")+" "; !strings.HasPrefix(got, want) || strings.Contains(got, ", ") {
		t.Errorf("one value differs: %q, want %q and the value", got, want)
	}
}

// WritePresets writes every parameter's value and provenance into copies of the presets, which
// then read back with them; a missing directory names the fix.
func TestWritePresets(t *testing.T) {
	dir := t.TempDir()
	for _, names := range GPUPresets {
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join("..", "hardware", "presets", n+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n+".json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	res := &FitResult{Values: StartValues(), ParamRows: make([]int, len(Params)), ParamSources: make([][]string, len(Params))}
	for i := range res.Values {
		res.Values[i] = math.Round(1000*(res.Values[i]*0.9))/1000 + 0.001
	}
	if err := WritePresets(dir, res, "test command"); err != nil {
		t.Fatal(err)
	}
	for i, p := range Params {
		for _, n := range GPUPresets[p.GPU] {
			b, err := os.ReadFile(filepath.Join(dir, n+".json"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := hardware.Parse(b)
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			if got := h.Sources[p.Name()]; got != res.Provenance(i, "test command") {
				t.Errorf("%s %s: provenance %q", n, p.Name(), got)
			}
			if !strings.Contains(string(b), strconv.FormatFloat(res.Values[i], 'g', -1, 64)) {
				t.Errorf("%s: %s = %g not written", n, p.Name(), res.Values[i])
			}
		}
	}
	if err := WritePresets(filepath.Join(dir, "none"), res, "x"); err == nil || !strings.Contains(err.Error(), "hardware/presets") {
		t.Errorf("missing presets directory: %v", err)
	}
	// What WritePresets wrote is what CheckPresets expects; one value moved, it names the file
	// and the fix.
	if err := CheckPresets(dir, res, "test command"); err != nil {
		t.Errorf("check after write: %v", err)
	}
	res.Values[0] += 0.002
	err := CheckPresets(dir, res, "test command")
	if n := GPUPresets[Params[0].GPU][0] + ".json"; err == nil || !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), "run `test command`") {
		t.Errorf("check with %s moved: %v", Params[0].Name(), err)
	}
}
