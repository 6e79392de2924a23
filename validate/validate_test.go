package validate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Megatron-LM counts TFLOP/s with Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
func TestSourceFLOPs(t *testing.T) {
	// GPT 18.4B of Table 1: l 40, h 6144, a 48, s 2048, V 51200, B 1024.
	tr := &model.Transformer{Hidden: 6144, Layers: 40, Heads: 48, KVHeads: 48, HeadDim: 128, FFN: 4 * 6144, Vocab: 51200}
	B, s, l, h, V := 1024.0, 2048.0, 40.0, 6144.0, 51200.0
	want := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
	if got := sourceFLOPs(tr, 1024, 2048); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("Eq. 3: %g, want %g", got, want)
	}
}

func TestRecordHardware(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		gpu     string
		mem     *float64
		name    string
		skipHas string
	}{
		{"NVIDIA A100-SXM4-80GB", f(80), "a100-80g", ""},
		{"NVIDIA A100 40GB", f(40), "a100-40g", ""},
		{"NVIDIA A100 (DGX-A100, 2020; 40GB SKU likely but not stated)", nil, "a100-40g", ""},
		{"NVIDIA A100 (DGX-A100, 2020)", nil, "a100-80g", ""},
		{"NVIDIA H100-SXM5-80GB", f(80), "h100-sxm", ""},
		{"NVIDIA H100 PCIe", f(80), "", "no hardware preset"},
		{"NVIDIA V100 SXM3 32GB (DGX-2H)", f(32), "", "no hardware preset"},
		{"NVIDIA A100 (odd)", f(20), "", "40 and 80 GB parts only"},
	}
	for _, c := range cases {
		var r Record
		r.Hardware.GPU, r.Hardware.MemoryGB = c.gpu, c.mem
		hw, _, skip := recordHardware(&r, hardware.Preset)
		switch {
		case c.skipHas != "":
			if !strings.Contains(skip, c.skipHas) {
				t.Errorf("%s: skip %q, want %q", c.gpu, skip, c.skipHas)
			}
		case skip != "" || hw.Name != c.name:
			t.Errorf("%s: %v %q, want %s", c.gpu, hw, skip, c.name)
		case c.name == "a100-40g" && (hw.Device.Memory != 40e9 || hw.Device.MemBandwidth != 1555e9):
			t.Errorf("a100-40g: memory %v bandwidth %v", hw.Device.Memory, hw.Device.MemBandwidth)
		}
	}
}

// training loads the shipped training split; it is embedded, so the tests that read it never skip.
func training(t *testing.T) ([]Record, []Skip) {
	t.Helper()
	recs, skips, err := Training()
	if err != nil {
		t.Fatal(err)
	}
	return recs, skips
}

// Every record of the training split is compared or skipped with a reason.
func TestTrainingRuns(t *testing.T) {
	recs, skips := training(t)
	out := Run(recs, skips, Options{})
	if len(out.Rows)+len(out.Skipped) != len(recs)+len(skips) || len(out.Rows) < len(recs)/2 {
		t.Fatalf("%d rows, %d skipped of %d records", len(out.Rows), len(out.Skipped), len(recs))
	}
	for _, r := range out.Rows {
		if r.Predicted <= 0 || math.IsNaN(r.APE) {
			t.Errorf("%s: predicted %g ape %g", r.ID, r.Predicted, r.APE)
		}
	}
	t.Logf("%d rows: MAPE %.1f%%, max %.1f%%; %d skipped", out.Summary.N, 100*out.Summary.MAPE, 100*out.Summary.MaxAPE, len(out.Skipped))
}

