package main

import (
	"bytes"
	encodingcsv "encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

func TestParsePlan(t *testing.T) {
	def := planOptions{Target: cli.Target{Model: cli.DefaultModel, Hardware: cli.DefaultHardware}, GPUs: 8, Objective: "time", Top: planDefaultTop, Sim: "auto", SimTop: search.DefaultSimTop}
	cases := []struct {
		name string
		args []string
		want planOptions
	}{
		{"defaults", nil, def},
		{"all flags", []string{"--model", "gpt3-175b", "--hardware=h100-sxm", "--gpus", "256", "--global-batch", "512", "--seq", "1024",
			"--objective", "Memory", "--top", "3", "--fix", "tp=8", "--sim", "OFF", "--sim-top", "7", "--json", "--out", "d", "--workers", "2"},
			planOptions{Target: cli.Target{Model: "gpt3-175b", Hardware: "h100-sxm"}, GPUs: 256, GlobalBatch: 512, Seq: 1024, Objective: "memory", Top: 3,
				Fix: "tp=8", Sim: "off", SimTop: 7, JSON: true, Out: "d", Workers: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := parsePlan(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if *o != c.want {
				t.Errorf("got %+v, want %+v", *o, c.want)
			}
		})
	}
}

func TestPlanFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "0"}, "--gpus=0"},
		{[]string{"--objective", "speed"}, `--objective="speed" is not valid; use one of time, memory, comm, balanced`},
		{[]string{"--top", "0"}, "--top=0"},
		{[]string{"--fix", "tp=0"}, "--fix: strategies: tp=0"},
		{[]string{"--fix", "zero=7"}, "zero=\"7\" is not valid"},
		{[]string{"--sim", "maybe"}, "--sim"},
		{[]string{"--global-batch", "-1"}, "--global-batch"},
	} {
		_, errs, code := runArgs(t, append([]string{"plan"}, c.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("plan %q: exit %d, stderr %q; want exit 2 with %q", c.args, code, errs, c.want)
		}
	}
}

// planJSON runs tpsim plan --json with args and decodes the result.
func planJSON(t *testing.T, wantCode int, args ...string) (search.Output, map[string]json.RawMessage, string) {
	t.Helper()
	out, errs, code := runArgs(t, append([]string{"plan", "--json"}, args...)...)
	if code != wantCode {
		t.Fatalf("plan %q: exit %d, want %d; stderr:\n%s", args, code, wantCode, errs)
	}
	var p search.Output
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("output is not a plan: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	return p, raw, out
}

// The JSON shape of issue 6: searched, feasible, rejected by reason, top entries with the keys of
// tpsim predict --json, and an explanation.
func TestPlanJSON(t *testing.T) {
	p, raw, _ := planJSON(t, cli.ExitOK, "--model", "gpt3-1.3b", "--gpus", "8", "--global-batch", "16", "--top", "4", "--sim", "off")
	for _, k := range []string{"searched", "feasible", "rejected", "top", "explanation"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q key", k)
		}
	}
	if p.Searched == 0 || p.Feasible == 0 || len(p.Top) != 4 || p.Explanation == "" {
		t.Fatalf("searched %d feasible %d top %d explanation %q", p.Searched, p.Feasible, len(p.Top), p.Explanation)
	}
	total := p.Feasible
	for _, n := range p.Rejected {
		total += n
	}
	if total != p.Searched {
		t.Errorf("feasible %d + rejected %v != searched %d", p.Feasible, p.Rejected, p.Searched)
	}
	var top []map[string]json.RawMessage
	if err := json.Unmarshal(raw["top"], &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model", "hardware", "strategy", "devices", "feasible", "reason", "memory_bytes", "comm_bytes",
		"time_s", "flops", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s", "rank"} {
		if _, ok := top[0][k]; !ok {
			t.Errorf("top entry lacks %q", k)
		}
	}
	for i := 1; i < len(p.Top); i++ {
		if p.Top[i].Time.Step < p.Top[i-1].Time.Step {
			t.Errorf("objective time: entry %d (%v) faster than entry %d (%v)", i+1, p.Top[i].Time.Step, i, p.Top[i-1].Time.Step)
		}
		if p.Top[i].Rank != i+1 || !p.Top[i].Feasible || p.Top[i].Devices != 8 {
			t.Errorf("entry %d: rank %d feasible %v devices %d", i, p.Top[i].Rank, p.Top[i].Feasible, p.Top[i].Devices)
		}
	}
	if len(p.Front) == 0 {
		t.Error("no Pareto front")
	}
}

