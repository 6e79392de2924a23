package exec

import (
	"context"
	"reflect"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

func cfgFor(t *testing.T, m *model.Model, s, plan, opt string) Config {
	t.Helper()
	st, err := strategies.Parse(s + ",optimizer=" + opt)
	if err != nil {
		t.Fatal(err)
	}
	if plan != "" {
		if st.Plan, err = strategies.ParsePlan(plan); err != nil {
			t.Fatal(err)
		}
	}
	st = st.Resolve(m)
	st.MBS = st.GBS / st.Mesh.DP
	return Config{Model: m, Strategy: st, Steps: 3, Seed: 1}
}

// llamaTiny is a small Llama block (RMSNorm, SwiGLU: gate and up read one sequence-parallel
// all-gather) with grouped-query attention.
func llamaTiny(t *testing.T) *model.Model {
	t.Helper()
	return llamaShape(t, 2, 4)
}

// llamaShape is llamaTiny's shape with the given depth and batch; gptShape is gpt-tiny's
// (biases, learned positions, LayerNorm, GELU, untied head) at the same small widths.
func llamaShape(t testing.TB, layers, batch int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 32, Layers: layers, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 64, Vocab: 64, Seq: 16,
		Gated: true, RMSNorm: true, Batch: batch}.Build("llama-tiny", "llama")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func gptShape(t testing.TB, layers, batch int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 32, Layers: layers, Heads: 4, KVHeads: 4, HeadDim: 8, FFN: 128, Vocab: 64, Seq: 16,
		Bias: true, Learned: true, Batch: batch}.Build("gpt-small", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// singleDevice trains m on one device with optimizer opt, once per model: refs keeps the runs.
func singleDevice(t *testing.T, refs map[*model.Model]*Result, m *model.Model, opt string) *Result {
	t.Helper()
	if ref, ok := refs[m]; ok {
		return ref
	}
	ref, err := Run(context.Background(), Single(cfgFor(t, m, "dp=1", "", opt)))
	if err != nil {
		t.Fatal(err)
	}
	refs[m] = ref
	return ref
}

func TestMatchesSingleDevice(t *testing.T) {
	mlp, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	gpt, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	llama := llamaTiny(t)
	cases := []struct {
		m          *model.Model
		mesh, plan string
		dp, tp     int64 // bytes per rank per step, -1 = not checked
	}{
		{mlp, "tp=2", "0=rowwise,1=noparallel,2=colwise", 0, 80200},
		{mlp, "tp=2", "0=colwise,2=rowwise", 0, 400},
		{mlp, "dp=2", "", 444040, 0},
		{mlp, "dp=2,tp=2", "0=colwise,2=rowwise", 222040, 200},
		{gpt, "dp=2", "", -1, -1},
		{gpt, "tp=2", "megatron", -1, -1},
		{gpt, "tp=4", "megatron", -1, -1},
		{gpt, "dp=2,tp=2", "megatron", -1, -1},
		// Sequence parallel (Korthikanti et al. 2022 §4.2.2): SequenceParallel norms, the
		// column-parallel Linears' input shard saved and all-gathered again in backward.
		{gpt, "tp=2,sp=on", "megatron", -1, -1},
		{gpt, "tp=4,sp=on", "megatron", -1, -1},
		{gpt, "dp=2,tp=2,sp=on", "megatron", -1, -1},
		{llama, "dp=1", "", -1, -1},
		{llama, "tp=2,sp=on", "megatron", -1, -1},
	}
	for _, opt := range []string{"sgd", "adam"} {
		refs := map[*model.Model]*Result{}
		for _, c := range cases {
			ref := singleDevice(t, refs, c.m, opt)
			got, err := Run(context.Background(), cfgFor(t, c.m, c.mesh, c.plan, opt))
			if err != nil {
				t.Fatalf("%s %s %s: %v", c.m.Name, c.mesh, c.plan, err)
			}
			if m := Compare(got, ref); !(m.Worst <= MatchTolerance) {
				t.Errorf("%s %s %s %s: max relative difference to single device %.3g > %g at %s (losses %v vs %v)", c.m.Name, c.mesh, c.plan, opt, m.Worst, MatchTolerance, m.Where, got.Losses, ref.Losses)
			}
			for _, rr := range got.Ranks {
				if c.dp >= 0 && (rr.CommBytes["dp"] != c.dp || rr.CommBytes["tp"] != c.tp) {
					t.Errorf("%s %s %s rank %d: sent dp %d tp %d bytes per step, want %d and %d", c.m.Name, c.mesh, c.plan, rr.Rank, rr.CommBytes["dp"], rr.CommBytes["tp"], c.dp, c.tp)
				}
			}
		}
	}
}

// attn=flash1 differs from attn=flash only in the GPU speed tpsim prices; exec runs the same
// kernels, so the two train to the same bits.
func TestFlash1RunsAsFlash(t *testing.T) {
	gpt, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	var runs [2]*Result
	for i, attn := range []string{"flash", "flash1"} {
		if runs[i], err = Run(context.Background(), cfgFor(t, gpt, "tp=2,attn="+attn, "megatron", "adam")); err != nil {
			t.Fatalf("attn=%s: %v", attn, err)
		}
	}
	if d := MaxRelDiff(runs[1], runs[0]); d != 0 || !reflect.DeepEqual(runs[1].Losses, runs[0].Losses) {
		t.Errorf("attn=flash1 differs from attn=flash: max relative difference %g, losses %v vs %v", d, runs[1].Losses, runs[0].Losses)
	}
}

// TestFlashAttentionMatchesEager trains under attn=flash, which keeps each attention's
// log-sum-exp instead of its probabilities and recomputes them in backward, and compares it with
// single-device eager training: gpt-tiny, and a Llama block with grouped-query attention.
func TestFlashAttentionMatchesEager(t *testing.T) {
	gpt, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	llama := llamaTiny(t)
	cases := []struct {
		m          *model.Model
		mesh, plan string
	}{
		{gpt, "dp=1", ""},
		{gpt, "dp=2", ""},
		{gpt, "tp=2", "megatron"},
		{gpt, "dp=2,tp=2,sp=on", "megatron"},
		{llama, "dp=1", ""},
		{llama, "tp=2,sp=on", "megatron"},
	}
	// The recomputed probabilities differ from the saved ones by float32 rounding, which the
	// check's floor counts (exec's doc, "The match check"), as eager dp and tp runs of gpt-tiny
	// differ from single-device.
	tol := map[string]float64{"sgd": MatchTolerance, "adam": MatchTolerance}
	for _, opt := range []string{"sgd", "adam"} {
		refs := map[*model.Model]*Result{}
		for _, c := range cases {
			ref := singleDevice(t, refs, c.m, opt)
			got, err := Run(context.Background(), cfgFor(t, c.m, c.mesh+",attn=flash", c.plan, opt))
			if err != nil {
				t.Fatalf("%s %s %s: %v", c.m.Name, c.mesh, opt, err)
			}
			d := MaxRelDiff(got, ref)
			t.Logf("%s %s %s attn=flash: max relative difference to single-device eager %.3g", c.m.Name, c.mesh, opt, d)
			if d > tol[opt] {
				t.Errorf("%s %s %s attn=flash: max relative difference to single-device eager %.3g > %g (losses %v vs %v)", c.m.Name, c.mesh, opt, d, tol[opt], got.Losses, ref.Losses)
			}
			// No s x s probabilities are kept: fewer activation bytes than eager on one rank.
			if c.mesh == "dp=1" {
				if a, e := got.Ranks[0].PeakBytes[CatActivations], ref.Ranks[0].PeakBytes[CatActivations]; a >= e {
					t.Errorf("%s single device attn=flash: peak activations %d bytes, want fewer than eager's %d", c.m.Name, a, e)
				}
			}
		}
	}
}
