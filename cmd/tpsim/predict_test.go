package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/strategies"
)

// predictJSON runs tpsim predict --json with args and decodes the result.
func predictJSON(t *testing.T, args ...string) *costmodel.Result {
	t.Helper()
	out, errs, code := runArgs(t, append([]string{"predict", "--json"}, args...)...)
	if code != cli.ExitOK {
		t.Fatalf("predict %q: exit %d; stderr:\n%s", args, code, errs)
	}
	var r costmodel.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("predict %q: output is not a Result: %v\n%s", args, err, out)
	}
	return &r
}

func TestParsePredict(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want predictOptions
	}{
		{"defaults", nil, predictOptions{Pricing: cli.Pricing{Target: cli.Target{Model: cli.DefaultModel, Hardware: cli.DefaultHardware}, Strategy: cli.DefaultStrategy}}},
		{"all flags", []string{"--model", "gpt3-175b", "--hardware=h100-sxm", "--strategy", "dp=2,tp=4", "--seq", "1024",
			"--precision", "FP32", "--plan", "megatron", "--json"},
			predictOptions{Pricing: cli.Pricing{Target: cli.Target{Model: "gpt3-175b", Hardware: "h100-sxm"}, Strategy: "dp=2,tp=4", Seq: 1024, Precision: "fp32", Plan: "megatron"}, JSON: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _, err := parsePredict(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if *o != c.want {
				t.Errorf("got %+v, want %+v", *o, c.want)
			}
		})
	}
}

// --seq and --precision override what the --strategy string says (internal/cli tests
// Pricing.StrategyOf; this, that predict prints the result).
func TestPredictOverrides(t *testing.T) {
	r := predictJSON(t, "--model", "gpt-tiny", "--strategy", "dp=2,seq=8", "--seq", "16", "--precision", "fp32")
	if !strings.Contains(r.Strategy, "seq=16") || !strings.Contains(r.Strategy, "precision=fp32") {
		t.Errorf("resolved strategy %q should carry seq=16 and precision=fp32", r.Strategy)
	}
}