// The attention kernel follows the record's notes, except llm-foundry's A100 benchmark tables,
// whose runs used its Triton FlashAttention (valAttention says why).
func TestAttention(t *testing.T) {
	cases := []struct {
		repo, path, gpu, notes string
		want                   strategies.Attention
		why                    string
	}{
		{"", "", "NVIDIA A100-SXM4-80GB", "Megatron-LM, no fused attention stated", strategies.AttentionEager, "not stated"},
		{"", "", "NVIDIA H100", "trained with FlashAttention", strategies.AttentionFlash, "FlashAttention-2"},
		{"", "", "NVIDIA A100", "flash-attn 1.0.4", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "attn_impl triton", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "FlashAttention-2 kernels", strategies.AttentionFlash, "as the record's notes say"},
		{"", "", "NVIDIA A100", "FlashAttention v1", strategies.AttentionFlash1, "as the record's notes say"},
		{"", "", "NVIDIA A100", "flash_attn==2.4.2", strategies.AttentionFlash, "FlashAttention-2, as"},
		{"", "", "NVIDIA A100", "model: {attn_impl: 'triton'}", strategies.AttentionFlash1, "as the record's notes say"},
		// A head size or another Triton kernel is not a generation.
		{"", "", "NVIDIA A100", "FlashAttention 128-dim heads", strategies.AttentionFlash, "priced as FlashAttention-2"},
		{"", "", "NVIDIA A100", "Triton RMSNorm and FlashAttention", strategies.AttentionFlash, "priced as FlashAttention-2"},
		{"", "", "NVIDIA A100", "Triton RMSNorm, no fused attention", strategies.AttentionEager, "not stated"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA A100 80GB", "Composer + FSDP, FlashAttention (attn_impl flash)", strategies.AttentionFlash1, "sweep.sh"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA H100 80GB", "FlashAttention (attn_impl flash)", strategies.AttentionFlash, "FlashAttention-2"},
		{"github.com/mosaicml/llm-foundry", "scripts/train/benchmarking/README.md", "NVIDIA A100 80GB", "flash-attn 2.4", strategies.AttentionFlash, "as the record's notes say"},
	}
	for _, c := range cases {
		var r Record
		r.Source.Repo, r.Source.Path, r.Hardware.GPU, r.Notes = c.repo, c.path, c.gpu, c.notes
		got, why := attention(&r)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s %s %q: %s (%s), want %s (%q)", c.repo, c.gpu, c.notes, got, why, c.want, c.why)
		}
	}
}

// torchtitan's Llama configs run the eager RMSNorm (norm_type "rmsnorm") and its rotary embedding
// is eager PyTorch, as Hugging Face's Llama is (and llm-foundry's, which runs it) unless Liger's
// kernels replace it; Megatron-LM and NeMo run fused kernels; a GPT has neither op.
func TestKernels(t *testing.T) {
	cases := []struct {
		title, repo, notes string
		want               strategies.Kernels
	}{
		{"torchtitan benchmark report", "github.com/pytorch/torchtitan", "FSDP. Local batch size 2 per DP rank.", strategies.KernelsEager},
		{"torchtitan benchmark report", "github.com/pytorch/torchtitan", "FSDP + torch.compile.", strategies.KernelsEager},
		{"A blog", "", "Llama 2 7B with Hugging Face transformers and FSDP", strategies.KernelsEager},
		{"A blog", "", "Llama 3 8B, HuggingFace Trainer with Liger kernels", strategies.KernelsFused},
		{"NVIDIA NeMo Framework performance summary", "github.com/NVIDIA/NeMo", "Transformer Engine", strategies.KernelsFused},
		{"NVIDIA Megatron-LM README", "github.com/NVIDIA/Megatron-LM", "", strategies.KernelsFused},
		{"MosaicML llm-foundry training benchmarks", "github.com/mosaicml/llm-foundry", "Llama 2 with Composer + FSDP", strategies.KernelsEager},
		{"MosaicML llm-foundry training benchmarks", "github.com/mosaicml/llm-foundry", "Llama 3 with Liger kernels", strategies.KernelsFused},
	}
	llama, err := model.Load("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	gpt, err := model.Load("gpt3-1.3b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		var r Record
		r.Source.Title, r.Source.Repo, r.Notes = c.title, c.repo, c.notes
		if got, why := kernels(&r, llama); got != c.want || (got == strategies.KernelsEager) == (why == "") {
			t.Errorf("%s %q: kernels=%s (%q), want %s with a reason when eager", c.title, c.notes, got, why, c.want)
		}
		// A GPT (LayerNorm, learned positions) has neither op: fused, nothing printed.
		if got, why := kernels(&r, gpt); got != strategies.KernelsFused || why != "" {
			t.Errorf("%s %q with a GPT: kernels=%s (%q), want fused and no reason", c.title, c.notes, got, why)
		}
	}
}

