package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

const validateFixture = "testdata/validate-runs.json"

func keysOf(m map[string]json.RawMessage) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// The JSON is exactly issue 6's: rows of id, metric, published, predicted, ape, assumed; skipped
// rows of id and reason; a summary of n, mape, max_ape.
func TestValidateJSONShape(t *testing.T) {
	out, errs, code := runArgs(t, "validate", "--data", validateFixture, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(top); !reflect.DeepEqual(got, []string{"rows", "skipped", "summary"}) {
		t.Fatalf("keys %v", got)
	}
	var rows, skipped []map[string]json.RawMessage
	var summary map[string]json.RawMessage
	json.Unmarshal(top["rows"], &rows)
	json.Unmarshal(top["skipped"], &skipped)
	json.Unmarshal(top["summary"], &summary)
	if got := keysOf(rows[0]); !reflect.DeepEqual(got, []string{"ape", "assumed", "id", "metric", "predicted", "published"}) {
		t.Errorf("row keys %v", got)
	}
	if got := keysOf(skipped[0]); !reflect.DeepEqual(got, []string{"id", "reason"}) {
		t.Errorf("skipped keys %v", got)
	}
	if got := keysOf(summary); !reflect.DeepEqual(got, []string{"mape", "max_ape", "n"}) {
		t.Errorf("summary keys %v", got)
	}
}

// Each fixture record is compared on the metric it measured, step time first, or skipped with
// its reason; APE and the summary follow from the rows.
func TestValidateFixture(t *testing.T) {
	recs, err := valLoad(validateFixture)
	if err != nil {
		t.Fatal(err)
	}
	out := valAll(recs)
	metric := map[string]string{}
	for _, r := range out.Rows {
		metric[r.ID] = r.Metric
		if want := math.Abs(r.Predicted-r.Published) / r.Published; r.APE != want || r.Predicted <= 0 {
			t.Errorf("%s: ape %g, want |%g - %g| / %g", r.ID, r.APE, r.Predicted, r.Published, r.Published)
		}
		if len(r.Assumed) == 0 {
			t.Errorf("%s: no assumptions listed", r.ID)
		}
	}
	wantMetric := map[string]string{
		"narayanan2021_t1_18.4B":                      valTFLOPs,
		"llmfoundry_mpt7b_s2048_8xa100_80gb_amp_bf16": valTokensPerS,
		"megatron_readme_2020_dgxa100_mp_8B":          valStepTime, // measured both step time and TFLOP/s
		"llmfoundry_mpt1b_s2048_8xa100_40gb_bf16":     valTokensPerS,
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
		if r.ID == "llmfoundry_mpt1b_s2048_8xa100_40gb_bf16" && r.hardware != "a100-40g" {
			t.Errorf("the 40 GB run is priced on %s", r.hardware)
		}
	}
}

// Megatron-LM counts TFLOP/s with Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
func TestValSourceFLOPs(t *testing.T) {
	// GPT 18.4B of Table 1: l 40, h 6144, a 48, s 2048, V 51200, B 1024.
	tr := &model.Transformer{Hidden: 6144, Layers: 40, Heads: 48, KVHeads: 48, HeadDim: 128, FFN: 4 * 6144, Vocab: 51200}
	B, s, l, h, V := 1024.0, 2048.0, 40.0, 6144.0, 51200.0
	want := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
	if got := valSourceFLOPs(tr, 1024, 2048); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("Eq. 3: %g, want %g", got, want)
	}
}

