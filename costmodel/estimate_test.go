package costmodel

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Small models of every layer type Estimate covers.
func testModels(t testing.TB) map[string]*model.Model {
	t.Helper()
	build := func(c model.Transformer, name, family string) *model.Model {
		m, err := c.Build(name, family)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// GPT-like: learned positions, biases, LayerNorm, GELU MLP of 4h.
	gpt := model.Transformer{Hidden: 64, Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 16}
	tied := gpt
	tied.Tied = true
	// Llama-like: RMSNorm, SwiGLU, grouped-query attention, rotary positions, no biases.
	llama := model.Transformer{Hidden: 64, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32,
		Gated: true, RMSNorm: true, Batch: 16}
	// Qwen2-like: a Llama with a qkv bias, tied, and grouped-query attention that tp=4 divides.
	qwen := llama
	qwen.Heads, qwen.KVHeads, qwen.HeadDim = 8, 4, 8
	qwen.QKVBias, qwen.Tied = true, true
	// With dropout (Megatron-LM's hidden and attention dropout).
	gptDrop := gpt
	gptDrop.Dropout = 0.1
	llamaDrop := llama
	llamaDrop.Dropout = 0.1
	// Wide enough that one layer's gradients fill several 1 MiB buckets, and that one tensor (fc1,
	// 2 MiB) fills a bucket alone.
	mid := model.Transformer{Hidden: 512, Layers: 8, Heads: 8, KVHeads: 8, HeadDim: 64, FFN: 2048, Vocab: 512, Seq: 64,
		Bias: true, Learned: true, Batch: 16}
	mlp3, err := model.MLP("mlp3", model.KindReLU, 16, 16, 32, 64, 8)
	if err != nil {
		t.Fatal(err)
	}
	mlp4, err := model.MLP("mlp4", model.KindGELU, 16, 24, 48, 32, 64, 12)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*model.Model{
		"gpt": build(gpt, "gpt-test", "gpt"), "gpt-tied": build(tied, "gpt-tied", "gpt"),
		"llama": build(llama, "llama-test", "llama"), "qwen": build(qwen, "qwen-test", "llama"),
		"gpt-dropout": build(gptDrop, "gpt-dropout", "gpt"), "llama-dropout": build(llamaDrop, "llama-dropout", "llama"),
		"gpt-mid": build(mid, "gpt-mid", "gpt"), "mlp3": mlp3, "mlp4": mlp4, "seed-mlp": seed,
	}
}

// Strategy families for transformers (8 layers, batch 16).
var transformerStrategies = []string{
	"dp=1",
	"dp=2",
	"dp=4,overlap=off",
	"tp=2",
	"tp=4,sp=on",
	"tp=2,sp=on",
	"tp=2,sp=on,recompute=selective",
	"dp=2,tp=2",
	"dp=2,tp=2,sp=on,mbs=2",
	"pp=2,gbs=16",
	"pp=4,gbs=16,schedule=gpipe",
	"pp=4,gbs=16",
	"pp=2,vpp=2,schedule=interleaved,gbs=16",
	"pp=4,vpp=2,schedule=interleaved,gbs=16,tp=2,sp=on",
	"pp=2,dp=2,tp=2,sp=on,recompute=full,mbs=2",
	"cp=2",
	"cp=2,tp=2,sp=on",
	"cp=2,dp=2,zero=1",
	"dp=2,zero=1",
	"dp=4,zero=2",
	"dp=4,zero=3",
	"dp=2,zero=3,overlap=off,recompute=full",
	"dp=2,tp=2,zero=3,sp=on",
	"pp=2,dp=2,zero=1,gbs=16",
	"tp=2,recompute=selective",
	"tp=2,recompute=full",
	"tp=2,sp=on,recompute=full",
	"recompute=full",
	"cp=2,tp=2,recompute=full,dp=2,zero=3",
	"precision=fp32",
	// FlashAttention under every recompute mode, with sequence and context parallel and ZeRO-3.
	"attn=flash",
	"dp=2,tp=2,attn=flash,recompute=selective",
	"tp=2,sp=on,attn=flash,recompute=full",
	"cp=2,tp=2,sp=on,attn=flash",
	"pp=2,dp=2,zero=1,attn=flash,gbs=16",
	"dp=2,zero=3,attn=flash,recompute=full",
	// Its first generation: the same Program, another price.
	"dp=2,tp=2,sp=on,attn=flash1",
	"pp=2,dp=2,zero=3,attn=flash1,recompute=full,gbs=16",
	"precision=fp32,optimizer=sgd,dp=2,tp=2",
	"optimizer=sgd,dp=2,zero=1",
	"dp=2,bucket_mb=1",
	"dp=2,tp=2,bucket_mb=1,zero=2",
	"pp=2,dp=2,bucket_mb=1,gbs=16",
	"seq=16,tp=2,sp=on",
	"mbs=4,dp=2,tp=2",
	// Sequence parallel with the backward's re-gathers, in every position they meet: a pipeline
	// (middle stages without the head), ZeRO-3 gathers before the Linears, and full recompute
	// (whose replayed gathers stand for the re-gathers but for the head's).
	"pp=2,tp=2,sp=on,gbs=16",
	"pp=4,tp=2,sp=on,recompute=selective,gbs=16",
	"dp=2,tp=2,sp=on,zero=3,recompute=selective",
	"dp=2,tp=2,sp=on,zero=3,recompute=full",
	"tp=4,sp=on,recompute=full",
	"cp=2,tp=2,sp=on,recompute=selective,mbs=2",
	// Uneven pipeline stages (program.StageCounts: 8 layers as 2, 3, 3; and 1, 1, 2, 2, 1, 1 over
	// the 6 model chunks of pp=2, vpp=3), with the tied embedding's all-reduce and DDP buckets.
	"pp=3,gbs=15",
	"pp=3,dp=2,tp=2,sp=on,gbs=16,recompute=selective",
	"pp=2,vpp=3,schedule=interleaved,gbs=16",
	"pp=5,gbs=10,schedule=gpipe",
	"pp=3,dp=2,gbs=16,bucket_mb=1,overlap=off",
}

var mlpStrategies = []string{
	"dp=1",
	"dp=2",
	"tp=2",
	"dp=2,tp=2",
	"dp=4,zero=1",
	"dp=2,zero=2",
	"dp=2,zero=3",
	"dp=2,tp=2,zero=3,overlap=off",
	"precision=fp32,optimizer=sgd",
	"precision=fp32,optimizer=sgd,tp=4,dp=2",
	"tp=2,mbs=2,dp=2,bucket_mb=1",
}

func near(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// equalResults checks that got (Estimate) equals want (Predict): memory, integers and strings
// exactly, FLOPs and bytes sent to 1e-12, times and what derives from them to rel (the closed form
// adds the same terms in another order, and prices collectives as a + b n).
func equalResults(t *testing.T, name string, got, want *Result, rel float64) {
	t.Helper()
	type pair struct {
		field     string
		got, want float64
	}
	// Memory is whole bytes: exactly.
	if got.Memory != want.Memory {
		t.Errorf("%s: memory %+v, Predict says %+v", name, got.Memory, want.Memory)
	}
	// FLOPs and bytes are sums of whole numbers that round only above 2^53.
	sums := []pair{
		{"flops.model", float64(got.FLOPs.Model), float64(want.FLOPs.Model)},
		{"flops.hardware", float64(got.FLOPs.Hardware), float64(want.FLOPs.Hardware)},
	}
	for _, d := range strategies.DimOrder {
		sums = append(sums, pair{"comm_bytes." + string(d), float64(got.CommBytes[d]), float64(want.CommBytes[d])})
	}
	for _, p := range sums {
		if !near(p.got, p.want, 1e-12) {
			t.Errorf("%s: %s = %.17g, Predict says %.17g (rel %.3g)", name, p.field, p.got, p.want, math.Abs(p.got-p.want)/math.Abs(p.want))
		}
	}
	ps := []pair{
		{"time.step", float64(got.Time.Step), float64(want.Time.Step)},
		{"time.compute", float64(got.Time.Compute), float64(want.Time.Compute)},
		{"time.comm_exposed", float64(got.Time.CommExposed), float64(want.Time.CommExposed)},
		{"time.bubble", float64(got.Time.Bubble), float64(want.Time.Bubble)},
		{"time.optimizer", float64(got.Time.Optimizer), float64(want.Time.Optimizer)},
		{"mfu", got.MFU, want.MFU},
		{"hfu", got.HFU, want.HFU},
		{"model_tflops_per_gpu", got.ModelTFLOPsPerGPU, want.ModelTFLOPsPerGPU},
		{"hardware_tflops_per_gpu", got.HardwareTFLOPsPerGPU, want.HardwareTFLOPsPerGPU},
		{"tokens_per_s", got.TokensPerS, want.TokensPerS},
	}
	for _, d := range strategies.DimOrder {
		ps = append(ps, pair{"comm_time_s." + string(d), float64(got.CommTime[d]), float64(want.CommTime[d])})
	}
	for _, p := range ps {
		if !near(p.got, p.want, rel) {
			t.Errorf("%s: %s = %.17g, Predict says %.17g (rel %.3g)", name, p.field, p.got, p.want, math.Abs(p.got-p.want)/math.Abs(p.want))
		}
	}
	if got.Devices != want.Devices || got.Feasible != want.Feasible || got.Reason != want.Reason ||
		got.Model != want.Model || got.Hardware != want.Hardware || got.Strategy != want.Strategy || got.Plan != want.Plan {
		t.Errorf("%s: header %v %v %q %q %q %q %q, Predict says %v %v %q %q %q %q %q", name,
			got.Devices, got.Feasible, got.Reason, got.Model, got.Hardware, got.Strategy, got.Plan,
			want.Devices, want.Feasible, want.Reason, want.Model, want.Hardware, want.Strategy, want.Plan)
	}
	if strings.Join(got.Assumptions, "\n") != strings.Join(want.Assumptions, "\n") {
		t.Errorf("%s: assumptions\n%q\nPredict says\n%q", name, got.Assumptions, want.Assumptions)
	}
}

func predictLowered(t testing.TB, m *model.Model, st strategies.Strategy, hw *hardware.Hardware) *Result {
	t.Helper()
	p, err := program.Lower(m, st)
	if err != nil {
		t.Fatalf("Lower: %v", err)
	}
	r, err := Predict(p, hw)
	if err != nil {
		t.Fatalf("Predict: %v", err)
	}
	return r
}

func loadHW(t testing.TB, name string) *hardware.Hardware {
	t.Helper()
	hw, err := hardware.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// TestEstimateEqualsPredict keeps the closed form equal to the Program-level totals (docs/architecture.md:
// "tests keep it equal to the Program-level totals for every strategy family"). Sums of floats are
// compared to 1e-9 relative: the closed form multiplies where the Program adds layer by layer.
func TestEstimateEqualsPredict(t *testing.T) {
	models := testModels(t)
	cases := []struct {
		models     []string
		strategies []string
	}{
		{[]string{"gpt", "gpt-tied", "llama", "qwen", "gpt-dropout", "llama-dropout"}, transformerStrategies},
		{[]string{"gpt-mid"}, []string{"dp=2,bucket_mb=1", "dp=4,tp=2,bucket_mb=1,zero=1", "pp=2,dp=2,bucket_mb=1,gbs=16",
			"dp=2,pp=4,gbs=16,bucket_mb=2", "dp=2,bucket_mb=3", "dp=2,tp=4,sp=on,bucket_mb=1,zero=2"}},
		{[]string{"mlp3", "mlp4", "seed-mlp"}, mlpStrategies},
	}
	checked := 0
	defer func() { t.Logf("%d model x strategy x hardware combinations equal", checked) }()
	// A host-like profile: ranks share 2 cores (measured slowdown) and every op pays a fixed time.
	shared := *loadHW(t, "a100-80g")
	shared.Name, shared.Cores, shared.Slowdown = "shared", 2, []float64{1, 1.7, 2.9}
	shared.Efficiency.OpOverhead = 4e-6
	for _, hwName := range []string{"a100-80g", "h100-sxm", "shared"} {
		hw := &shared
		if hwName != "shared" {
			hw = loadHW(t, hwName)
		}
		for _, c := range cases {
			for _, mn := range c.models {
				m := models[mn]
				for _, s := range c.strategies {
					st, err := strategies.Parse(s)
					if err != nil {
						t.Fatal(err)
					}
					name := hwName + " " + mn + " " + s
					got, err := Estimate(m, st, hw)
					p, lerr := program.Lower(m, st)
					if lerr != nil {
						// A strategy the model does not admit: the same error, word for word.
						if err == nil || err.Error() != lerr.Error() {
							t.Errorf("%s: Estimate error %v, Lower says %v", name, err, lerr)
						}
						continue
					}
					if ferr := CheckFlash(st, hw); ferr != nil {
						// A kernel the hardware has no figure for: both refuse it alike.
						if _, perr := Predict(p, hw); err == nil || perr == nil || err.Error() != ferr.Error() || perr.Error() != ferr.Error() {
							t.Errorf("%s: Estimate error %v, Predict error %v, want %v", name, err, perr, ferr)
						}
						continue
					}
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					want, err := Predict(p, hw)
					if err != nil {
						t.Fatal(err)
					}
					checked++
					equalResults(t, name, got, want, 1e-9)
				}
			}
		}
	}
}

// TestEstimateEqualsPredictPresets checks the closed form at the scale it is for: published models
// (GPT-3, Megatron, Llama with grouped-query attention and SwiGLU) on strategies from the papers,
// where float sums round (totals above 2^53) and buckets split single tensors.
func TestEstimateEqualsPredictPresets(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	cases := []struct{ model, strategy string }{
		// Narayanan et al. 2021 Table 2: PTD-P and the ZeRO-3 row on 1536 GPUs.
		{"gpt3-175b", "dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full"},
		{"gpt3-175b", "dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=selective,sp=on,schedule=interleaved,vpp=2"},
		{"gpt3-13b", "dp=8,tp=4,pp=2,mbs=2,gbs=512,sp=on,zero=1"},
		{"gpt3-1.3b", "dp=64,zero=3,gbs=512,mbs=8"},
		{"llama2-7b", "dp=64,zero=3,gbs=64"},
		{"llama2-70b", "dp=4,tp=8,pp=4,mbs=1,gbs=128,sp=on,recompute=selective"},
		{"llama3-8b", "dp=2,cp=2,tp=4,mbs=1,gbs=16,sp=on,recompute=full,zero=1"},
		{"megatron-530b", "dp=4,tp=8,pp=35,mbs=1,gbs=280,sp=on,recompute=selective"},
		{"llama3-70b", "dp=8,cp=2,tp=8,mbs=1,gbs=64,seq=16384,sp=on,attn=flash,zero=1"},
	}
	for _, c := range cases {
		m := mustPreset(t, c.model)
		st := mustParse(t, c.strategy)
		want := predictLowered(t, m, st, hw)
		got, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatalf("%s %s: %v", c.model, c.strategy, err)
		}
		equalResults(t, c.model+" "+c.strategy, got, want, 1e-9)
	}
}

// TestDerivedTotals keeps the derived closed form's Totals equal to its Result.
func TestDerivedTotals(t *testing.T) {
	m := mustPreset(t, "gpt3-175b")
	hw := loadHW(t, "h100-sxm")
	e, err := NewDerived(m, hw)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"dp=16,tp=8,pp=12,gbs=1536,recompute=full", "dp=1536,zero=3,gbs=1536", "dp=64,tp=8,pp=3,gbs=1536,sp=on"} {
		st := mustParse(t, s)
		tot, err := e.Totals(st)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Estimate(st)
		if err != nil {
			t.Fatal(err)
		}
		if tot.Memory != r.Memory || tot.Time != r.Time || tot.FLOPs != r.FLOPs || tot.Feasible != r.Feasible || tot.MFU != r.MFU {
			t.Errorf("%s: Totals %+v differ from Estimate %+v", s, tot, r)
		}
		for i, d := range strategies.DimOrder {
			if DimIndex(d) != i || tot.CommBytes[i] != r.CommBytes[d] || tot.CommTime[i] != r.CommTime[d] {
				t.Errorf("%s: %s bytes %v time %v, Estimate says %v %v", s, d, tot.CommBytes[i], tot.CommTime[i], r.CommBytes[d], r.CommTime[d])
			}
		}
	}
}

// TestEstimateErrors: Estimate prices what it cannot shorten (a custom plan, a model that is not
// a transformer) by lowering it whole, equal to Predict; errors of the strategy itself are
// Lower's (TestEstimateEqualsPredict).
func TestEstimateErrors(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	models := testModels(t)
	st := mustParse(t, "tp=2")
	var err error
	if st.Plan, err = strategies.ParsePlan("0=colwise,2=rowwise"); err != nil {
		t.Fatal(err)
	}
	check := func(name string, m *model.Model, st strategies.Strategy) {
		got, err := Estimate(m, st, hw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		equalResults(t, name, got, predictLowered(t, m, st, hw), 0)
	}
	check("a custom plan", models["seed-mlp"], st)
	st.Plan = &strategies.Plan{Name: "megatron"}
	check("the megatron plan by name", models["seed-mlp"], st)
	odd := &model.Model{Name: "norm-mlp", Family: "mlp", Loss: model.KindMSE, Batch: 4, InDim: 8, Root: &model.Module{Kind: model.KindSequential,
		Children: []*model.Module{{Name: "0", Kind: model.KindLinear, In: 8, Out: 8, Bias: true}, {Name: "1", Kind: model.KindLayerNorm, Dim: 8, Bias: true}, {Name: "2", Kind: model.KindLinear, In: 8, Out: 4}}}}
	check("a Sequential with a LayerNorm", odd, mustParse(t, "dp=1"))
	lp, err := strategies.ParsePlan("layers.1.attn.qkv=colwise,layers.1.attn.proj=rowwise")
	if err != nil {
		t.Fatal(err)
	}
	st = mustParse(t, "tp=2,pp=2,gbs=16")
	st.Plan = lp
	check("a plan that names one layer", models["gpt"], st)
	// Lower's error, word for word.
	_, lerr := program.Lower(models["seed-mlp"], mustParse(t, "tp=3,mbs=10"))
	if _, err := Estimate(models["seed-mlp"], mustParse(t, "tp=3,mbs=10"), hw); err == nil || lerr == nil || err.Error() != lerr.Error() {
		t.Errorf("seed-mlp at tp=3: error %v, Lower says %v", err, lerr)
	}
	noFP32 := *hw
	noFP32.Device.Peak = map[string]units.FLOPsPerSecond{"bf16": 1e15}
	if _, err := Estimate(models["gpt"], mustParse(t, "precision=fp32"), &noFP32); err == nil || !strings.Contains(err.Error(), "fp32") {
		t.Errorf("hardware without an fp32 peak: error %v", err)
	}
}

// FlashAttention on hardware without a FlashAttention efficiency is refused by both paths, with
// the fix named, rather than priced at some other kernel's rate.
func TestFlashNeedsKernel(t *testing.T) {
	hw := *loadHW(t, "a100-80g")
	hw.Efficiency.FlashMax = 0
	m := mustPreset(t, "gpt-tiny")
	st := mustParse(t, "attn=flash")
	p, err := program.Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	_, perr := Predict(p, &hw)
	_, eerr := Estimate(m, st, &hw)
	for _, err := range []error{perr, eerr} {
		if err == nil || !strings.Contains(err.Error(), "flash_attention_fraction") || !strings.Contains(err.Error(), "attn=eager") {
			t.Errorf("got %v, want an error naming efficiency.flash_attention_fraction and attn=eager", err)
		}
	}
	// The first generation has no figure on H100: refused, pointing to FlashAttention-2.
	h100 := loadHW(t, "h100-sxm")
	if _, err := Estimate(m, mustParse(t, "attn=flash1"), h100); err == nil || !strings.Contains(err.Error(), "flash1_attention_fraction") || !strings.Contains(err.Error(), "attn=flash ") {
		t.Errorf("attn=flash1 on h100-sxm: %v, want an error naming efficiency.flash1_attention_fraction and attn=flash", err)
	}
}

// attn=flash1 is attn=flash at the other fraction of peak: the same Program (bytes, memory,
// FLOPs), and the attention ops, bound by their FLOPs at these shapes, slower by the ratio of
// the two fractions.
func TestFlash1PricesOnlyTheKernel(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	m := mustPreset(t, "gpt3-1.3b")
	var res [2]*Result
	var attn [2]units.Seconds
	for i, a := range []string{"flash", "flash1"} {
		p, err := program.Lower(m, mustParse(t, "dp=2,tp=2,mbs=2,gbs=8,attn="+a))
		if err != nil {
			t.Fatal(err)
		}
		if res[i], err = Predict(p, hw); err != nil {
			t.Fatal(err)
		}
		c, err := NewCoster(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		for _, ops := range [][]program.Op{p.Stages[0].Forward, p.Stages[0].Backward} {
			for j := range ops {
				if ops[j].Kind == program.OpAttention {
					attn[i] += c.Compute(&ops[j])
				}
			}
		}
	}
	if res[0].Memory != res[1].Memory || res[0].FLOPs != res[1].FLOPs || !reflect.DeepEqual(res[0].CommBytes, res[1].CommBytes) {
		t.Errorf("flash and flash1 differ beyond time: memory %+v / %+v, FLOPs %+v / %+v", res[0].Memory, res[1].Memory, res[0].FLOPs, res[1].FLOPs)
	}
	want := hw.Efficiency.FlashMax / hw.Efficiency.Flash1Max
	if got := float64(attn[1] / attn[0]); attn[0] == 0 || math.Abs(got/want-1) > 1e-9 {
		t.Errorf("attention time flash1/flash = %.4f, want %.4f", got, want)
	}
	if res[1].Time.Step <= res[0].Time.Step {
		t.Errorf("step %v with flash1, %v with flash", res[1].Time.Step, res[0].Time.Step)
	}
}

// TestDimIndices: the per-dimension arrays' indices are strategies.DimOrder's, which DimIndex
// reads.
func TestDimIndices(t *testing.T) {
	for want, d := range map[int]strategies.Dim{IndexPP: strategies.DimPP, IndexDP: strategies.DimDP, IndexCP: strategies.DimCP, IndexTP: strategies.DimTP} {
		if got := DimIndex(d); got != want {
			t.Errorf("DimIndex(%s) = %d, the arrays use %d", d, got, want)
		}
	}
	if NumDims != len(strategies.DimOrder) {
		t.Errorf("NumDims = %d, strategies.DimOrder has %d", NumDims, len(strategies.DimOrder))
	}
}