// Same input, same bytes: twice, and with one worker or several (the candidates are split into
// chunks priced on their own goroutines).
func TestPlanDeterministic(t *testing.T) {
	args := []string{"--model", "llama2-7b", "--gpus", "8", "--sim", "off", "--objective", "balanced"}
	_, _, a := planJSON(t, cli.ExitOK, args...)
	_, _, b := planJSON(t, cli.ExitOK, args...)
	_, _, c := planJSON(t, cli.ExitOK, append(args, "--workers", "1")...)
	_, _, d := planJSON(t, cli.ExitOK, append(args, "--workers", "3")...)
	if a != b || a != c || a != d {
		t.Fatal("plan output differs between runs or worker counts")
	}
	if n := search.Workers(3, 8616); n != 2 {
		t.Errorf("8616 candidates on 3 workers use %d goroutines, want 2 (chunks of at least 4096)", n)
	}
}

// Llama-2 7B on one node: memory and time give different answers, and the memory explanation
// says what the fastest strategy would cost in memory.
func TestPlanObjectivesDiffer(t *testing.T) {
	args := []string{"--model", "llama2-7b", "--hardware", "a100-80g", "--gpus", "8", "--sim", "off"}
	pt, _, _ := planJSON(t, cli.ExitOK, append(args, "--objective", "time")...)
	pm, _, _ := planJSON(t, cli.ExitOK, append(args, "--objective", "memory")...)
	if pt.Top[0].Strategy == pm.Top[0].Strategy {
		t.Fatalf("both objectives chose %s", pt.Top[0].Strategy)
	}
	if pm.Top[0].Memory.Peak >= pt.Top[0].Memory.Peak || pt.Top[0].Time.Step >= pm.Top[0].Time.Step {
		t.Errorf("memory winner %v/%v, time winner %v/%v: each should win its objective",
			pm.Top[0].Memory.Peak, pm.Top[0].Time.Step, pt.Top[0].Memory.Peak, pt.Top[0].Time.Step)
	}
	for _, s := range []string{"does not fit", "The fastest strategy", "gives up that time"} {
		if !strings.Contains(pm.Explanation, s) {
			t.Errorf("memory explanation lacks %q:\n%s", s, pm.Explanation)
		}
	}
	if !strings.Contains(pt.Explanation, "If memory is what matters") {
		t.Errorf("time explanation does not name the memory alternative:\n%s", pt.Explanation)
	}
	pc, _, _ := planJSON(t, cli.ExitOK, append(args, "--objective", "comm")...)
	if len(pc.Top) == 0 {
		t.Fatal("comm objective found nothing")
	}
}

// Bad input: clear errors, or an empty result that says why (exit 1, the explanation printed).
func TestPlanBadInput(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		code      int
		stdoutHas string
		stderrHas string
	}{
		{"tp=3 against 32 heads", []string{"--model", "llama2-7b", "--gpus", "24", "--fix", "tp=3", "--global-batch", "48"}, cli.ExitFailure,
			"tp must divide the 32 heads", "no strategy is feasible"},
		{"tp=3 on 8 devices", []string{"--model", "llama2-7b", "--gpus", "8", "--fix", "tp=3"}, cli.ExitFailure, "", "does not divide 8 devices"},
		{"more devices than the model can use", []string{"--model", "gpt-tiny", "--gpus", "65536"}, cli.ExitFailure, "More devices than the model can use", ""},
		{"batch not divisible by any dp", []string{"--model", "gpt3-1.3b", "--gpus", "8", "--global-batch", "7", "--fix", "tp=1,pp=1,cp=1"}, cli.ExitFailure,
			"dp x mbs must divide the global batch 7", ""},
		{"sequence past learned positions", []string{"--model", "gpt3-1.3b", "--seq", "4096"}, cli.ExitFailure, "", "learned positions"},
		{"unknown model", []string{"--model", "nope"}, cli.ExitFailure, "", "nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runArgs(t, append([]string{"plan", "--sim", "off"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, c.code, errs)
			}
			if !strings.Contains(out, c.stdoutHas) || !strings.Contains(errs, c.stderrHas) {
				t.Errorf("stdout lacks %q or stderr lacks %q:\n%s\n%s", c.stdoutHas, c.stderrHas, out, errs)
			}
		})
	}
}

