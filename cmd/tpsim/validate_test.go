package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
)

const validateFixture = "../../validate/testdata/runs-fixture.json"

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
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(top); !reflect.DeepEqual(got, []string{"by_gpu", "by_metric", "by_source", "memory", "rows", "skipped", "summary"}) {
		t.Fatalf("keys %v", got)
	}
	var rows, skipped []map[string]json.RawMessage
	var summary map[string]json.RawMessage
	json.Unmarshal(top["rows"], &rows)
	json.Unmarshal(top["skipped"], &skipped)
	json.Unmarshal(top["summary"], &summary)
	if got := keysOf(rows[0]); !reflect.DeepEqual(got, []string{"ape", "assumed", "gpu", "hardware", "id", "metric", "predicted", "published", "source", "strategy"}) {
		t.Errorf("row keys %v", got)
	}
	if got := keysOf(skipped[0]); !reflect.DeepEqual(got, []string{"id", "reason"}) {
		t.Errorf("skipped keys %v", got)
	}
	if got := keysOf(summary); !reflect.DeepEqual(got, []string{"mape", "max_ape", "n"}) {
		t.Errorf("summary keys %v", got)
	}
}

func TestValidateErrors(t *testing.T) {
	_, errs, code := runArgs(t, "validate", "--data", filepath.Join(t.TempDir(), "none.json"))
	if code != cli.ExitFailure || !strings.Contains(errs, "no file of runs at") || !strings.Contains(errs, "--data PATH") {
		t.Errorf("missing file: exit %d, %s", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"id": "x"}`), 0o644)
	_, errs, code = runArgs(t, "validate", "--data", bad)
	if code != cli.ExitFailure || !strings.Contains(errs, "it must be a JSON array of run records") || !strings.Contains(errs, "JSON object") {
		t.Errorf("bad file: exit %d, %s", code, errs)
	}
	os.WriteFile(bad, []byte("[\n  {\"id\": \"x\",}\n]"), 0o644)
	_, errs, code = runArgs(t, "validate", "--data", bad)
	if code != cli.ExitFailure || !strings.Contains(errs, bad+":2:") {
		t.Errorf("syntax error without line and column: exit %d, %s", code, errs)
	}
	os.WriteFile(bad, nil, 0o644)
	_, errs, code = runArgs(t, "validate", "--data", bad)
	if code != cli.ExitFailure || !strings.Contains(errs, "is empty") {
		t.Errorf("empty file: exit %d, %s", code, errs)
	}
}

// With no --data, validate reads the training split shipped in the repository: it never
// depends on files beside the checkout.
func TestValidateDefaultData(t *testing.T) {
	out, errs, code := runArgs(t, "validate")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"validate/data/runs.json, runs_h100.json", "Error by GPU type", "h100-96g", "a100", "Error by metric", "tokens_per_s_per_gpu", "Peak memory:"} {
		if !strings.Contains(out, s) {
			t.Errorf("text lacks %q", s)
		}
	}
}

// The text lists rows, error by source, hardest rows, skipped rows and assumptions; --out writes
// the table, the JSON (what --json prints) and the figure; the output is deterministic.
func TestValidateTextAndOut(t *testing.T) {
	out, errs, code := runArgs(t, "validate", "--data", validateFixture)
	if code != cli.ExitOK {
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
	if code != cli.ExitOK {
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

// tpsim fit is registered and says what it fits and how (the fit, and the writing of the presets
// with a bad --write directory naming the fix, are tested in package validate).
func TestFitHelp(t *testing.T) {
	out, errs, code := runArgs(t, "fit", "--help")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"Usage: tpsim fit", "10 parameters", "leave-one-source-out", "--write"} {
		if !strings.Contains(out, s) {
			t.Errorf("help lacks %q", s)
		}
	}
}