// The JSON keys are the interface of issue 2 that other tools rely on.
func TestPredictJSONKeys(t *testing.T) {
	out, errs, code := runArgs(t, "predict", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model", "hardware", "strategy", "devices", "feasible", "reason", "memory_bytes", "comm_bytes",
		"time_s", "flops", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	sub := map[string][]string{
		"memory_bytes": {"params", "grads", "optimizer", "activations", "workspace", "comm", "peak"},
		"comm_bytes":   {"dp", "tp", "pp", "cp"},
		"time_s":       {"step", "compute", "comm_exposed", "bubble", "optimizer"},
		"flops":        {"model", "hardware"},
	}
	for k, keys := range sub {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(obj[k], &m); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for _, s := range keys {
			if _, ok := m[s]; !ok {
				t.Errorf("key %s.%s missing", k, s)
			}
		}
	}
	// Deterministic: the same inputs print the same bytes.
	again, _, _ := runArgs(t, "predict", "--json")
	if again != out {
		t.Error("two runs of predict --json differ")
	}
}

// Issue 2 acceptance: ZeRO-3 over 64 ranks holds 16/64 bytes of model state per parameter
// (Rajbhandari et al. 2020 §5.3: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter;
// stage 3 partitions all of it, 16 Psi / Nd), Llama-2-7B having 6,738,415,616 parameters
// (Touvron et al. 2023).
func TestPredictZeRO3Llama(t *testing.T) {
	r := predictJSON(t, "--model", "llama2-7b", "--hardware", "a100-80g", "--strategy", "dp=64,zero=3")
	got := float64(r.Memory.Params + r.Memory.Grads + r.Memory.Optimizer)
	want := 16 * 6738415616.0 / 64
	if math.Abs(got-want) > 0.005*want {
		t.Errorf("params+grads+optimizer = %.0f bytes, want %.0f within 0.5%%", got, want)
	}
	if r.Devices != 64 {
		t.Errorf("devices = %d, want 64", r.Devices)
	}
}

// Issue 2 acceptance: GPT-3 175B on 1536 A100s (Narayanan et al. 2021, Table 2 and §5.2):
// PTD-P (t=8, p=12, d=16, batch 1536) measured 141 TFLOP/s per GPU counting recompute; ZeRO-3 on
// the same GPUs measured 44. The prediction must show that ZeRO-3's data-parallel communication
// dominates (its step-time ordering is a known gap, below).
func TestPredictGPT3PTDPvsZeRO3(t *testing.T) {
	ptdp := []string{"--model", "gpt3-175b", "--hardware", "a100-80g", "--strategy", "dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full"}
	zero3 := []string{"--model", "gpt3-175b", "--hardware", "a100-80g", "--strategy", "dp=1536,zero=3,mbs=1,gbs=1536,recompute=full"}
	a, b := predictJSON(t, ptdp...), predictJSON(t, zero3...)
	if a.Devices != 1536 || b.Devices != 1536 {
		t.Fatalf("devices %d and %d, want 1536", a.Devices, b.Devices)
	}
	if !a.Feasible || !b.Feasible {
		t.Errorf("both fit on 80 GB A100s in the paper; feasible %v (%s) and %v (%s)", a.Feasible, a.Reason, b.Feasible, b.Reason)
	}
	// Narayanan et al. 2021 Table 2: 141 TFLOP/s per GPU; issue 2 asks for 20%.
	if got := a.HardwareTFLOPsPerGPU; math.Abs(got-141)/141 > 0.2 {
		t.Errorf("PTD-P hardware_tflops_per_gpu = %.1f, want 141 within 20%%", got)
	}
	// The paper measured ZeRO-3 3.2x slower (141/44 TFLOP/s). With today's ZeRO-3 (gathers
	// prefetched under compute, one flat buffer per collective) tpsim does not price it that slow;
	// with the DeepSpeed ZeRO-3 of 2021 the paper ran, gathers waiting for each other and
	// collectives over lists of one tensor per rank (overlap=off,tensorlists=on, as validate
	// infers for those rows), it does: measured 3.3x (133.3 against 40.1 hardware TFLOP/s per GPU),
	// held within a quarter of the paper's 3.2x. What tpsim also models: the bytes ZeRO-3 moves.
	// By hand (Rajbhandari et al. 2020 §7.2.2): every step each rank all-gathers the bf16
	// parameters for the forward and again for the recompute forward, whose parameters the
	// backward reuses (FSDP's one unshard per checkpointed unit in backward), and
	// reduce-scatters the gradients once, each sending (d-1)/d of the 2-byte tensor: 3 x (d-1) x
	// its shard of params; DeepSpeed 2021's engine, which released a submodule's parameters after
	// every forward, gathered them once more for the backward: 4 x.
	ds2021Spec := "dp=1536,zero=3,mbs=1,gbs=1536,recompute=full,overlap=off,tensorlists=on"
	ds2021 := predictJSON(t, "--model", "gpt3-175b", "--hardware", "a100-80g", "--strategy", ds2021Spec)
	for _, c := range []struct {
		name   string
		r      *costmodel.Result
		passes float64
	}{{"ZeRO-3", b, 3}, {"DeepSpeed 2021's ZeRO-3", ds2021, 4}} {
		want := c.passes * 1535 * float64(c.r.Memory.Params)
		if got := float64(c.r.CommBytes[strategies.DimDP]); math.Abs(got-want) > 0.02*want {
			t.Errorf("%s sends %v on dp, by hand %g x 1535 x %v = %.4g bytes", c.name, c.r.CommBytes[strategies.DimDP], c.passes, c.r.Memory.Params, want)
		}
	}
	if r := a.HardwareTFLOPsPerGPU / ds2021.HardwareTFLOPsPerGPU; math.Abs(r/3.2-1) > 0.25 {
		t.Errorf("PTD-P over DeepSpeed 2021's ZeRO-3: %.1f / %.1f TFLOP/s = %.2fx, the paper measured 3.2x (within 25%%)", a.HardwareTFLOPsPerGPU, ds2021.HardwareTFLOPsPerGPU, r)
	}
	if b.HardwareTFLOPsPerGPU <= ds2021.HardwareTFLOPsPerGPU {
		t.Errorf("today's ZeRO-3 (%.1f TFLOP/s) is not faster than DeepSpeed 2021's (%.1f)", b.HardwareTFLOPsPerGPU, ds2021.HardwareTFLOPsPerGPU)
	}
	for d, x := range b.CommTime {
		if d != strategies.DimDP && x >= b.CommTime[strategies.DimDP] {
			t.Errorf("ZeRO-3: %s communication %v should be below dp's %v", d, x, b.CommTime[strategies.DimDP])
		}
	}

	// The readable output says why, and lists the assumptions.
	out, errs, code := runArgs(t, "predict", "--model", "gpt3-175b", "--hardware", "a100-80g", "--strategy", ds2021Spec)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"Communication bound: exposed communication is", "dp dominates (dp=1536, ZeRO-3", "Assumptions", "GiB", "TFLOP/s per GPU", "MFU / HFU", "feasible  yes"} {
		if !strings.Contains(out, s) {
			t.Errorf("readable ZeRO-3 output lacks %q:\n%s", s, out)
		}
	}
	out, _, _ = runArgs(t, append([]string{"predict"}, ptdp...)...)
	for _, s := range []string{"schedule 1f1b", "GEMM efficiency", "plan      megatron", "pp   12", "tp   8", "dp   16"} {
		if !strings.Contains(out, s) {
			t.Errorf("readable PTD-P output lacks %q:\n%s", s, out)
		}
	}
}