// A hardware profile without a FlashAttention efficiency cannot price attn=flash: plan says so and
// names the fix, as predict does, rather than rejecting every candidate as unpriced.
func TestPlanFlashNeedsKernel(t *testing.T) {
	hw, err := hardware.Load("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	hw.Efficiency.FlashMax = 0
	path := filepath.Join(t.TempDir(), "noflash.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := hw.Save(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runArgs(t, "plan", "--sim", "off", "--model", "llama2-7b", "--gpus", "8", "--hardware", path, "--fix", "attn=flash")
	if code != cli.ExitFailure || !strings.Contains(errs, "flash_attention_fraction") || !strings.Contains(errs, "attn=eager") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming efficiency.flash_attention_fraction and attn=eager", code, errs)
	}
}

func TestPlanText(t *testing.T) {
	out, errs, code := runArgs(t, "plan", "--model", "gpt3-1.3b", "--gpus", "16", "--global-batch", "32", "--fix", "tp=8", "--top", "3", "--sim", "off")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"gpt3-1.3b on 16 x a100-80g, global batch 32", "fixed tp=8", "searched", "feasible", "strategy", "tokens/s",
		"peak/device", "Why", "Tensor parallel stays inside a node"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// --out writes the table, the JSON and the Pareto figure; the JSON is what --json prints.
func TestPlanOut(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--model", "gpt3-1.3b", "--gpus", "8", "--global-batch", "16", "--sim", "off"}
	p, _, want := planJSON(t, cli.ExitOK, append(args, "--out", dir)...)
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"pareto.png", "pareto.svg", "plan.csv", "plan.json"}) {
		t.Fatalf("files %v", names)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "plan.json"))
	if string(got) != want {
		t.Error("plan.json differs from --json")
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "plan.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 11 || !strings.HasPrefix(string(csv), "rank,strategy,closed_form_step_s") {
		t.Errorf("plan.csv: %d lines:\n%s", lines, csv)
	}
	// The byte columns are whole numbers at full precision: they read back to the JSON's bytes.
	recs, err := encodingcsv.NewReader(bytes.NewReader(csv)).ReadAll()
	if err != nil || len(recs) != len(p.Top)+1 {
		t.Fatalf("plan.csv: %v, %d records for %d rows", err, len(recs), len(p.Top))
	}
	for i, e := range p.Top {
		for j, d := range strategies.DimOrder {
			if got, want := recs[i+1][6+j], strconv.FormatInt(int64(e.CommBytes[d]), 10); got != want {
				t.Errorf("row %d: %s_bytes %s, want %s (plan.json)", i+1, d, got, want)
			}
		}
	}
}

// --sim on re-ranks the closed form's best --sim-top candidates by simulated step time.
func TestPlanSim(t *testing.T) {
	p, _, _ := planJSON(t, cli.ExitOK, "--model", "gpt-tiny", "--gpus", "4", "--top", "3", "--sim", "on", "--sim-top", "3")
	if p.Simulated != 3 {
		t.Fatalf("simulated %d, want 3", p.Simulated)
	}
	if !strings.HasPrefix(p.TimeSource, "simulator") {
		t.Errorf("time source %q", p.TimeSource)
	}
	for _, e := range p.Top {
		if e.SimStep == nil || *e.SimStep <= 0 {
			t.Errorf("%s has no simulated step", e.Strategy)
		}
	}
	for i := 1; i < len(p.Top); i++ {
		if *p.Top[i].SimStep < *p.Top[i-1].SimStep {
			t.Errorf("not in simulated order: %v then %v", *p.Top[i-1].SimStep, *p.Top[i].SimStep)
		}
	}
	if !strings.Contains(p.Explanation, "re-ranked the top 3") {
		t.Errorf("explanation does not say the simulator re-ranked:\n%s", p.Explanation)
	}
}
