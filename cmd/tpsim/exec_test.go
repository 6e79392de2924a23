package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
)

// The figures of issue 3 ("The classic tutorial's examples, done right"), from tpsim exec --json.
func TestExecTutorialFigures(t *testing.T) {
	cases := []struct {
		args   []string
		tp, dp int64
	}{
		{[]string{"--mesh", "tp=2", "--plan", "0=rowwise,1=noparallel,2=colwise"}, 80200, 0},
		{[]string{"--mesh", "tp=2", "--plan", "0=colwise,2=rowwise"}, 400, 0},
		{[]string{"--mesh", "dp=2"}, 0, 444040},
		{[]string{"--mesh", "dp=2,tp=2", "--plan", "0=colwise,2=rowwise"}, 200, 222040},
	}
	for _, c := range cases {
		args := append([]string{"exec", "--model", "seed-mlp", "--steps", "3", "--json"}, c.args...)
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb.String())
		}
		var rep struct {
			CommBytes  map[string]int64 `json:"comm_bytes"`
			MaxRelDiff float64          `json:"max_rel_diff_vs_single"`
			Loss       []float64        `json:"loss"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.CommBytes["tp"] != c.tp || rep.CommBytes["dp"] != c.dp {
			t.Errorf("%v: comm_bytes %v, want tp %d dp %d", c.args, rep.CommBytes, c.tp, c.dp)
		}
		if rep.MaxRelDiff > 1e-4 || len(rep.Loss) != 3 {
			t.Errorf("%v: max_rel_diff_vs_single %g over 3 losses %v", c.args, rep.MaxRelDiff, rep.Loss)
		}
	}
}

// --attn flash trains gpt-tiny over tensor parallel as single-device training does, keeping less.
func TestExecFlash(t *testing.T) {
	var peak [2]float64
	for i, attn := range []string{"eager", "flash"} {
		var out, errb bytes.Buffer
		if code := run([]string{"exec", "--model", "gpt-tiny", "--mesh", "tp=2", "--steps", "2", "--attn", attn, "--json"}, &out, &errb); code != 0 {
			t.Fatalf("--attn %s: exit %d: %s", attn, code, errb.String())
		}
		var rep struct {
			Strategy   string             `json:"strategy"`
			MaxRelDiff float64            `json:"max_rel_diff_vs_single"`
			Memory     map[string]float64 `json:"memory_bytes"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rep.Strategy, "attn="+attn) || rep.MaxRelDiff > 1e-5 {
			t.Errorf("--attn %s: strategy %q, max_rel_diff_vs_single %g", attn, rep.Strategy, rep.MaxRelDiff)
		}
		peak[i] = rep.Memory["activations"]
	}
	if !(peak[1] < peak[0]) {
		t.Errorf("flash keeps %g activation bytes, eager %g: flash should keep fewer (no s x s probabilities)", peak[1], peak[0])
	}
}

func TestExecErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--plan", "rowwise"}, 1, "RowwiseParallel apply to Linear and Embedding modules; Linear/Embedding modules: 0, 2"},
		{[]string{"--plan", "linear1=rowwise,relu=noparallel,linear2=colwise"}, 1, `plan key "linear1" matches no module of "seed-mlp"; modules: 0, 1, 2`},
		{[]string{"--mesh", "dp=20"}, 1, "does not split over dp=20 ranks"},
		{[]string{"--model", "gpt-tiny", "--mesh", "tp=3"}, 1, "tp=3 does not divide 4 attention heads"},
		{[]string{"--steps", "0"}, 2, "run at least one step"},
		{[]string{"--batch", "-1"}, 2, "must be positive"},
		{[]string{"--optimizer", "lamb"}, 2, "use sgd or adam"},
		{[]string{"--attn", "fast"}, 2, "use eager, flash or flash1"},
		{[]string{"--attn", "flash"}, 1, `model "seed-mlp" has no attention, use attn=eager`},
		{[]string{"--trace", "/nonexistent-dir/t.json", "--steps", "1"}, 1, "cannot write the trace"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(append([]string{"exec"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// execJSON runs tpsim exec with args and --json, and decodes the report.
func execJSON(t *testing.T, args ...string) (code int, rep map[string]any, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"exec", "--json"}, args...), &out, &errb)
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v: %v in %s", args, err, out.String())
		}
	}
	return code, rep, errb.String()
}