// valModel builds MPT as llm-foundry's benchmark tables ran it: its parameter count is the one
// each table row gives (NumParams, the records' params), for every size and sequence length.
func TestMPTParams(t *testing.T) {
	recs, _ := training(t)
	n := 0
	for i := range recs {
		r := &recs[i]
		if Family(r) != FamilyMPT || r.Model.Params == nil || r.Parallel.GlobalBatch == nil {
			continue
		}
		m, _, why := recordModel(r, *r.Parallel.GlobalBatch)
		if why != "" {
			t.Fatalf("%s: %s", r.ID, why)
		}
		if got, want := m.Params(), int64(*r.Model.Params); got != want {
			t.Errorf("%s: tpsim builds %d parameters, the table says %d", r.ID, got, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no MPT records")
	}
	t.Logf("%d MPT records: parameter counts equal", n)
}

// The headline figures of tpsim validate over the training split with the fitted presets are the
// figures the README states (its accuracy table: in-sample MAPE 5.5% over 224 rows; per GPU type
// 5.4% a100, 6.0% h100-sxm, 5.3% h100-96g; measured-memory median APE 5.2%), which the issue-12
// acceptance targets bound (in-sample at most 12%, memory median at most 10%). The README states
// each to 0.1 point, so the band is that rounding: a figure passes when it rounds to the stated
// one (|got - stated| <= 0.05 point). A change that moves a figure users read must restate it in
// the README and here in the same commit, and say why; a uniform 3% slowdown, FP8 GEMMs without
// the size curve (h100-sxm 6.0% -> 6.1%) or the wrong median element (5.2% -> 5.4%) fail.
// (The leave-one-source-out 8.7% is asserted through the presets' provenance,
// TestStatedLOSOFigureInPresets, which tpsim fit --check holds to the fit.)
func TestHeadlineFigures(t *testing.T) {
	recs, skips := training(t)
	out := Run(recs, skips, Options{})
	stated := func(name string, got, want, target float64) {
		t.Logf("%s: %.3f%% (stated %.1f%%, target at most %.0f%%)", name, 100*got, 100*want, 100*target)
		if math.Abs(got-want) > 0.0005+1e-12 {
			t.Errorf("%s: %.3f%%, which does not round to the stated %.1f%%: restate it in the README and here, saying why", name, 100*got, 100*want)
		}
		if got > target {
			t.Errorf("%s: %.1f%%, above the target %.0f%%", name, 100*got, 100*target)
		}
	}
	if out.Summary.N != 224 {
		t.Errorf("%d rows compared, the README states 224 (of %d records)", out.Summary.N, len(recs)+len(skips))
	}
	stated("in-sample MAPE", out.Summary.MAPE, 0.055, 0.12)
	want := map[string]float64{"a100": 0.054, "h100-sxm": 0.060, "h100-96g": 0.053}
	for _, g := range out.ByGPU {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("unexpected GPU type %s", g.Name)
			continue
		}
		stated("MAPE on "+g.Name, g.MAPE, w, 0.12)
	}
	if out.Memory.N != 11 {
		t.Errorf("%d rows with measured memory, the README states the 11 torchtitan rows", out.Memory.N)
	}
	stated("measured-memory median APE", out.Memory.MedianAPE, 0.052, 0.10)
}

// DeepSpeed's ZeRO-3 of 2021 did not overlap its parameter gathers with compute (DeepSpeed PR
// #1188): Narayanan et al.'s ZeRO-3 rows (arXiv:2104.04473) are priced with overlap=off and say
// so, while the same record from a later source keeps DeepSpeed ZeRO-3's overlapped default.
func TestDeepSpeed2021ZeRO3NotOverlapped(t *testing.T) {
	recs, _ := training(t)
	n := 0
	for i := range recs {
		r := recs[i]
		if !strings.Contains(r.ID, "zero3") || Stack(&r) != StackDeepSpeed {
			continue
		}
		n++
		if y := SourceYear(&r); y != 2021 {
			t.Fatalf("%s: source year %d, want 2021 (title %q)", r.ID, y, r.Source.Title)
		}
		row, why := Compare(&r, Options{})
		if why != "" {
			t.Fatalf("%s: %s", r.ID, why)
		}
		if !strings.Contains(row.Strategy, ",overlap=off") || !slices.ContainsFunc(row.Assumed, func(a string) bool { return strings.Contains(a, "PR #1188") }) {
			t.Errorf("%s: strategy %s, assumed %q: want overlap=off and the rule named", r.ID, row.Strategy, row.Assumed)
		}
		if !strings.Contains(row.Strategy, ",tensorlists=on") || !slices.ContainsFunc(row.Assumed, func(a string) bool { return strings.Contains(a, "_allgather_params") }) {
			t.Errorf("%s: strategy %s, assumed %q: want tensorlists=on and the rule named", r.ID, row.Strategy, row.Assumed)
		}
		r.Source.Title = strings.ReplaceAll(r.Source.Title, "arXiv:2104.04473", "arXiv:2301.00001")
		later, why := Compare(&r, Options{})
		if why != "" {
			t.Fatalf("%s (2023): %s", r.ID, why)
		}
		if strings.Contains(later.Strategy, ",overlap=off") || strings.Contains(later.Strategy, "tensorlists=on") {
			t.Errorf("%s from a 2023 source: strategy %s, want the overlapped default and flat collectives", r.ID, later.Strategy)
		}
		if later.PredStep >= row.PredStep {
			t.Errorf("%s: overlapped %.1f s per step, not faster than exposed %.1f s", r.ID, later.PredStep, row.PredStep)
		}
	}
	if n != 6 {
		t.Errorf("%d DeepSpeed ZeRO-3 records, want Narayanan et al.'s 6", n)
	}
}
