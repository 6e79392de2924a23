package program

import (
	"testing"

	"github.com/tpsim/tpsim/internal/testmodels"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func tinyGPT(t *testing.T, layers int) *model.Model { return testmodels.GPT(t, layers) }

func tinyLlama(t *testing.T, layers int) *model.Model { return testmodels.Llama(t, layers) }

// Narayanan et al. 2021 §3.3 (formulas.json tp_comm_per_layer_per_microbatch): with the Megatron plan
// every layer does two all-reduces of b*s*h in forward and two in backward, so one rank sends
// 4 * 2(t-1)/t * b*s*h elements per layer per microbatch. Sequence parallel replaces each all-reduce
// by a reduce-scatter and an all-gather, the same bytes (Korthikanti et al. 2022 §4.2.2: forward 2
// all-gathers + 2 reduce-scatters, backward 2 reduce-scatters + 2 all-gathers), and the backward
// all-gathers the saved [b, s/t, h] input shard of the qkv and of the first MLP Linear again for
// their weight gradients (§4.2.2, Fig. 5's backward), 2 * (t-1)/t * b*s*h more: 10 (t-1)/t b*s*h.
func TestMegatronLayerTPBytes(t *testing.T) {
	for _, sp := range []string{"off", "on"} {
		for _, tp := range []int{2, 4} {
			var perLayer [2]units.Bytes
			for i, layers := range []int{1, 2} {
				st, err := strategies.Parse("tp=" + itoa(tp) + ",mbs=2,gbs=8,sp=" + sp)
				if err != nil {
					t.Fatal(err)
				}
				p, err := Lower(tinyGPT(t, layers), st)
				if err != nil {
					t.Fatal(err)
				}
				for _, ops := range [][]Op{p.Stages[0].Forward, p.Stages[0].Backward} {
					for _, op := range ops {
						if op.Dim == strategies.DimTP {
							perLayer[i] += op.SentBytes
						}
					}
				}
			}
			b, s, h := 2, 32, 64
			want := units.Bytes(4*2*b*s*h*2) * units.Bytes(tp-1) / units.Bytes(tp)
			if sp == "on" {
				want += units.Bytes(2*b*s*h*2) * units.Bytes(tp-1) / units.Bytes(tp) // the re-gathers
			}
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
			st, err := strategies.Parse(s)
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

// Korthikanti et al. 2022 §4.2.2: under sequence parallelism a column-parallel Linear's backward
// reads the [b, s/t, h] shard of its input, saved in forward, and all-gathers it again; the
// gathered [b, s, h] input of forward is not kept. Megatron-LM gathers once for the fused qkv and
// once for the MLP's input (gate and up share it), and once for the output head. Under full
// recompute the replayed forward gathers the layers' inputs, so only the head gathers again.
func TestSequenceParallelRegather(t *testing.T) {
	for _, m := range []*model.Model{tinyGPT(t, 2), tinyLlama(t, 2)} {
		for _, c := range []struct {
			st   string
			want int // backward re-gathers
		}{
			{"tp=2,sp=on", 2*2 + 1},
			{"tp=2,sp=on,recompute=selective,mbs=2,gbs=8", 2*2 + 1},
			{"tp=2,sp=on,recompute=full", 1},
			{"tp=2,sp=on,recompute=op", 1}, // the replayed ops gather again, as under full
			{"dp=2,tp=2,sp=on,zero=3", 2*2 + 1},
			{"tp=2", 0},
		} {
			st, err := strategies.Parse(c.st)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Lower(m, st)
			if err != nil {
				t.Fatal(err)
			}
			s := p.Stages[0]
			name := m.Name + " " + c.st
			gathered := map[ValueID]bool{} // outputs of forward sequence all-gathers
			for _, op := range s.Forward {
				if op.Kind == OpAllGather && op.Dim == strategies.DimTP && op.Axis == 1 {
					gathered[op.Out[0]] = true
					if s.Values[op.Out[0]].Saved {
						t.Errorf("%s: the gathered %s is saved for backward", name, s.Values[op.Out[0]].Name)
					}
				}
			}
			n := 0
			for i, op := range s.Backward {
				if op.Kind != OpAllGather || op.Dim != strategies.DimTP || op.Axis != 1 || !s.Values[op.In[0]].Saved {
					continue
				}
				n++
				in, out := s.Values[op.In[0]], s.Values[op.Out[0]]
				if in.Shape[1]*st.Mesh.TP != out.Shape[1] || out.Saved || op.SentBytes != out.Bytes()*units.Bytes(st.Mesh.TP-1)/units.Bytes(st.Mesh.TP) {
					t.Errorf("%s: re-gather %s -> %s sends %v", name, in.Name, out.Name, float64(op.SentBytes))
				}
				// The next compute op is a Linear's backward that reads the gathered value; the
				// last Linear to read it frees it.
				readers, freed := 0, false
				for _, b := range s.Backward[i+1:] {
					if len(b.Saved) > 0 && b.Saved[0] == op.Out[0] {
						if b.Kind != OpLinear {
							t.Errorf("%s: %s reads the re-gathered %s", name, b.Kind, out.Name)
						}
						readers++
						for _, f := range b.Free {
							freed = freed || f == op.Out[0]
						}
					}
				}
				if readers == 0 || !freed {
					t.Errorf("%s: re-gathered %s read by %d Linears, freed %v", name, out.Name, readers, freed)
				}
			}
			if n != c.want {
				t.Errorf("%s: %d backward re-gathers, want %d", name, n, c.want)
			}
			for _, op := range s.Backward {
				if op.Kind == OpLinear && op.Fwd >= 0 && gathered[op.Saved[0]] {
					t.Errorf("%s: the backward of %s reads the forward's gathered input", name, op.Module)
				}
			}
		}
	}
}
