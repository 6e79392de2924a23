package strategies

import (
	"testing"

	"tpsim/model"
	"tpsim/units"
)

func tinyGPT(t *testing.T, layers int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 8}.Build("gpt-tiny", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tinyLlama(t *testing.T, layers int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: layers, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32,
		Gated: true, RMSNorm: true, Batch: 8}.Build("llama-tiny", "llama")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Narayanan et al. 2021 §3.3 (formulas.json tp_comm_per_layer_per_microbatch): with the Megatron plan
// every layer does two all-reduces of b*s*h in forward and two in backward, so one rank sends
// 4 * 2(t-1)/t * b*s*h elements per layer per microbatch. Sequence parallel replaces each all-reduce
// by a reduce-scatter and an all-gather, the same bytes (Korthikanti et al. 2022 §4.2.2).
func TestMegatronLayerTPBytes(t *testing.T) {
	for _, sp := range []string{"off", "on"} {
		for _, tp := range []int{2, 4} {
			var perLayer [2]units.Bytes
			for i, layers := range []int{1, 2} {
				st, err := Parse("tp=" + itoa(tp) + ",mbs=2,gbs=8,sp=" + sp)
				if err != nil {
					t.Fatal(err)
				}
				p, err := Lower(tinyGPT(t, layers), st)
				if err != nil {
					t.Fatal(err)
				}
				for _, ops := range [][]Op{p.Stages[0].Forward, p.Stages[0].Backward} {
					for _, op := range ops {
						if op.Dim == DimTP {
							perLayer[i] += op.SentBytes
						}
					}
				}
			}
			b, s, h := 2, 32, 64
			want := units.Bytes(4*2*b*s*h*2) * units.Bytes(tp-1) / units.Bytes(tp)
			if got := perLayer[1] - perLayer[0]; got != want {
				t.Errorf("tp=%d sp=%s: one layer sends %v bytes per microbatch, want %v", tp, sp, float64(got), float64(want))
			}
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestLowerFamilies(t *testing.T) {
	for _, m := range []*model.Model{tinyGPT(t, 4), tinyLlama(t, 4)} {
		for _, s := range []string{
			"dp=1", "dp=2", "tp=2", "tp=2,sp=on", "dp=2,tp=2", "pp=2,gbs=8", "pp=2,tp=2,sp=on", "pp=2,vpp=2,schedule=interleaved,gbs=8",
			"dp=2,zero=1", "dp=2,zero=2", "dp=4,zero=3", "tp=2,recompute=full", "tp=2,recompute=selective", "cp=2", "cp=2,tp=2,sp=on",
		} {
			st, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Lower(m, st)
			if err != nil {
				t.Errorf("%s %s: %v", m.Name, s, err)
				continue
			}
			for _, stg := range p.Stages {
				if len(stg.Forward) == 0 || len(stg.Backward) == 0 || len(stg.Optimizer) == 0 {
					t.Errorf("%s %s stage %d: empty phase", m.Name, s, stg.Index)
				}
			}
		}
	}
}

// Llama 3 §3.3.2: 126 layers on 16 stages, one layer fewer on the first and the last.
func TestStageLayers(t *testing.T) {
	cases := []struct {
		layers, stages int
		want           []int // layers per stage
	}{
		{126, 16, []int{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}},
		{8, 4, []int{2, 2, 2, 2}},
		{10, 4, []int{2, 3, 3, 2}},
		{5, 4, []int{1, 1, 2, 1}},
	}
	for _, c := range cases {
		got := make([]int, c.stages)
		prev := 0
		for i, s := range StageLayers(c.layers, c.stages) {
			if s < prev || (i > 0 && s > prev+1) {
				t.Fatalf("%d/%d: stages not in order: %v", c.layers, c.stages, StageLayers(c.layers, c.stages))
			}
			got[s]++
			prev = s
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%d layers on %d stages: %v, want %v", c.layers, c.stages, got, c.want)
				break
			}
		}
	}
}
