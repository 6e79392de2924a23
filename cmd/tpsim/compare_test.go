package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/compare"
)

// A small compare on seed-mlp, priced with a host profile calibrated on the machine the fixture
// was made on (testdata/host.json, so the test does not calibrate): every file is written,
// communication bytes and params/grads/optimizer/activations memory match exactly. Step-time
// accuracy depends on the machine and its load, so it is reported, not asserted.
func TestCompareWritesEverything(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"compare", "--model", "seed-mlp", "--meshes", "1,2,4", "--strategies", "single,dp,tp,hybrid",
		"--plan", "0=colwise,2=rowwise", "--steps", "3", "--batch", "20", "--rounds", "2", "--hardware", "testdata/host.json", "--out", dir}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"results.json", "results.csv", "report.md", "predicted_vs_measured.png", "predicted_vs_measured.svg",
		"step_breakdown.png", "memory.svg", "comm_bytes.png", "scaling.svg", "timeline.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res compare.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	// single, dp=2, dp=4, tp=2, tp=4, hybrid dp=2,tp=2
	if len(res.Rows) != 6 {
		t.Fatalf("%d rows, want 6: %+v", len(res.Rows), res.Skipped)
	}
	s := res.Summary
	if s.CommBytesMaxAbsError != 0 {
		t.Errorf("comm bytes differ by up to %g", s.CommBytesMaxAbsError)
	}
	for _, c := range []string{"params", "grads", "optimizer", "activations"} {
		if s.MemoryMaxRelError[c] != 0 {
			t.Errorf("%s memory differs by %g", c, s.MemoryMaxRelError[c])
		}
	}
	if s.MemoryMaxRelError["peak"] > 0.05 {
		t.Errorf("peak memory off by %.1f%%", 100*s.MemoryMaxRelError["peak"])
	}
	if s.MaxRelDiffVsSingle > 1e-4 {
		t.Errorf("max_rel_diff_vs_single %g", s.MaxRelDiffVsSingle)
	}
	// tpsim plot regenerates the figures from results.json alone.
	plotDir := t.TempDir()
	if code := run([]string{"plot", "--in", filepath.Join(dir, "results.json"), "--out", plotDir}, &out, &errb); code != 0 {
		t.Fatalf("plot: exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"predicted_vs_measured.svg", "step_breakdown.png", "memory.png", "comm_bytes.svg", "scaling.png"} {
		if _, err := os.Stat(filepath.Join(plotDir, f)); err != nil {
			t.Errorf("plot did not write %s", f)
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The report's headline figures are the summary's, printed to the precision it uses.
	for _, want := range []string{"## Accuracy", "## Recommendation", "## Load on this machine", "**time:", "**memory:", "**communication:",
		"![", fmt.Sprintf("mean absolute percentage error **%.1f%%** over 6 rows", 100*s.StepTimeMAPE),
		fmt.Sprintf("off by **%.0f points** on average", 100*s.CommShareMeanAbsErr)} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// Every row was measured in both rounds, with a spread and the load of each run.
	for _, r := range res.Rows {
		if r.Rounds != 2 || len(r.RoundSteps) != 2 || len(r.OtherCPU) != 2 {
			t.Errorf("%s: %d rounds, %d round medians, %d load samples; want 2 each", r.Label(), r.Rounds, len(r.RoundSteps), len(r.OtherCPU))
		}
		if !(r.Spread.Low > 0 && r.Spread.Low <= r.Measured.Time.Step && r.Measured.Time.Step <= r.Spread.High) {
			t.Errorf("%s: spread %+v does not contain the measured step %g", r.Label(), r.Spread, r.Measured.Time.Step)
		}
		if sum := r.Measured.Time.Compute + r.Measured.Time.CommExposed + r.Measured.Time.Bubble + r.Measured.Time.Optimizer; math.Abs(sum-r.Measured.Time.Step) > 1e-9*r.Measured.Time.Step {
			t.Errorf("%s: measured parts sum to %g, step %g", r.Label(), sum, r.Measured.Time.Step)
		}
	}
	if res.Partial || res.RoundsDone != 2 || len(res.Load.Rounds) != 2 {
		t.Errorf("partial %v, %d rounds done, %d load rounds; want a whole run of 2", res.Partial, res.RoundsDone, len(res.Load.Rounds))
	}
}

func TestCompareErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--strategies", "zero"}, 2, `unknown strategy "zero" (did you mean "zero1"?); valid: single, dp, tp, hybrid, pp, gpipe, ppdp, zero1, zero2, zero3, recompute`},
		{[]string{"--meshes", "0"}, 2, "not a positive number of ranks"},
		{[]string{"--steps", "1"}, 2, "at least 2 steps"},
		{[]string{"--max-load", "1.5"}, 2, "between 0 and 1"},
		{[]string{"--strategies", "hybrid", "--meshes", "2"}, 2, "give nothing to run"},
		{[]string{"--hardware", "testdata/missing.json", "--model", "seed-mlp", "--meshes", "1", "--out", "OUT"}, 1, "missing.json"},
		{[]string{"--model", "gpt-tiny", "--strategies", "tp", "--meshes", "3", "--hardware", "testdata/host.json", "--out", "OUT", "--steps", "2"}, 1, "tp=3 does not divide"},
		// compare measures this machine: a GPU preset is refused unless that is what is meant.
		{[]string{"--hardware", "a100-80g", "--model", "seed-mlp", "--meshes", "1", "--out", "OUT"}, 1, "not of this machine"},
		// An output that cannot be written is refused before calibrating or measuring.
		{[]string{"--hardware", "testdata/host.json", "--model", "seed-mlp", "--meshes", "1", "--out", "FILE/sub"}, 1, "cannot create the output directory"},
	}
	for _, c := range cases {
		for i, a := range c.args {
			switch a {
			case "OUT":
				c.args[i] = t.TempDir()
			case "FILE/sub":
				f := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				c.args[i] = filepath.Join(f, "sub")
			}
		}
		var out, errb bytes.Buffer
		code := run(append([]string{"compare"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// compare's own parsers (--meshes, --strategies and the numbers) never panic, and what they
// accept is in range.
func FuzzParseCompare(f *testing.F) {
	f.Add("1,2,4", "single,dp,tp,hybrid", "10", "3")
	f.Add("0", "zero", "1", "0")
	f.Add(" 2 , 65", "DP, Tp", "-3", "x")
	f.Add(",,", "", "2", "1")
	f.Fuzz(func(t *testing.T, meshes, strats, steps, rounds string) {
		o, _, err := parseCompare([]string{"--meshes", meshes, "--strategies", strats, "--steps", steps, "--rounds", rounds})
		if err != nil {
			return
		}
		for _, n := range o.Meshes {
			if n < 1 || n > 64 {
				t.Fatalf("accepted %d ranks", n)
			}
		}
		for _, s := range o.Strategies {
			if _, ok := compare.FamilyNamed(s); !ok {
				t.Fatalf("accepted strategy %q", s)
			}
		}
		if o.Steps < 2 || o.Rounds < 1 {
			t.Fatalf("accepted steps %d rounds %d", o.Steps, o.Rounds)
		}
	})
}

// The mechanism families through the command line: pipelines of 2 microbatches per stage and
// full recompute are laid out, predicted and measured, their bubble and recompute time are in
// results.json and the mechanisms figure is drawn; no memory error, so exit 0.
func TestCompareMechanismRows(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"compare", "--model", "gpt-tiny", "--meshes", "1,2", "--strategies", "pp,gpipe,recompute",
		"--steps", "2", "--rounds", "1", "--hardware", "testdata/host.json", "--out", dir}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res compare.Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pp pp=2": "bubble", "gpipe pp=2": "bubble", "recompute dp=1": "recompute"}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Rows), len(want), res.Skipped)
	}
	for _, r := range res.Rows {
		ph, ok := want[r.Label()]
		if !ok || !(r.Predicted.Phases[ph] > 0) || !(r.Measured.Phases[ph] > 0) || len(r.MemoryErrors) != 0 {
			t.Errorf("%s: %s predicted %v measured %v, memory errors %v", r.Label(), ph, r.Predicted.Phases, r.Measured.Phases, r.MemoryErrors)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mechanisms.svg")); err != nil {
		t.Errorf("no mechanisms figure: %v", err)
	}
	if !strings.Contains(out.String(), "pipeline bubble") || !strings.Contains(out.String(), "recompute") {
		t.Errorf("the table lacks the mechanisms:\n%s", out.String())
	}
}
