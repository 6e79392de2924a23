package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