func TestPredictReadable(t *testing.T) {
	out, errs, code := runArgs(t, "predict")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{
		"llama2-7b (6.74B parameters) on 8 x a100-80g",
		"Memory per device", "params", "optimizer", "activations", "peak",
		"feasible  yes", "Communication per device per step", "dp   8",
		"Time per step", "compute", "comm exposed", "bubble", "%",
		"model FLOPs", "FLOP per step", "tokens/s",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// An infeasible strategy is a result, not an error: exit 0 with the reason.
func TestPredictInfeasible(t *testing.T) {
	out, errs, code := runArgs(t, "predict", "--model", "gpt3-175b", "--strategy", "dp=1,gbs=1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "feasible  NO: ") {
		t.Errorf("output should say it does not fit:\n%s", out)
	}
	r := predictJSON(t, "--model", "gpt3-175b", "--strategy", "dp=1,gbs=1")
	if r.Feasible || r.Reason == "" {
		t.Errorf("feasible %v, reason %q", r.Feasible, r.Reason)
	}
}

// Bad input: a non-zero exit and a message that names the problem, never a panic.
func TestPredictErrors(t *testing.T) {
	dir := t.TempDir()
	badHW := filepath.Join(dir, "hw.json")
	if err := os.WriteFile(badHW, []byte("{\"name\": \"x\",\n  \"device\": {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badModel := filepath.Join(dir, "config.json")
	if err := os.WriteFile(badModel, []byte("{\"model_type\": \"llama\", \"hidden_size\": }"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		has  []string // all must appear on stderr
	}{
		{"unknown model lists names", []string{"--model", "gpt5"}, cli.ExitFailure, []string{`"gpt5"`, "llama2-7b", "gpt3-175b", "seed-mlp"}},
		{"unknown hardware lists names", []string{"--hardware", "tpu9"}, cli.ExitFailure, []string{`"tpu9"`, "a100-80g", "h100-sxm", "h200"}},
		{"tp not dividing heads lists degrees", []string{"--strategy", "tp=3"}, cli.ExitFailure, []string{"tp=3", "32 attention heads", "1,2,4,8"}},
		{"tp not dividing kv heads", []string{"--model", "llama3-8b", "--strategy", "tp=16"}, cli.ExitFailure, []string{"tp=16", "key/value heads"}},
		{"malformed hardware JSON says where", []string{"--hardware", badHW}, cli.ExitFailure, []string{"hw.json", "line 3"}},
		{"malformed model JSON says where", []string{"--model", badModel}, cli.ExitFailure, []string{"config.json", "1:"}},
		{"missing hardware file", []string{"--hardware", filepath.Join(dir, "nope.json")}, cli.ExitFailure, []string{"nope.json"}},
		{"unknown strategy key", []string{"--strategy", "dp=8,foo=1"}, cli.ExitFailure, []string{`"foo"`, "valid keys"}},
		{"malformed strategy", []string{"--strategy", "dp8"}, cli.ExitFailure, []string{"strategies:"}},
		{"zero dp", []string{"--strategy", "dp=0"}, cli.ExitFailure, []string{"dp=0", "positive"}},
		{"negative tp", []string{"--strategy", "tp=-2"}, cli.ExitFailure, []string{"tp=-2", "positive"}},
		{"zero mbs", []string{"--strategy", "dp=8,mbs=0"}, cli.ExitFailure, []string{"mbs=0", "positive"}},
		{"negative gbs", []string{"--strategy", "dp=8,gbs=-1"}, cli.ExitFailure, []string{"gbs=-1", "positive"}},
		{"zero stage out of range", []string{"--strategy", "dp=8,zero=4"}, cli.ExitFailure, []string{"zero", "0, 1, 2 or 3"}},
		{"batch not divisible", []string{"--strategy", "dp=7"}, cli.ExitFailure, []string{"not divisible"}},
		{"plan key matching nothing", []string{"--strategy", "tp=2", "--plan", "nosuch=colwise"}, cli.ExitFailure, []string{`"nosuch"`, "layers.N.attn.qkv"}},
		{"zero --seq", []string{"--seq", "0"}, cli.ExitUsage, []string{"--seq", "positive"}},
		{"negative --seq", []string{"--seq=-5"}, cli.ExitUsage, []string{"--seq", "positive"}},
		{"bad --precision", []string{"--precision", "fp16"}, cli.ExitUsage, []string{"fp16", "mixed", "fp32"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, json := range []bool{false, true} {
				args := append([]string{"predict"}, c.args...)
				if json {
					args = append(args, "--json")
				}
				out, errs, code := runArgs(t, args...)
				if code != c.code {
					t.Fatalf("%q: exit %d, want %d; stderr:\n%s", args, code, c.code, errs)
				}
				if out != "" {
					t.Errorf("%q: stdout should be empty on error, got:\n%s", args, out)
				}
				if !strings.HasPrefix(errs, "tpsim predict: ") {
					t.Errorf("%q: stderr %q should start with the command", args, errs)
				}
				for _, s := range c.has {
					if !strings.Contains(errs, s) {
						t.Errorf("%q: stderr lacks %q:\n%s", args, s, errs)
					}
				}
			}
		})
	}
}
