package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimCommand(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "step.json")
	args := []string{"sim", "--model", "gpt3-1.3b", "--hardware", "a100-80g", "--strategy", "pp=4,dp=2,gbs=64,schedule=interleaved,vpp=2", "--json", "--trace", trace}
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"memory_bytes", "comm_bytes", "time_s", "mfu", "closed_form_time_s", "critical_path", "utilization", "events"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("sim --json lacks %q", k)
		}
	}
	data, err := os.ReadFile(trace)
	if err != nil || !bytes.Contains(data, []byte(`"traceEvents"`)) || !bytes.Contains(data, []byte("pipeline rank 3")) {
		t.Errorf("trace not written as a Chrome trace with 4 pipeline ranks: %v", err)
	}
	// Same input, same bytes.
	var again bytes.Buffer
	run(args[:len(args)-2], &again, &errb)
	var first bytes.Buffer
	run(args[:len(args)-2], &first, &errb)
	if !bytes.Equal(first.Bytes(), again.Bytes()) {
		t.Error("two sims of the same input differ")
	}
}

func TestSimErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--model", "gpt3-1.3b", "--strategy", "pp=4,gbs=64,schedule=interleaved,vpp=4"}, "vpp=4 does not divide the 6 layers per pipeline stage"},
		{[]string{"--model", "gpt3-1.3b", "--strategy", "pp=2,gbs=8", "--trace", "/nonexistent-dir/x.json"}, "cannot write the trace"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(append([]string{"sim"}, c.args...), &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