// --strategy takes predict's and sim's strategy strings; the bytes each rank sends on pp and dp
// are those 'tpsim predict' prices for the same strategy (at exec's fp32).
func TestExecStrategyBytesAsPredicted(t *testing.T) {
	// gpt-tiny's widths with 4 layers and a tied head, so that interleaving fits and the tied
	// embedding's gradient crosses the pipeline.
	path := filepath.Join(t.TempDir(), "gpt4.json")
	if err := os.WriteFile(path, []byte(`{"name": "gpt4", "family": "gpt", "transformer": {"hidden": 64, "layers": 4, "heads": 4, "kv_heads": 4,
		"head_dim": 16, "ffn": 256, "vocab": 256, "seq": 32, "bias": true, "learned": true, "tied": true, "batch": 8}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"pp=2,dp=2,mbs=1",
		"pp=2,mbs=2,schedule=interleaved,vpp=2",
		"pp=2,tp=2,mbs=2,schedule=gpipe",
		"dp=2,zero=1,mbs=2",
		"dp=2,zero=3,mbs=4,recompute=full",
	} {
		// SGD: Adam turns the rounding noise of the key biases' gradients (zero in exact
		// arithmetic) into +-lr updates that this GPT shape's 10 steps show above 1e-4
		// (exec.MaxRelDiff); the bytes do not depend on the optimizer.
		trace := filepath.Join(t.TempDir(), "trace.json")
		code, rep, stderr := execJSON(t, "--model", path, "--steps", "3", "--strategy", s, "--optimizer", "sgd", "--trace", trace)
		if code != 0 {
			t.Fatalf("exec --strategy %s: exit %d: %s", s, code, stderr)
		}
		var out, errb bytes.Buffer
		if c := run([]string{"predict", "--model", path, "--hardware", "a100-80g", "--json", "--strategy", s + ",precision=fp32"}, &out, &errb); c != 0 {
			t.Fatalf("predict %s: exit %d: %s", s, c, errb.String())
		}
		var pred struct {
			CommBytes map[string]float64 `json:"comm_bytes"`
		}
		if err := json.Unmarshal(out.Bytes(), &pred); err != nil {
			t.Fatal(err)
		}
		got := rep["comm_bytes"].(map[string]any)
		for _, d := range []string{"pp", "dp", "tp"} {
			if g := got[d].(float64); g != pred.CommBytes[d] {
				t.Errorf("%s: exec sent %g bytes per step on %s (most loaded rank), predict says %g", s, g, d, pred.CommBytes[d])
			}
		}
		if rep["ok"] != true || !strings.Contains(rep["strategy"].(string), "optimizer=sgd") {
			t.Errorf("%s: ok %v, strategy %v (--optimizer over the strategy's)", s, rep["ok"], rep["strategy"])
		}
		if strings.HasPrefix(s, "pp") {
			if !(rep["bubble_fraction"].(float64) > 0) {
				t.Errorf("%s: bubble_fraction %v, want a measured idle share", s, rep["bubble_fraction"])
			}
			// The timeline shows the bubble: each rank's waits on a thread of their own.
			if b, err := os.ReadFile(trace); err != nil || !bytes.Contains(b, []byte("pipeline wait")) {
				t.Errorf("%s: trace without the pipeline's waits (%v)", s, err)
			}
		}
	}
}

// --strategy means what it means to predict: its defaults (mbs=1, Adam) and its options.
func TestExecStrategyDefaults(t *testing.T) {
	o, _, err := parseExec([]string{"--model", "gpt-tiny", "--strategy", "pp=2,dp=2,zero=1,recompute=full,schedule=gpipe"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	st := cfg.Strategy
	if st.Optimizer != "adam" || st.MBS != 1 || st.GBS != 8 || st.ZeRO != 1 || st.Recompute != "full" || st.Schedule != "gpipe" || st.Precision != "fp32" {
		t.Errorf("strategy %s", st)
	}
}

func TestExecStrategyRefusals(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", "gpt-tiny", "--strategy", "cp=2"}, 1, "cp=2: context parallel is priced"},
		{[]string{"--model", "gpt-tiny", "--strategy", "dp=2,precision=mixed"}, 1, "precision=mixed is priced by 'tpsim predict', not executed"},
		{[]string{"--model", "gpt-tiny", "--strategy", "dp=2,overlap=on"}, 1, "overlap=on is priced by 'tpsim predict', not executed"},
		{[]string{"--model", "gpt-tiny", "--strategy", "dp=2", "--mesh", "tp=2"}, 2, "put the mesh in --strategy"},
		{[]string{"--model", "gpt-tiny", "--strategy", "dp=2,zero=4"}, 1, "use 0, 1, 2 or 3"},
		{[]string{"--model", "seed-mlp", "--strategy", "pp=2"}, 1, "use pp=1,cp=1"},
		{[]string{"--lr", "NaN"}, 2, "give a finite learning rate"},
		{[]string{"--lr", "+Inf"}, 2, "give a finite learning rate"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(append([]string{"exec", "--steps", "1"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// Issue 13: a diverged run is a failure with a fix, and its JSON encodes (null for NaN).
func TestExecDivergedFails(t *testing.T) {
	code, rep, stderr := execJSON(t, "--model", "seed-mlp", "--mesh", "dp=2", "--lr", "5", "--steps", "10")
	if code != 1 || !strings.Contains(stderr, "diverged") || !strings.Contains(stderr, "lower --lr") {
		t.Fatalf("exit %d, stderr %q; want exit 1 and \"diverged ... lower --lr\"", code, stderr)
	}
	if rep == nil || rep["ok"] != false || rep["max_rel_diff_vs_single"] != nil {
		t.Errorf("JSON ok %v, max_rel_diff_vs_single %v; want false and null", rep["ok"], rep["max_rel_diff_vs_single"])
	}
	var text, errb bytes.Buffer
	if c := run([]string{"exec", "--model", "seed-mlp", "--mesh", "dp=2", "--lr", "5", "--steps", "10"}, &text, &errb); c != 1 ||
		strings.Contains(text.String(), ": matches single-device") {
		t.Errorf("text: exit %d, output claims a match:\n%s", c, text.String())
	}
}

// Ctrl-C keeps the finished steps: their losses on stdout, one line "interrupted", exit 130.
func TestExecInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o, fs, err := parseExec([]string{"--model", "gpt-tiny", "--strategy", "pp=2,dp=2,mbs=1", "--steps", "50"})
	if err != nil {
		t.Fatal(err)
	}
	o.onStep = func(step int) {
		if step == 1 {
			cancel()
		}
	}
	var out, errb bytes.Buffer
	err = o.runCtx(ctx, &out, &errb)
	code := cli.Finish("exec", fs, execHelp, err, &out, &errb)
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if code != 130 || lines[len(lines)-1] != "tpsim exec: interrupted" || strings.Contains(errb.String(), "rank") {
		t.Errorf("exit %d, stderr %q; want 130 and one line \"tpsim exec: interrupted\" after the progress", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "loss (") || !strings.Contains(out.String(), "steps finished)") {
		t.Errorf("stdout %q; want the losses of the finished steps", out.String())
	}
}

// The trace is written atomically: a finished run leaves trace.json and no temporary file beside
// it, and a trace that cannot be written is refused before training starts.
func TestExecTraceAtomic(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.json")
	var out, errb bytes.Buffer
	if code := run([]string{"exec", "--steps", "2", "--trace", trace}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "trace.json" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the trace's directory holds %v, want trace.json alone", names)
	}
	if b, err := os.ReadFile(trace); err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) && !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		t.Errorf("trace.json is not a JSON trace (%v): %.60s", err, b)
	}
	errb.Reset()
	if code := run([]string{"exec", "--steps", "2", "--trace", dir}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "cannot write the trace") || strings.Contains(errb.String(), "steps...") {
		t.Errorf("--trace a directory: exit %d, stderr %q; want refused before training", code, errb.String())
	}
}

// The step time is the median after the warm-up step, as the help says: the first step (which
// fills the allocators' pools) is left out.
func TestExecStepTimeAfterWarmup(t *testing.T) {
	code, rep, stderr := execJSON(t, "--model", "seed-mlp", "--mesh", "tp=2", "--steps", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var steps []float64
	for _, v := range rep["step_times_s"].([]any) {
		steps = append(steps, v.(float64))
	}
	after := append([]float64(nil), steps[1:]...)
	sort.Float64s(after) // 3 steps after the warm-up: the median is the middle one
	if got := rep["time_s"].(map[string]any)["step"].(float64); len(steps) != 4 || got != after[1] {
		t.Errorf("time_s.step %g, want the median of %v after the warm-up step, %g", got, steps, after[1])
	}
}
