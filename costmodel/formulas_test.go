package costmodel

import (
	"fmt"
	"math"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Tests against published formulas. Each cites its source; validate/data/formulas.json
// holds the formulas as the papers print them.

func mustParse(t testing.TB, s string) strategies.Strategy {
	t.Helper()
	st, err := strategies.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustPreset(t testing.TB, name string) *model.Model {
	t.Helper()
	m, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Rajbhandari et al. 2020 (ZeRO) §5, Fig. 1: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per
// parameter; over Nd data-parallel ranks stage 1 (optimizer state partitioned) keeps 4 + 12/Nd,
// stage 2 (and gradients) 2 + 14/Nd, stage 3 (and parameters) 16/Nd. Predict's params + grads +
// optimizer per rank must be that for Llama-2-7B (6,738,415,616 parameters, issue 2's acceptance
// at dp=64: within 0.5% of 16 P / 64), within the rounding of one parameter's bytes per rank
// (partitions are ceil(P/Nd) elements).
func TestZeROMemoryPerParameter(t *testing.T) {
	m := mustPreset(t, "llama2-7b")
	P := float64(m.Params())
	if P != 6738415616 {
		t.Fatalf("llama2-7b has %.0f parameters, want 6,738,415,616", P)
	}
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		zero  int
		bytes func(nd float64) float64 // per parameter
	}{
		{0, func(nd float64) float64 { return 16 }},
		{1, func(nd float64) float64 { return 4 + 12/nd }},
		{2, func(nd float64) float64 { return 2 + 14/nd }},
		{3, func(nd float64) float64 { return 16 / nd }},
	} {
		nd := 64
		st := mustParse(t, fmt.Sprintf("dp=%d,zero=%d,gbs=%d", nd, c.zero, nd))
		est, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(est.Memory.Params + est.Memory.Grads + est.Memory.Optimizer)
		want := c.bytes(float64(nd)) * P
		if math.Abs(got-want) > 16 {
			t.Errorf("zero=%d dp=%d: params+grads+optimizer %.0f bytes per rank, Rajbhandari et al. give %.0f", c.zero, nd, got, want)
		}
		if c.zero == 3 && math.Abs(got-16*P/64)/(16*P/64) > 0.005 {
			t.Errorf("zero=3 dp=64: %.0f bytes, not within 0.5%% of 16 x 6,738,415,616 / 64", got)
		}
	}
	// The Program agrees (Lower + Predict), on the acceptance case.
	p, err := program.Lower(m, mustParse(t, "dp=64,zero=3,gbs=64"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Predict(p, hw)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(r.Memory.Params + r.Memory.Grads + r.Memory.Optimizer); math.Abs(got-16*P/64) > 16 {
		t.Errorf("Predict zero=3 dp=64: %.0f bytes, want 16 P / 64 = %.0f", got, 16*P/64)
	}
}

// Narayanan et al. 2021 Eq. 3 without the recompute pass (formulas.json
// korthikanti2022_flops.model_flops_per_iteration): a GPT with a 4h MLP does
// 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) model FLOPs per iteration, counting each matrix product
// once forward and twice backward and the full s x s attention. program.ModelFLOPs, and Estimate's and
// Predict's flops.model, must be exactly that (to float rounding).
func TestModelFLOPsNarayanan(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		name string
		st   string
	}{
		{"gpt3-175b", "dp=16,tp=8,pp=12,gbs=1536,recompute=full"},
		{"gpt3-1.3b", "dp=8,gbs=512"},
		{"megatron-1t", "dp=6,tp=8,pp=64,gbs=3072"},
	} {
		m := mustPreset(t, c.name)
		tc := m.Transformer
		st := mustParse(t, c.st)
		B, L, s, h, V := float64(st.GBS), float64(tc.Layers), float64(tc.Seq), float64(tc.Hidden), float64(tc.Vocab)
		want := 72 * B * L * s * h * h * (1 + s/(6*h) + V/(12*h*L))
		if got := float64(program.ModelFLOPs(m, st.GBS, tc.Seq)); !near(got, want, 1e-12) {
			t.Errorf("%s: ModelFLOPs = %.6g, Narayanan et al. Eq. 3 gives %.6g", c.name, got, want)
		}
		est, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(est.FLOPs.Model); !near(got, want, 1e-12) {
			t.Errorf("%s %s: Estimate flops.model = %.6g, want %.6g", c.name, c.st, got, want)
		}
	}
}

// Narayanan et al. 2021 Eq. 3 (formulas.json narayanan2021.flops_per_iteration_with_full_recompute):
// with full recompute a GPT with tied embeddings does F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
// hardware FLOPs per iteration: every layer's matrix products forward, again in recompute, and
// twice backward (4 x (24 B s h^2 + 4 B s^2 h)), and the logits once forward and twice backward
// (6 B s h V, not recomputed). The Program counts exactly these (embedding lookups, norms and
// elementwise ops are not matrix products, and biases are left out on both sides; tying the output
// head to the embedding changes parameters, not FLOPs), so Predict's flops.hardware equals F to
// float rounding: no deviation.
func TestHardwareFLOPsFullRecomputeNarayanan(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		model string
		st    string
		batch int
	}{
		// gpt3-175b with the paper's batch would need a Program of 96 layers per stage; its
		// FLOPs per layer are those of the smaller GPT-3s, checked through Lower here, and through
		// Estimate (which equals Predict) for 175B.
		{"gpt3-1.3b", "dp=2,tp=2,pp=2,gbs=8,recompute=full", 8},
		{"gpt-tiny", "tp=2,gbs=8,mbs=2,recompute=full,sp=on", 8},
	} {
		m := mustPreset(t, c.model)
		tc := m.Transformer
		st := mustParse(t, c.st)
		r := predictLowered(t, m, st, hw)
		B, l, s, h, V := float64(c.batch), float64(tc.Layers), float64(tc.Seq), float64(tc.Hidden), float64(tc.Vocab)
		want := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
		if got := float64(r.FLOPs.Hardware); !near(got, want, 1e-12) {
			t.Errorf("%s %s: Predict flops.hardware = %.9g, Narayanan et al. Eq. 3 gives %.9g (ratio %.6f)", c.model, c.st, got, want, got/want)
		}
	}
	m := mustPreset(t, "gpt3-175b")
	st := mustParse(t, "dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full")
	r, err := Estimate(m, st, hw)
	if err != nil {
		t.Fatal(err)
	}
	tc := m.Transformer
	B, l, s, h, V := 1536.0, float64(tc.Layers), float64(tc.Seq), float64(tc.Hidden), float64(tc.Vocab)
	want := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
	if got := float64(r.FLOPs.Hardware); !near(got, want, 1e-12) {
		t.Errorf("gpt3-175b: flops.hardware = %.9g, Narayanan et al. Eq. 3 gives %.9g", got, want)
	}
}

// docs/architecture.md's table of bytes sent per rank, n bytes of the full tensor over p ranks:
// all-reduce 2(p-1)/p n, reduce-scatter, all-gather and all-to-all (p-1)/p n. In CollectiveTime the
// bandwidth term of a group inside one node is exactly those bytes over the link's achieved
// bandwidth (Thakur, Rabenseifner and Gropp 2005, the ring algorithms). CollectiveTime is affine
// only within one NCCL protocol, so the slope is taken between n and 2n, both large enough for
// the Simple protocol.
func TestCollectiveBytesTable(t *testing.T) {
	hw := loadHW(t, "h100-sxm")
	l := hw.Levels[0]
	rate := float64(l.Bandwidth) * l.Efficiency
	n := units.Bytes(1 << 30)
	for _, p := range []int{2, 4, 8} {
		for _, c := range []struct {
			kind program.OpKind
			sent float64
		}{
			{program.OpAllReduce, 2 * float64(p-1) / float64(p) * float64(n)},
			{program.OpReduceScatter, float64(p-1) / float64(p) * float64(n)},
			{program.OpAllGather, float64(p-1) / float64(p) * float64(n)},
			{program.OpAllToAll, float64(p-1) / float64(p) * float64(n)},
		} {
			bw := float64(CollectiveTime(hw, c.kind, p, 1, 2*n) - CollectiveTime(hw, c.kind, p, 1, n))
			if got := bw * rate; !near(got, c.sent, 1e-9) {
				t.Errorf("%s over %d ranks of %v: moves %.6g bytes per rank, docs/architecture.md says %.6g", c.kind, p, n, got, c.sent)
			}
		}
	}
}

// The same table through the Program's bytes sent (Result.CommBytes, per rank per step):
// Narayanan et al. 2021 §3.3 (formulas.json tp_comm_per_layer_per_microbatch): a Megatron layer
// all-reduces b s h twice forward and twice backward, 8 b s h (t-1)/t elements; sequence
// parallelism trades each all-reduce for a reduce-scatter and an all-gather of the same bytes
// (Korthikanti et al. 2022 §4.2.2), and the backward all-gathers the [b, s/t, h] input shard of
// the qkv and of the first MLP Linears again for their weight gradients (§4.2.2: the shard is
// saved, not the gathered input), 2 b s h (t-1)/t more. Data parallelism all-reduces every gradient once:
// 2(p-1)/p of the gradient bytes, or under ZeRO-1/2 reduce-scatters them and all-gathers the
// updated parameters, (p-1)/p each (Rajbhandari et al. 2020 §7: the same volume as all-reduce).
func TestCommBytesPerLayer(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	build := func(layers int) *model.Model {
		m, err := model.Transformer{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256,
			Seq: 32, Bias: true, Learned: true, Batch: 8}.Build("gpt", "gpt")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b, s, h := 2, 32, 64
	for _, tp := range []int{2, 4} {
		for _, sp := range []string{"off", "on"} {
			st := mustParse(t, fmt.Sprintf("tp=%d,sp=%s,mbs=%d,gbs=8", tp, sp, b))
			var perLayer [2]units.Bytes
			for i, layers := range []int{1, 2} {
				r, err := Estimate(build(layers), st, hw)
				if err != nil {
					t.Fatal(err)
				}
				perLayer[i] = r.CommBytes[strategies.DimTP] / units.Bytes(st.GBS/b)
			}
			want := 8 * float64(b*s*h) * float64(tp-1) / float64(tp) * 2 // bf16 bytes
			if sp == "on" {
				// The backward's two re-gathers of the column-parallel Linears' input.
				want += 2 * float64(b*s*h) * float64(tp-1) / float64(tp) * 2
				// Once per step, not per microbatch: the all-reduce of the gradients of the
				// parameters that see s/t tokens, the two norms' weights and biases and the two
				// row-parallel biases, 6h (Korthikanti et al. 2022 §4.2.2).
				want += 2 * float64(tp-1) / float64(tp) * 6 * float64(h) * 2 / float64(st.GBS/b)
			}
			if got := float64(perLayer[1] - perLayer[0]); !near(got, want, 1e-12) {
				t.Errorf("tp=%d sp=%s: a layer sends %.0f bytes per microbatch, Narayanan et al. give %.0f", tp, sp, got, want)
			}
		}
	}
	m := build(2)
	P := float64(m.Params())
	for _, c := range []struct {
		zero int
		want float64
	}{
		{0, 2 * 3.0 / 4 * 2 * P},   // all-reduce of 2-byte gradients
		{1, 3.0/4*2*P + 3.0/4*2*P}, // reduce-scatter of gradients, all-gather of parameters
		{2, 3.0/4*2*P + 3.0/4*2*P}, // the same
		{3, 3 * 3.0 / 4 * 2 * P},   // ZeRO-3, one microbatch: gather forward and backward, reduce-scatter (§5.3: 1.5x)
	} {
		st := mustParse(t, fmt.Sprintf("dp=4,zero=%d,gbs=8,mbs=2", c.zero))
		r, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(r.CommBytes[strategies.DimDP]); !near(got, c.want, 1e-12) {
			t.Errorf("dp=4 zero=%d: %.0f bytes sent per rank per step, want %.0f", c.zero, got, c.want)
		}
	}
}

// KorthikantiActivationBytes against values computed by hand from Korthikanti et al. 2022
// Table 2 for GPT-3 175B (s = 2048, b = 1, h = 12288, a = 96, so 5as/h = 80 and
// sbh = 25,165,824), t = 8.
func TestKorthikantiActivationBytes(t *testing.T) {
	const sbh = 2048 * 12288
	for _, c := range []struct {
		t         int
		sp        bool
		recompute strategies.Recompute
		want      float64
	}{
		{1, false, "none", 114 * sbh},      // 34 + 80
		{8, false, "none", 23 * sbh},       // 10 + 24/8 + 80/8
		{8, true, "none", 114.0 / 8 * sbh}, // (34 + 80)/8
		{8, false, "selective", 13 * sbh},  // 10 + 24/8
		{8, true, "selective", 4.25 * sbh}, // 34/8
		{8, false, "full", 2 * sbh},        // 2
		{1, false, "selective", 34 * sbh},  // 10 + 24
		{1, true, "none", 114 * sbh},       // sequence parallel on one rank changes nothing
		{4, false, "none", (10 + 6 + 20) * sbh},
	} {
		got := KorthikantiActivationBytes(2048, 1, 12288, 96, c.t, c.sp, c.recompute)
		if got != c.want {
			t.Errorf("t=%d sp=%v %s: %.0f bytes, want %.0f", c.t, c.sp, c.recompute, got, c.want)
		}
	}
	// formulas.json korthikanti2022_activation_memory_bytes_per_layer.examples: selective recompute
	// saves 70% of GPT-3's activations and 65% of MT-NLG's (5as/h = 64).
	for _, c := range []struct {
		s, h, a int
		saved   float64
	}{{2048, 12288, 96, 0.70}, {2048, 20480, 128, 0.65}} {
		none := KorthikantiActivationBytes(c.s, 1, c.h, c.a, 8, true, "none")
		sel := KorthikantiActivationBytes(c.s, 1, c.h, c.a, 8, true, "selective")
		if got := 1 - sel/none; math.Abs(got-c.saved) > 0.005 {
			t.Errorf("h=%d: selective recompute saves %.3f, Korthikanti et al. say %.2f", c.h, got, c.saved)
		}
	}
}

// The Program's activations per layer against Korthikanti et al. 2022 Table 2 (16-bit
// activations, 1-byte dropout masks). A layer's activations are the difference of
// StageActivations between models of two and one layers; the Program also keeps each norm's fp32
// mean and rstd (2 x 4 bytes per token, two norms), which the paper leaves out, so they are
// subtracted. Under sequence parallelism the Program saves the [b, s/t, h] shard of the qkv and
// first MLP Linears' input and all-gathers it again in backward, as Korthikanti et al. §4.2.2 do,
// so tensor + sequence parallel is sbh/t (34 + 5as/h) and with selective recompute 34 sbh/t
// exactly. Where the Program differs from the paper the expected value says how:
//   - sequence parallel with full recompute: the Program saves each layer's input as it lies,
//     sequence-sharded: 2sbh/t, where Table 2 lists 2sbh (for tensor parallelism alone).
func TestProgramActivationsKorthikanti(t *testing.T) {
	const s, b, h, a = 32, 2, 64, 4
	build := func(layers int) *model.Model {
		m, err := model.Transformer{Hidden: h, Layers: layers, Heads: a, KVHeads: a, HeadDim: h / a, FFN: 4 * h, Vocab: 256,
			Seq: s, Bias: true, Learned: true, Batch: 8, Dropout: 0.1}.Build("gpt", "gpt")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	probe, err := program.Lower(build(1), mustParse(t, "dp=1"))
	if err != nil {
		t.Fatal(err)
	}
	hasDropout := false
	for _, op := range probe.Stages[0].Forward {
		hasDropout = hasDropout || op.Kind == program.OpKind("dropout")
	}
	if !hasDropout {
		t.Fatal("the Program has no dropout ops, so it keeps no dropout masks and cannot match Korthikanti et al.'s 34 sbh: a model with dropout 0.1 must lower to dropout ops")
	}
	for _, tp := range []int{1, 2, 4} {
		for _, sp := range []bool{false, true} {
			if sp && tp == 1 {
				continue
			}
			for _, rc := range []string{"none", "selective", "full", "flash"} {
				// FlashAttention keeps what selective recompute keeps (no s x s values: Dao 2023
				// §3.1) plus its fp32 log-sum-exp per query row and local head.
				attn, krc := "eager", rc
				if rc == "flash" {
					attn, krc = "flash", "selective"
				}
				st := mustParse(t, fmt.Sprintf("tp=%d,sp=%v,mbs=%d,gbs=8,recompute=%s,attn=%s", tp, map[bool]string{true: "on", false: "off"}[sp], b, krc, attn))
				var act [2]units.Bytes
				for i, layers := range []int{1, 2} {
					p, err := program.Lower(build(layers), st)
					if err != nil {
						t.Fatal(err)
					}
					act[i] = StageActivations(p.Stages[0])
				}
				got := float64(act[1] - act[0])
				rows := s * b
				if sp {
					rows /= tp
				}
				if rc != "full" {
					got -= 2 * float64(rows) * 2 * 4 // two norms' fp32 mean and rstd
				}
				want := KorthikantiActivationBytes(s, b, h, a, tp, sp, strategies.Recompute(krc))
				if rc == "flash" {
					want += float64(b * a / tp * s * 4)
				}
				sbh := float64(s * b * h)
				if sp && rc == "full" {
					want = 2 * sbh / float64(tp)
				}
				if got != want {
					t.Errorf("tp=%d sp=%v recompute=%s: the Program keeps %.0f bytes per layer, Korthikanti et al. (with the deviations above) %.0f", tp, sp, rc, got, want)
				}
			}
		}
	}
}

// With the interleaved schedule a pipeline rank runs several model chunks, and it sends what all
// of them send (Narayanan et al. 2021 §2.2.2: interleaving multiplies the pipeline communication
// by the number of chunks).
func TestInterleavedCommBytesPerRank(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("g", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	st, err := strategies.Parse("pp=2,tp=2,vpp=2,schedule=interleaved,gbs=8")
	if err != nil {
		t.Fatal(err)
	}
	p, err := program.Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	hw, err := hardware.Load("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Predict(p, hw)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []strategies.Dim{strategies.DimPP, strategies.DimTP} {
		var want units.Bytes
		for rank := 0; rank < st.Mesh.PP; rank++ {
			var sum units.Bytes
			for _, s := range p.Stages {
				if s.Rank == rank {
					sum += p.CommBytes(s)[d]
				}
			}
			want = max(want, sum)
		}
		if r.CommBytes[d] != want {
			t.Errorf("%s: Predict says %v bytes per rank, the busiest rank's chunks send %v", d, float64(r.CommBytes[d]), float64(want))
		}
	}
}

// FlashAttention-2's FLOPs (Dao 2023 §4.1): the causal forward is half of 4 s^2 d a per sequence,
// the backward 2.5 times the forward. Eager attention runs the full products forward (4bs^2h/t)
// and twice that backward (Narayanan et al. 2021 §5.1). So per layer, microbatch and rank the
// hardware FLOPs differ by 12 - 7 = 5 b s^2 h / t.
func TestFlashAttentionFLOPs(t *testing.T) {
	const s, b, h, a, layers = 64, 2, 64, 4, 3
	m, err := model.Transformer{Hidden: h, Layers: layers, Heads: a, KVHeads: a, HeadDim: h / a, FFN: 4 * h, Vocab: 256,
		Seq: s, Bias: true, Learned: true, Batch: 8}.Build("gpt", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	hw := loadHW(t, "a100-80g")
	for _, tp := range []int{1, 2} {
		var hwFLOPs [2]float64
		for i, attn := range []string{"eager", "flash"} {
			st := mustParse(t, fmt.Sprintf("tp=%d,mbs=%d,gbs=8,attn=%s", tp, b, attn))
			r := predictLowered(t, m, st, hw)
			hwFLOPs[i] = float64(r.FLOPs.Hardware)
		}
		micro, ranks := 8/b, tp
		want := 5.0 * b * s * s * h / float64(tp) * layers * float64(micro*ranks)
		if got := hwFLOPs[0] - hwFLOPs[1]; got != want {
			t.Errorf("tp=%d: eager - flash hardware FLOPs = %.0f, want 5 b s^2 h/t x layers x microbatches x ranks = %.0f", tp, got, want)
		}
	}
}

// Under mixed precision the cross-entropy runs in fp32 (PyTorch autocast's float32 ops; Megatron-LM's
// output.float()) and its backward reads the fp32 log-probabilities: 4 bytes saved per logit, not the
// 2 of a bf16 logit. Growing the vocabulary by dV adds tokens x dV x 4 saved bytes and nothing else.
func TestMixedPrecisionLossKeepsFP32LogProbs(t *testing.T) {
	const s, b, h, a = 32, 2, 64, 4
	var act [2]units.Bytes
	for i, vocab := range []int{256, 512} {
		m, err := model.Transformer{Hidden: h, Layers: 2, Heads: a, KVHeads: a, HeadDim: h / a, FFN: 4 * h, Vocab: vocab,
			Seq: s, Bias: true, Learned: true, Batch: 8}.Build("gpt", "gpt")
		if err != nil {
			t.Fatal(err)
		}
		p, err := program.Lower(m, mustParse(t, fmt.Sprintf("mbs=%d,gbs=8", b)))
		if err != nil {
			t.Fatal(err)
		}
		act[i] = StageActivations(p.Stages[0])
	}
	if got, want := act[1]-act[0], units.Bytes(s*b*256*4); got != want {
		t.Errorf("256 more vocabulary entries keep %d more bytes, want tokens x 256 x 4 = %d", int64(got), int64(want))
	}
}

// With the output head split over the vocabulary (the Megatron plan at tp > 1) the cross-entropy is
// vocabulary-parallel (Megatron-LM's vocab_parallel_cross_entropy, PyTorch's loss_parallel): a rank
// keeps only its shard's fp32 copy, tokens x V/t x 4 bytes, and the tensor-parallel traffic does not
// grow with the vocabulary (no logits are gathered; only three fp32 numbers per token are).
func TestVocabParallelLoss(t *testing.T) {
	const s, b, h, a, tp = 32, 2, 64, 4, 4
	var act, tpBytes [2]units.Bytes
	hw := loadHW(t, "a100-80g")
	for i, vocab := range []int{256, 512} {
		m, err := model.Transformer{Hidden: h, Layers: 2, Heads: a, KVHeads: a, HeadDim: h / a, FFN: 4 * h, Vocab: vocab,
			Seq: s, Bias: true, Learned: true, Batch: 8}.Build("gpt", "gpt")
		if err != nil {
			t.Fatal(err)
		}
		st := mustParse(t, fmt.Sprintf("tp=%d,mbs=%d,gbs=%d", tp, b, b))
		p, err := program.Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		act[i] = StageActivations(p.Stages[0])
		tpBytes[i] = predictLowered(t, m, st, hw).CommBytes["tp"]
	}
	if got, want := act[1]-act[0], units.Bytes(s*b*256/tp*4); got != want {
		t.Errorf("256 more vocabulary entries keep %d more bytes per rank, want tokens x 256/tp x 4 = %d", int64(got), int64(want))
	}
	if tpBytes[0] != tpBytes[1] {
		t.Errorf("tensor-parallel bytes grow with the vocabulary: %d -> %d", int64(tpBytes[0]), int64(tpBytes[1]))
	}
}

// ZeRO-3 gathers each unit's parameters (a transformer layer, as FSDP wraps each block) into
// buffers that live while the unit runs, with the next Prefetch units' prefetched (FSDP's
// backward prefetch and limit_all_gathers): at prefetch 1 two layers' gathered parameters, beside
// the activations; at prefetch 2 three; one without overlap (each gather blocks: nothing runs
// ahead). A Llama-2-7B layer
// is 4 x 4,096^2 attention weights, 3 x 4,096 x 11,008 MLP weights and 2 x 4,096 norm weights,
// 202,383,360 bf16 values (404,766,720 bytes) per rank, whatever the dp degree.
func TestZeRO3GatherBuffers(t *testing.T) {
	m := mustPreset(t, "llama2-7b")
	hw := loadHW(t, "a100-80g")
	const layer = 2 * (4*4096*4096 + 3*4096*11008 + 2*4096)
	for _, c := range []struct {
		knobs  string
		layers int
	}{{"", 2}, {",prefetch=2", 3}, {",overlap=off", 1}} {
		r, err := Estimate(m, mustParse(t, "dp=8,zero=3,gbs=8"+c.knobs), hw)
		if err != nil {
			t.Fatal(err)
		}
		if want := units.Bytes(c.layers * layer); r.Memory.Comm != want {
			t.Errorf("dp=8 zero=3%s: comm buffers %d bytes, want %d layers' gathered parameters, %d", c.knobs, int64(r.Memory.Comm), c.layers, int64(want))
		}
	}
	for _, dp := range []int{8, 64} {
		r, err := Estimate(m, mustParse(t, fmt.Sprintf("dp=%d,zero=3,gbs=%d", dp, dp)), hw)
		if err != nil {
			t.Fatal(err)
		}
		mem := r.Memory
		// The buffers live during forward and backward, beside the activations.
		if floor := mem.Params + mem.Grads + mem.Optimizer + mem.Activations + mem.Comm; mem.Peak < floor {
			t.Errorf("dp=%d zero=3: peak %d below state + activations + gather buffers %d", dp, int64(mem.Peak), int64(floor))
		}
	}
	r, err := Estimate(m, mustParse(t, "dp=8,zero=1,gbs=8"), hw)
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory.Comm >= units.Bytes(2*32000*4096*2) {
		t.Errorf("zero=1 has no parameter gather buffers, but comm is %d bytes", int64(r.Memory.Comm))
	}
}
