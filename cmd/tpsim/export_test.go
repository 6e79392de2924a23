package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "flags.txt")
	var so, se bytes.Buffer
	if code := run([]string{"export", "--format", "megatron", "--model", "llama3-8b", "--strategy", "dp=2,tp=4,zero=1,sp=on", "--out", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--tensor-model-parallel-size 4\n", "--use-distributed-optimizer\n", "strategy dp=2,tp=4,mbs=1,gbs=2048,seq=8192,zero=1,sp=on"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("output lacks %q:\n%s", want, data)
		}
	}

	// --plan-json takes the first of "top" and the plan's model.
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(`{"model": "llama3-8b", "top": [{"rank": 1, "strategy": "dp=4,zero=3"}, {"rank": 2, "strategy": "dp=2,tp=2"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	so.Reset()
	if code := run([]string{"export", "--format", "deepspeed", "--plan-json", plan}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	if !strings.Contains(so.String(), `"stage": 3`) || !strings.Contains(so.String(), "Model llama3-8b; strategy dp=4,") {
		t.Errorf("plan winner not exported:\n%s", so.String())
	}
}

func TestExportErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--format", "jax", "--strategy", "dp=2"}, 2, "hf-tp-plan"},
		{[]string{"export", "--format", "megatron"}, 2, "exactly one of --strategy and --plan-json"},
		{[]string{"export", "--format", "megatron", "--model", "llama3-8b", "--strategy", "dp=2,tp=4,zero=3"}, 1, "zero=3 is not expressible in Megatron-LM"},
		{[]string{"export", "--format", "deepspeed", "--model", "llama3-8b", "--strategy", "dp=2,tp=4"}, 1, "tp=4 is not expressible in a DeepSpeed JSON"},
	}
	for _, c := range cases {
		var so, se bytes.Buffer
		code := run(c.args, &so, &se)
		if code != c.code || !strings.Contains(se.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, se.String(), c.code, c.want)
		}
	}
}