func TestValHardware(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		gpu     string
		mem     *float64
		name    string
		skipHas string
	}{
		{"NVIDIA A100-SXM4-80GB", f(80), "a100-80g", ""},
		{"NVIDIA A100 40GB", f(40), "a100-40g", ""},
		{"NVIDIA A100 (DGX-A100, 2020; 40GB SKU likely but not stated)", nil, "a100-40g", ""},
		{"NVIDIA A100 (DGX-A100, 2020)", nil, "a100-80g", ""},
		{"NVIDIA H100-SXM5-80GB", f(80), "h100-sxm", ""},
		{"NVIDIA H100 PCIe", f(80), "", "no hardware preset"},
		{"NVIDIA V100 SXM3 32GB (DGX-2H)", f(32), "", "no hardware preset"},
		{"NVIDIA A100 (odd)", f(20), "", "40 and 80 GB parts only"},
	}
	for _, c := range cases {
		var r valRecord
		r.Hardware.GPU, r.Hardware.MemoryGB = c.gpu, c.mem
		hw, _, skip := valHardware(&r)
		switch {
		case c.skipHas != "":
			if !strings.Contains(skip, c.skipHas) {
				t.Errorf("%s: skip %q, want %q", c.gpu, skip, c.skipHas)
			}
		case skip != "" || hw.Name != c.name:
			t.Errorf("%s: %v %q, want %s", c.gpu, hw, skip, c.name)
		case c.name == "a100-40g" && (hw.Device.Memory != 40e9 || hw.Device.MemBandwidth != 1555e9):
			t.Errorf("a100-40g: memory %v bandwidth %v", hw.Device.Memory, hw.Device.MemBandwidth)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	_, errs, code := runArgs(t, "validate", "--data", filepath.Join(t.TempDir(), "none.json"))
	if code != exitFailure || !strings.Contains(errs, "no file of runs at") || !strings.Contains(errs, "--data PATH") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"id": "x"}`), 0o644)
	_, errs, code = runArgs(t, "validate", "--data", bad)
	if code != exitFailure || !strings.Contains(errs, "not a JSON array of run records") {
		t.Errorf("bad file: exit %d, %s", code, errs)
	}
}

// The text lists rows, error by source, hardest rows, skipped rows and assumptions; --out writes
// the table, the JSON (what --json prints) and the figure; the output is deterministic.
func TestValidateTextAndOut(t *testing.T) {
	out, errs, code := runArgs(t, "validate", "--data", validateFixture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"Validation against 7 published runs", "4 compared, 3 skipped", "Error by source", "Narayanan et al.", "all",
		"Hardest rows", "Skipped", "Assumed", "MLP width not given", "chosen by search"} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q:\n%s", s, out)
		}
	}
	again, _, _ := runArgs(t, "validate", "--data", validateFixture)
	if again != out {
		t.Error("validate output differs between runs")
	}
	dir := t.TempDir()
	js, _, code := runArgs(t, "validate", "--data", validateFixture, "--json", "--out", dir)
	if code != exitOK {
		t.Fatal(code)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "validate.json"))
	if string(got) != js {
		t.Error("validate.json differs from --json")
	}
	for _, f := range []string{"validate.csv", "validate.png", "validate.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// sharedRuns loads the published runs of shared/validation, or skips the test when the checkout
// does not have them beside it.
func sharedRuns(t *testing.T) []valRecord {
	t.Helper()
	path := filepath.Join("..", "..", validateDefaultData)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	recs, err := valLoad(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// The published runs of shared/validation, when the checkout has them beside it.
func TestValidateRunsJSON(t *testing.T) {
	recs := sharedRuns(t)
	out := valAll(recs)
	if len(out.Rows)+len(out.Skipped) != len(recs) || len(out.Rows) < len(recs)/2 {
		t.Fatalf("%d rows, %d skipped of %d records", len(out.Rows), len(out.Skipped), len(recs))
	}
	for _, r := range out.Rows {
		if r.Predicted <= 0 || math.IsNaN(r.APE) {
			t.Errorf("%s: predicted %g ape %g", r.ID, r.Predicted, r.APE)
		}
	}
	t.Logf("%d rows: MAPE %.1f%%, max %.1f%%; %d skipped", out.Summary.N, 100*out.Summary.MAPE, 100*out.Summary.MaxAPE, len(out.Skipped))
}

// The attention kernel follows the record's notes, except llm-foundry's A100 benchmark tables,
// whose runs used its Triton FlashAttention (valAttention says why).
func TestValAttention(t *testing.T) {
	cases := []struct {
		repo, path, gpu, notes string
		want, why              string
	}{
		{"", "", "NVIDIA A100-SXM4-80GB", "Megatron-LM, no fused attention stated", strategies.AttentionEager, "not stated"},
		{"", "", "NVIDIA H100", "trained with FlashAttention", strategies.AttentionFlash, "FlashAttention-2"},
		{"", "", "NVIDIA A100", "flash-attn 1.0.4", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "attn_impl triton", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "FlashAttention-2 kernels", strategies.AttentionFlash, "as the record's notes say"},
		{"", "", "NVIDIA A100", "FlashAttention v1", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "flash_attn==2.4.2", strategies.AttentionFlash, "FlashAttention-2, as"},
		{"", "", "NVIDIA A100", "model: {attn_impl: 'triton'}", strategies.AttentionFlash1, "as the record's notes say"},
		// A head size or another Triton kernel is not a generation.
		{"", "", "NVIDIA A100", "FlashAttention 128-dim heads", strategies.AttentionFlash, "priced as FlashAttention-2"},
		{"", "", "NVIDIA A100", "Triton RMSNorm and FlashAttention", strategies.AttentionFlash, "priced as FlashAttention-2"},
		{"", "", "NVIDIA A100", "Triton RMSNorm, no fused attention", strategies.AttentionEager, "not stated"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA A100 80GB", "Composer + FSDP, FlashAttention (attn_impl flash)", strategies.AttentionFlash1, "sweep.sh"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA H100 80GB", "FlashAttention (attn_impl flash)", strategies.AttentionFlash, "FlashAttention-2"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA A100 80GB", "flash-attn 2.4", strategies.AttentionFlash, "as the record's notes say"},
	}
	for _, c := range cases {
		var r valRecord
		r.Source.Repo, r.Source.Path, r.Hardware.GPU, r.Notes = c.repo, c.path, c.gpu, c.notes
		got, why := valAttention(&r)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s %s %q: %s (%s), want %s (%q)", c.repo, c.gpu, c.notes, got, why, c.want, c.why)
		}
	}
}

// valModel builds MPT as llm-foundry's benchmark tables ran it: its parameter count is the one
// each table row gives (NumParams, the records' params), for every size and sequence length.
func TestValidateMPTParams(t *testing.T) {
	recs := sharedRuns(t)
	n := 0
	for i := range recs {
		r := &recs[i]
		if valFamily(r) != "mpt" || r.Model.Params == nil || r.Parallel.GlobalBatch == nil {
			continue
		}
		m, _, why := valModel(r, *r.Parallel.GlobalBatch)
		if why != "" {
			t.Fatalf("%s: %s", r.ID, why)
		}
		if got, want := m.Params(), int64(*r.Model.Params); got != want {
			t.Errorf("%s: tpsim builds %d parameters, the table says %d", r.ID, got, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no MPT records")
	}
	t.Logf("%d MPT records: parameter counts equal", n)
}
