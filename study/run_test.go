package study

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// testVersion stands for the tpsim build in the tests.
const testVersion = "test-build"

func loadSmall(t testing.TB) *Study {
	t.Helper()
	st, err := Load("testdata/small.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runStudy runs st into dir and writes the outputs; it returns how many jobs were already done
// when the run started (resumed) and the total.
func runStudy(t testing.TB, st *Study, dir string, workers int) (resumed, total int) {
	t.Helper()
	first := true
	res, err := Run(context.Background(), st, dir, Options{Version: testVersion, Workers: workers, Progress: func(done, n int) {
		if first {
			resumed, total, first = done, n, false
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(st, res, testVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, rep); err != nil {
		t.Fatal(err)
	}
	return resumed, total
}

var outputs = []string{HTMLFile, MDFile, CSVFile, CellsFile}

// readOutputs reads the outputs of dir, with dir itself (which the plan command lines of what-if
// hardware name) replaced by OUT, so runs into different directories compare.
func readOutputs(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range outputs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = bytes.ReplaceAll(b, []byte(dir), []byte("OUT"))
	}
	return out
}

func sameOutputs(t *testing.T, a, b map[string][]byte, what string) {
	t.Helper()
	for _, f := range outputs {
		if !bytes.Equal(a[f], b[f]) {
			t.Errorf("%s: %s differs (%d and %d bytes)", what, f, len(a[f]), len(b[f]))
		}
	}
}

// A rerun resumes every job and writes the same bytes; one worker and two give the same bytes.
func TestRunResumesAndIsDeterministic(t *testing.T) {
	st := loadSmall(t)
	d1, d2 := t.TempDir(), t.TempDir()
	resumed, total := runStudy(t, st, d1, 2)
	// small.yaml: 2 models x (a100, a100+hbm-40, h100, h100+nvl16) x 5 counts x 2 objectives,
	// less the a100 cells over max_nodes: 1 (16 GPUs on 2 nodes), 2 x 2 x 1 x 2 = 8.
	if resumed != 0 || total != 2*4*5*2-8 {
		t.Fatalf("first run: %d resumed of %d jobs", resumed, total)
	}
	first := readOutputs(t, d1)
	resumed, _ = runStudy(t, st, d1, 2)
	if resumed != total {
		t.Errorf("rerun resumed %d of %d jobs", resumed, total)
	}
	sameOutputs(t, first, readOutputs(t, d1), "rerun")
	runStudy(t, st, d2, 1)
	sameOutputs(t, first, readOutputs(t, d2), "one worker against two")
	if n := bytes.Count(first[CellsFile], []byte("\n")); n != total {
		t.Errorf("cells.jsonl has %d lines for %d jobs", n, total)
	}
}

// Changing the study re-prices only the jobs whose inputs changed; changing a price or the
// token budget re-prices nothing.
func TestRunRepricesOnlyChangedCells(t *testing.T) {
	dir := t.TempDir()
	st := loadSmall(t)
	_, total := runStudy(t, st, dir, 0)

	f := *st.File
	f.GPUs = append([]int{}, st.File.GPUs...)
	f.GPUs = append(f.GPUs, 32) // new cells: 2 models x 2 h100 variants x 2 objectives (a100 is over its limit)
	f.Tokens *= 2
	f.Hardware = append([]HardwareEntry{}, st.File.Hardware...)
	f.Hardware[0].PricePerGPUHour = 9
	st2, err := Resolve(&f, st.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resumed, total2 := runStudy(t, st2, dir, 0)
	if total2 != total+8 || resumed != total {
		t.Errorf("after adding 32 GPUs: %d resumed of %d, want %d of %d", resumed, total2, total, total+8)
	}

	f.Fix = "attn=flash" // every job's inputs change
	st3, err := Resolve(&f, st.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resumed, _ := runStudy(t, st3, dir, 0); resumed != 0 {
		t.Errorf("after fixing attn=flash, %d jobs resumed; want none", resumed)
	}
}

// A torn last line (a write cut short) is cut off and its job run again; the outputs are the
// same as an uninterrupted run's.
func TestRunIgnoresTornLastLine(t *testing.T) {
	st := loadSmall(t)
	ref := t.TempDir()
	runStudy(t, st, ref, 0)
	want := readOutputs(t, ref)

	dir := t.TempDir()
	lines := bytes.SplitAfter(want[CellsFile], []byte("\n"))
	kept := bytes.Join(lines[:5], nil)
	torn := append(append([]byte{}, kept...), lines[5][:len(lines[5])/2]...)
	if err := os.WriteFile(filepath.Join(dir, CellsFile), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := Run(context.Background(), st, dir, Options{Version: testVersion, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "torn last line") {
		t.Errorf("no warning about the torn line: %q", log.String())
	}
	rep, err := NewReport(st, res, testVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, rep); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, want, readOutputs(t, dir), "after a torn line")
}

// Cancelling halfway keeps the finished jobs; the rerun finishes the rest and writes the same
// bytes as an uninterrupted run.
func TestRunInterruptedThenResumed(t *testing.T) {
	st := loadSmall(t)
	ref := t.TempDir()
	runStudy(t, st, ref, 0)
	want := readOutputs(t, ref)

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	half := 0
	_, err := Run(ctx, st, dir, Options{Version: testVersion, Workers: 2, Progress: func(done, total int) {
		if done >= total/2 {
			half = done
			cancel()
		}
	}})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	kept := bytes.Count(data, []byte("\n"))
	if kept < half || kept >= len(st.Jobs(testVersion)) {
		t.Errorf("kept %d jobs after cancelling at %d of %d", kept, half, len(st.Jobs(testVersion)))
	}
	resumed, _ := runStudy(t, st, dir, 0)
	if resumed != kept {
		t.Errorf("resumed %d jobs, kept %d", resumed, kept)
	}
	sameOutputs(t, want, readOutputs(t, dir), "interrupted and resumed")
}

// Every figure is drawn inline; the page has no external asset and no script.
func TestHTMLSelfContained(t *testing.T) {
	st := loadSmall(t)
	dir := t.TempDir()
	runStudy(t, st, dir, 0)
	page := readOutputs(t, dir)[HTMLFile]
	// Figures: per model scaling, frontier, layout, breakdown; and one memory figure.
	if n, want := bytes.Count(page, []byte("<svg")), 4*len(st.Models)+1; n != want {
		t.Errorf("%d inline SVGs, want %d", n, want)
	}
	for _, bad := range []string{"<script", "src=", "href=\"http", "<link", "@import", "<?xml"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("study.html contains %q", bad)
		}
	}
}

// Apply changes exactly what the what-if names and validates the result.
func TestApplyWhatIf(t *testing.T) {
	h, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	w := &WhatIf{Name: "x", NVLinkDomain: 72, InterNodeGbps: 800, HBMGB: 141}
	c, err := Apply(h, w)
	if err != nil {
		t.Fatal(err)
	}
	// 800 Gb/s = 800e9/8 bytes/s = 100e9 bytes/s; 141 GB = 141e9 bytes (the presets' GB).
	if c.Name != "h100-sxm+x" || c.Levels[0].Size != 72 || c.Levels[1].Bandwidth != units.BytesPerSecond(100e9) || c.Device.Memory != units.Bytes(141e9) {
		t.Errorf("applied: %+v", c)
	}
	if h.Levels[0].Size != 8 || h.Device.Memory != units.Bytes(80e9) || h.Levels[1].Bandwidth != units.BytesPerSecond(50e9) {
		t.Errorf("Apply changed the original: %+v", h)
	}
	if _, err := Apply(h, &WhatIf{Name: "one", NVLinkDomain: 1}); err == nil {
		t.Errorf("an NVLink domain of 1 device validated")
	}
}

// What-ifs name hardware of the study; a name that is not one is an error listing the valid ones.
func TestResolveWhatIfHardwareNames(t *testing.T) {
	f, err := Parse([]byte(minimal+"what_if: [{name: big, hardware: [h100], hbm_gb: 100}]\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(f, "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), `s.yaml:5:11: what_if[0].hardware[0]: "h100" is not a hardware of this study; valid names: a100-80g`) {
		t.Errorf("error %v", err)
	}
}

// A cell over the hardware's limit is not planned and says why.
func TestOverLimitSaysWhy(t *testing.T) {
	st := loadSmall(t)
	dir := t.TempDir()
	runStudy(t, st, dir, 0)
	csv := string(readOutputs(t, dir)[CSVFile])
	if !strings.Contains(csv, "gpt-tiny,134912,a100-80g,a100-80g,,16,2,time,over limit,16 GPUs need 2 nodes of 8; a100-80g has 1 (max_nodes)") {
		t.Errorf("cells.csv lacks the over-limit row:\n%s", csv)
	}
}

// fit_search finds the smallest GPU count that fits below the smallest swept one: the count it
// reports fits and the one below it does not, both asked of the planner again; a rerun resumes
// the probes too.
func TestFitSearch(t *testing.T) {
	src := `models: [llama2-7b]
hardware: [a100-80g]
gpus: [8]
tokens: 2e12
top: 1
sim: off
fit_search: true
`
	f, err := Parse([]byte(src), "fit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Resolve(f, "fit.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resumed, total := runStudy(t, st, dir, 0)
	if resumed != 0 || total != 1 {
		t.Fatalf("%d of %d resumed", resumed, total)
	}
	res, err := Run(context.Background(), st, dir, Options{Version: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Fits) != 1 {
		t.Fatalf("%d fit searches, want 1", len(res.Fits))
	}
	fit := res.Fits[0]
	// Llama 2 7B's weights, gradients and Adam state are 16 bytes x 6.7e9 = 108 GB: more than one
	// 80 GB A100, so at least 2 GPUs (ZeRO-3 shards them) and at most the 8 swept.
	if fit.Swept != 8 || fit.Lo != 0 || fit.Smallest < 2 || fit.Smallest >= 8 {
		t.Fatalf("fit %+v", fit)
	}
	if n := len(fit.Probes); n != fit.Smallest || fit.Probes[n-1].GPUs != fit.Smallest {
		t.Errorf("%d probes up to %d GPUs; want every count from 1 to the first that fits", n, fit.Probes[n-1].GPUs)
	}
	for _, g := range []int{fit.Smallest - 1, fit.Smallest} {
		pr, err := st.PlanJob(st.probe(0, 0, g, testVersion))
		if err != nil {
			t.Fatal(err)
		}
		if fits := pr.Out.Feasible > 0; fits != (g == fit.Smallest) {
			t.Errorf("%d GPUs: the planner finds %d feasible strategies", g, pr.Out.Feasible)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 1+len(fit.Probes) {
		t.Errorf("cells.jsonl has %d lines for 1 job and %d probes", n, len(fit.Probes))
	}
	rep, err := NewReport(st, res, testVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rows[0]
	if r.SmallestFit != fit.Smallest || r.FitArgs == nil || !strings.Contains(ShellJoin(r.FitArgs), "--gpus "+strconv.Itoa(fit.Smallest)) {
		t.Errorf("row: smallest fit %d (%s), command %v", r.SmallestFit, r.FitHow, r.FitArgs)
	}
}

// Every planned row's command lines are in both reports, beside the explanation of its plan.
func TestReportsCarryCommandsAndExplanations(t *testing.T) {
	st := loadSmall(t)
	dir := t.TempDir()
	runStudy(t, st, dir, 0)
	res, err := Run(context.Background(), st, dir, Options{Version: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(st, res, testVersion, dir)
	if err != nil {
		t.Fatal(err)
	}
	files := readOutputs(t, dir)
	md := string(files[MDFile])
	page := string(files[HTMLFile])
	n := 0
	for _, r := range rep.Rows {
		if r.Status != StatusOK {
			continue
		}
		n++
		plan := strings.ReplaceAll("tpsim "+ShellJoin(r.PlanArgs), dir, "OUT")
		pred := strings.ReplaceAll("tpsim "+ShellJoin(r.PredictArgs()), dir, "OUT")
		why := firstLine(r.Record.Plan.Explanation)
		for name, text := range map[string]string{"study.md": md, "study.html": page} {
			for _, want := range []string{plan, pred, why} {
				if name == "study.html" {
					want = htmlText(t, want)
				}
				if !strings.Contains(text, want) {
					t.Fatalf("%s lacks %q", name, want)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no planned rows")
	}
}

// htmlText is s as study.html's template writes text (html/template also escapes + and ').
func htmlText(t *testing.T, s string) string {
	var b bytes.Buffer
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Models and hardware given as files are read relative to the study file, and the command lines
// name them so that they load from where the user runs tpsim.
func TestFilesRelativeToStudy(t *testing.T) {
	src := `models: [files/tiny-gpt.json]
hardware: [{hardware: files/my-a100.json, price_per_gpu_hour: 1}]
gpus: [1, 2]
tokens: 1e9
`
	f, err := Parse([]byte(src), "testdata/files.yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Resolve(f, "testdata/files.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Models[0].Arg != filepath.Join("testdata", "files", "tiny-gpt.json") || st.Variants[0].Name != "my-a100" || st.Variants[0].Preset {
		t.Fatalf("model %q from %q, hardware %q (preset %v)", st.Models[0].Name, st.Models[0].Arg, st.Variants[0].Name, st.Variants[0].Preset)
	}
	dir := t.TempDir()
	runStudy(t, st, dir, 0)
	if _, err := os.Stat(filepath.Join(dir, "hardware", "my-a100.json")); err != nil {
		t.Errorf("the hardware of the plan command lines was not written: %v", err)
	}
	csv := string(readOutputs(t, dir)[CSVFile])
	if !strings.Contains(csv, "tpsim plan --model testdata/files/tiny-gpt.json --hardware OUT/hardware/my-a100.json --gpus 1") {
		t.Errorf("cells.csv lacks the plan command of the files:\n%s", csv)
	}

	bad := strings.Replace(src, "files/tiny-gpt.json", "files/none.json", 1)
	f, err = Parse([]byte(bad), "testdata/files.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(f, "testdata/files.yaml", nil); err == nil || !strings.Contains(err.Error(), "testdata/files.yaml:1:10: models[0]: model: testdata/files/none.json does not exist") {
		t.Errorf("error %v", err)
	}
}
