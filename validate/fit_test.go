package validate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
)

// The fitted set is small and declared per GPU type (and, on A100, per software stack where the
// records say which ran): 10 parameters over 3 GPU types, each an achieved fraction of one
// hardware field or (DeepSpeed 2021's list collectives) a per-copy time, none per record, model
// or GPU count. Each preset it
// is written into cites its fitted values with their provenance.
func TestFitParameterSet(t *testing.T) {
	const size, gpus = 10, 3
	if len(Params) != size || paramGPUs() != gpus {
		t.Fatalf("%d parameters over %d GPU types, the declared set is %d over %d", len(Params), paramGPUs(), size, gpus)
	}
	fields := map[string]bool{"gemm_achieved_fraction": true, "gemm_achieved_fraction_by_stack": true, "fp8_gemm_fraction": true, "flash_attention_fraction": true, "flash1_attention_fraction": true}
	times := map[string]bool{"list_copy_us": true} // microseconds, not fractions
	stacks := map[string]bool{StackMegatron: true, StackDeepSpeed: true, StackLLMFoundry: true, StackNeMo: true, StackTorchtitan: true}
	seen := map[string]bool{}
	recs, _ := training(t)
	for _, p := range Params {
		key := p.GPU + "/" + p.Name()
		switch {
		case (p.Stack != "") != (p.Field == "gemm_achieved_fraction_by_stack") || (p.Stack != "" && !stacks[p.Stack]):
			t.Errorf("%s: a stack's value needs a known stack and the by-stack field", key)
		case seen[key]:
			t.Errorf("%s declared twice", key)
		case !fields[p.Field] && !times[p.Field]:
			t.Errorf("%s: not an achieved-fraction or per-copy time field of hardware.Efficiency", key)
		case GPUPresets[p.GPU] == nil:
			t.Errorf("%s: GPU type without presets", key)
		case times[p.Field] && !(p.Lo >= 0 && p.Lo < p.Start && p.Start <= p.Hi):
			t.Errorf("%s: start %g outside (%g, %g]", key, p.Start, p.Lo, p.Hi)
		case !times[p.Field] && !(p.Lo > 0 && p.Lo < p.Start && p.Start <= p.Hi && p.Hi <= 1):
			t.Errorf("%s: start %g outside (%g, %g]", key, p.Start, p.Lo, p.Hi)
		}
		seen[key] = true
		for _, r := range recs {
			if strings.Contains(p.GPU, r.ID) || strings.Contains(p.Field, r.ID) {
				t.Errorf("%s names record %s", key, r.ID)
			}
		}
	}
	for gpu, names := range GPUPresets {
		for _, name := range names {
			hw, err := hardware.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range Params {
				if p.GPU != gpu {
					continue
				}
				src := hw.Sources[p.Name()]
				if !strings.HasPrefix(src, "fitted by `tpsim fit") || !strings.Contains(src, "leave-one-source-out") {
					t.Errorf("%s: %s lacks the fit's provenance: %q", name, p.Name(), src)
				}
			}
		}
	}
}

// A GPU type takes, unfitted, its chip's value of a field that none of its own parameters is: the
// H100 SXM (whose rows are all FP8) the BF16 GEMM fraction of the H100 96 GB, the H200 (no rows)
// all three of the H100s', each from the first GPU type of the chip in Params' order; nothing
// crosses chips, and the presets cite where each shared value comes from.
func TestSharedValues(t *testing.T) {
	var got []string
	for _, s := range Shared() {
		got = append(got, s.GPU+" "+s.Field+" <- "+s.From)
		p := Params[s.Param]
		if p.GPU != s.From || p.Field != s.Field || p.Stack != "" || Chip(s.From) != Chip(s.GPU) {
			t.Errorf("%s %s: takes %s of %s", s.GPU, s.Field, p.Name(), p.GPU)
		}
		for _, name := range GPUPresets[s.GPU] {
			hw, err := hardware.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			if src := hw.Sources["efficiency."+s.Field]; !strings.HasPrefix(src, "not fitted: ") || !strings.Contains(src, s.From) {
				t.Errorf("%s: efficiency.%s does not cite its chip's value: %q", name, s.Field, src)
			}
		}
	}
	want := []string{"h100-sxm gemm_achieved_fraction <- h100-96g", "h200 fp8_gemm_fraction <- h100-sxm",
		"h200 flash_attention_fraction <- h100-sxm", "h200 gemm_achieved_fraction <- h100-96g"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("shared values %q, want %q", got, want)
	}
}

// The fit is deterministic: the same cases give the same bytes. (A handful of small records
// keeps the test fast; tpsim fit runs the same code on all of them.)
func TestFitDeterministic(t *testing.T) {
	recs, _ := training(t)
	var some []Record
	for _, r := range recs {
		if strings.Contains(r.ID, "mpt125m") || strings.Contains(r.ID, "nemo_longseq_llama2_7b_4k") || strings.Contains(r.ID, "torchtitan_h100_202412_T1_8B_fsdp") {
			some = append(some, r)
		}
	}
	if len(some) < 5 {
		t.Fatalf("%d records picked", len(some))
	}
	var out [2][]byte
	for i := range out {
		cases, _ := PrepareAll(some)
		res := Fit(cases)
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	if string(out[0]) != string(out[1]) {
		t.Error("two fits of the same records differ")
	}
}

// SetPresetValue edits one field and its source and keeps the rest of the preset's text.
func TestSetPresetValue(t *testing.T) {
	text := []byte(`{
  "name": "x",
  "device": {
    "name": "GPU",
    "peak_flops": {
      "bf16": 1e12
    },
    "memory_bytes": 1e9,
    "mem_bandwidth_bytes_per_s": 1e9
  },
  "levels": [
    {
      "name": "ib",
      "devices": 0,
      "bandwidth_bytes_per_s": 1e9,
      "latency_s": 1e-6,
      "efficiency": 0.9
    }
  ],
  "efficiency": {
    "gemm_max_fraction": 0.8,
    "gemm_half_flops": 1e9,
    "mem_max_fraction": 0.8
  },
  "sources": {
    "efficiency.gemm_max_fraction": "a sweep"
  }
}
`)
	any := Param{GPU: "x", Field: "gemm_achieved_fraction"}
	got, err := SetPresetValue(text, any, 0.75, "fitted <here>")
	if err != nil {
		t.Fatal(err)
	}
	if got, err = SetPresetValue(got, any, 0.7, "fitted again"); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{StackMegatron, StackDeepSpeed} {
		if got, err = SetPresetValue(got, Param{GPU: "x", Stack: st, Field: "gemm_achieved_fraction_by_stack"}, 0.8, "by stack"); err != nil {
			t.Fatal(err)
		}
	}
	h, err := hardware.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if h.Efficiency.GEMMAchieved != 0.7 || h.Sources["efficiency.gemm_achieved_fraction"] != "fitted again" || h.Sources["efficiency.gemm_max_fraction"] != "a sweep" ||
		len(h.Efficiency.GEMMAchievedByStack) != 2 || h.Efficiency.ForStack(StackDeepSpeed).GEMMAchieved != 0.8 || h.Sources["efficiency.gemm_achieved_fraction_by_stack.megatron-lm"] != "by stack" {
		t.Errorf("efficiency %+v sources %v", h.Efficiency, h.Sources)
	}
	if !strings.Contains(string(got), `"bf16": 1e12`) {
		t.Error("the rest of the text was rewritten")
	}
}
