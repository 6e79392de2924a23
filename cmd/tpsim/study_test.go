package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/study"
)

// studyCSV runs tpsim study on file into a new directory and returns cells.csv as maps.
func studyCSV(t *testing.T, file string) (dir string, rows []map[string]string) {
	t.Helper()
	dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"study", file, "--out", dir, "--quiet"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("tpsim study: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	f, err := os.Open(filepath.Join(dir, study.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	return dir, rows
}

// commandArgs splits a command line of cells.csv (ShellJoin quotes only what needs it; the test
// directories have no spaces) and drops the leading "tpsim".
func commandArgs(t *testing.T, cmd string) []string {
	t.Helper()
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "tpsim" || strings.Contains(cmd, "'") {
		t.Fatalf("command %q", cmd)
	}
	return f[1:]
}

func runJSON(t *testing.T, args []string, into any) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--json"), &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("tpsim %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), into); err != nil {
		t.Fatalf("tpsim %s: %v", strings.Join(args, " "), err)
	}
}

// num reads a number of cells.csv.
func num(t *testing.T, row map[string]string, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[key], 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", key, row[key], err)
	}
	return v
}

// Every number of a study traces to a plan and a predict command line that reproduce it: cells
// picked at random (seed fixed, so a failure reproduces) are planned and predicted again through
// tpsim's own command functions, and their numbers must be equal to the last bit (cells.csv
// prints floats in full). The report's own arithmetic is checked from the same row.
func TestStudyCellsReproducedByPlanAndPredict(t *testing.T) {
	_, rows := studyCSV(t, "../../study/testdata/small.yaml")
	var ok []map[string]string
	for _, r := range rows {
		if r["status"] == study.StatusOK {
			ok = append(ok, r)
		}
	}
	if len(ok) < 10 {
		t.Fatalf("only %d cells fit", len(ok))
	}
	const seed = 14
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, i := range rng.Perm(len(ok))[:8] {
		r := ok[i]
		name := r["model"] + " " + r["hardware"] + " x" + r["gpus"] + " " + r["objective"]
		var out search.Output
		runJSON(t, commandArgs(t, r["plan_command"]), &out)
		if len(out.Top) == 0 {
			t.Fatalf("%s: plan has no winner", name)
		}
		w := out.Top[0]
		if w.Strategy != r["strategy"] {
			t.Errorf("%s: plan's winner %s, cells.csv %s", name, w.Strategy, r["strategy"])
		}
		for _, c := range []struct {
			key string
			got float64
		}{{"step_s", float64(w.Time.Step)}, {"tokens_per_s", w.TokensPerS}, {"mfu", w.MFU}, {"peak_bytes", float64(w.Memory.Peak)},
			{"compute_s", float64(w.Time.Compute)}, {"comm_exposed_s", float64(w.Time.CommExposed)}, {"bubble_s", float64(w.Time.Bubble)}} {
			if want := num(t, r, c.key); c.got != want {
				t.Errorf("%s: plan %s = %v, cells.csv %v", name, c.key, c.got, want)
			}
		}
		if strconv.Itoa(out.Searched) != r["searched"] || strconv.Itoa(out.Feasible) != r["feasible"] {
			t.Errorf("%s: plan searched %d (%d feasible), cells.csv %s (%s)", name, out.Searched, out.Feasible, r["searched"], r["feasible"])
		}
		var pred costmodel.Result
		runJSON(t, commandArgs(t, r["predict_command"]), &pred)
		// predict prices the strategy alone; its sums run in another order than the plan's, so
		// it agrees to rounding (1e-12 relative), not to the bit.
		for _, c := range []struct {
			key string
			got float64
		}{{"step_s", float64(pred.Time.Step)}, {"tokens_per_s", pred.TokensPerS}, {"mfu", pred.MFU}, {"peak_bytes", float64(pred.Memory.Peak)}} {
			if want := num(t, r, c.key); math.Abs(c.got-want) > 1e-12*math.Abs(want) {
				t.Errorf("%s: predict %s = %v, cells.csv %v", name, c.key, c.got, want)
			}
		}
		// The report's arithmetic: time = tokens / tokens per second, GPU-hours = GPUs x hours,
		// cost = GPU-hours x price.
		ttt := num(t, r, "tokens") / num(t, r, "tokens_per_s")
		if got := num(t, r, "time_to_train_s"); got != ttt {
			t.Errorf("%s: time to train %v, tokens/tokens_per_s %v", name, got, ttt)
		}
		gh := num(t, r, "gpus") * ttt / 3600
		if got := num(t, r, "gpu_hours"); math.Abs(got-gh) > 1e-12*gh {
			t.Errorf("%s: GPU-hours %v, want %v", name, got, gh)
		}
		if r["price_per_gpu_hour"] != "" {
			if got, want := num(t, r, "cost"), gh*num(t, r, "price_per_gpu_hour"); math.Abs(got-want) > 1e-12*want {
				t.Errorf("%s: cost %v, want %v", name, got, want)
			}
		}
	}
}

func TestStudyBadFileNamesLineAndColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("models: [gpt-tiny]\nhardware: [a100-80g]\ngpus: [1]\ntokens: 1\nobjective: time\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"study", path, "--out", t.TempDir(), "--quiet"}, &stdout, &stderr)
	if code != cli.ExitFailure {
		t.Errorf("exit %d, want %d", code, cli.ExitFailure)
	}
	wantAll(t, "stderr", stderr.String(), []string{path + `:5:1: objective: unknown key "objective" (did you mean "objectives"?); valid keys:`})
}

func TestStudyUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"study"}, &stdout, &stderr); code != cli.ExitUsage {
		t.Errorf("no file: exit %d, want %d", code, cli.ExitUsage)
	}
	wantAll(t, "stderr", stderr.String(), []string{"give one study file"})
	stdout.Reset()
	if code := run([]string{"study", "--help"}, &stdout, &stderr); code != cli.ExitOK {
		t.Errorf("--help: exit %d", code)
	}
	wantAll(t, "stdout", stdout.String(), []string{"Usage: tpsim study FILE", "what_if", "--out"})
}
