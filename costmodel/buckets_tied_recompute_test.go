package costmodel

import (
	"fmt"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Rajbhandari et al. 2020 §5: under ZeRO-1/2 a rank reduce-scatters its gradients (in DDP's
// buckets) and all-gathers the updated fp16 parameters into the parameter buffer, which params
// already counts (DeepSpeed gathers it in bounded buckets), so the comm buffer is the largest
// gradient bucket, not the 2P-byte gather. For gpt3-1.3b (tied, V = 51200, h = 2048) that is the
// bucket the embedding closes, the last parameter in DDP's reverse order: at least V h x 2 bytes
// (200 MiB) and less than that plus the 25 MiB cap. At dp=8, one sequence of 128 tokens per rank
// under full recompute, activations and workspace are a few tens of MiB, so the peak is params +
// grads + optimizer (6.74 GiB at ZeRO-1) plus at most that bucket: about 6.95 GiB, not 9.2.
func TestZeROCommIsGradientBuckets(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	m := mustPreset(t, "gpt3-1.3b")
	vh2 := units.Bytes(m.Transformer.Vocab * m.Transformer.Hidden * 2)
	for _, zero := range []int{1, 2} {
		st := mustParse(t, fmt.Sprintf("dp=8,zero=%d,gbs=8,seq=128,recompute=full", zero))
		p, err := program.Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		// The gather is still in the Program, 2P bytes: it is not a comm buffer.
		var gather units.Bytes
		for _, op := range p.Stages[0].Optimizer {
			if op.Kind == program.OpAllGather {
				gather = op.FullBytes
			}
		}
		if want := units.Bytes(2 * m.Params()); gather != want {
			t.Fatalf("zero=%d: the parameter all-gather is %v bytes, want 2P = %v", zero, float64(gather), float64(want))
		}
		want := predictLowered(t, m, st, hw)
		got, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			by  string
			mem Memory
		}{{"Predict", want.Memory}, {"Estimate", got.Memory}} {
			mem := r.mem
			if mem.Comm < vh2 || mem.Comm >= vh2+strategies.DefaultBucketBytes {
				t.Errorf("zero=%d %s: comm %v, want the embedding's gradient bucket, in [%v, %v + 25 MiB)", zero, r.by, mem.Comm, vh2, vh2)
			}
			states := mem.Params + mem.Grads + mem.Optimizer
			if extra := mem.Peak - states; extra != max(mem.Comm, extra) || extra > vh2+strategies.DefaultBucketBytes {
				t.Errorf("zero=%d %s: peak %v is %v over params + grads + optimizer, want at most the largest bucket", zero, r.by, mem.Peak, extra)
			}
		}
	}
}

// Tied embeddings over a pipeline (Shoeybi et al. 2019; Megatron-LM's embedding group): the first
// and the last pipeline ranks all-reduce embed.weight's gradient, V/t x h x 2 bytes, once per
// step. Against the same model untied (whose head has a weight of the same size and whose
// pipeline sends the same activations), comm_bytes["pp"] grows by exactly those bytes (p = 2:
// 2(p-1)/p n = n) and comm_time_s["pp"] by a two-rank ring on the level joining rank 0 and rank
// pp-1: 2 latencies + n / (bandwidth x efficiency). With dp=2 the two ranks share a node (NVLink);
// with dp=8 they are 8 devices apart, on the next node (InfiniBand).
func TestTiedEmbeddingAllReducePriced(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	c := model.Transformer{Hidden: 64, Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 16}
	untied, err := c.Build("gpt", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	c.Tied = true
	tied, err := c.Build("gpt-tied", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pp=2,dp=2,gbs=16", "pp=2,dp=8,gbs=16", "pp=2,dp=2,tp=2,gbs=16", "pp=2,dp=2,zero=1,gbs=16"} {
		st := mustParse(t, s)
		n := units.Bytes(256 / st.Mesh.TP * 64 * 2)
		level := hw.Levels[hw.LevelOf(0, st.Mesh.Stride(strategies.DimPP))]
		wantT := 2*level.Latency + units.Seconds(float64(n)/(float64(level.Bandwidth)*level.Efficiency))
		a := predictLowered(t, untied, st, hw)
		b := predictLowered(t, tied, st, hw)
		if got := b.CommBytes[strategies.DimPP] - a.CommBytes[strategies.DimPP]; got != n {
			t.Errorf("%s: tying adds %v bytes over pp, want %v", s, float64(got), float64(n))
		}
		if got := b.CommTime[strategies.DimPP] - a.CommTime[strategies.DimPP]; !near(float64(got), float64(wantT), 1e-9) {
			t.Errorf("%s: tying adds %v s over pp, want a two-rank ring %v s", s, float64(got), float64(wantT))
		}
		e, err := Estimate(tied, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		equalResults(t, "tied "+s, e, b, 1e-9)
	}
}

// Under full recompute the attention of the layer being recomputed keeps its s x s scores until
// its backward (Megatron-LM's checkpointed forward): the softmax output, dropout's mask and
// dropout's output, 5 a s^2 b bytes (Korthikanti et al. 2022 §4.1). With s = 512, h = 64 and a = 4
// they dominate: 5 x 4 x 512^2 = 5 MiB a layer against 64 KiB for b s h. So the most bytes live
// at once (StageLive) are at least one layer's scores, and less than two layers' (the forward's
// copies are transient, not saved: all four layers' would be 20 MiB); the activations saved are
// still 2 s b h per layer (Korthikanti et al. Table 2, TestProgramActivationsKorthikanti).
func TestFullRecomputeLiveScores(t *testing.T) {
	const s, h, a, b = 512, 64, 4, 1
	scores := units.Bytes(5 * a * s * s * b)
	var act [2]units.Bytes
	for i, layers := range []int{4, 5} {
		m, err := model.Transformer{Hidden: h, Layers: layers, Heads: a, KVHeads: a, HeadDim: h / a, FFN: 4 * h, Vocab: 256,
			Seq: s, Bias: true, Learned: true, Batch: 8, Dropout: 0.1}.Build("gpt", "gpt")
		if err != nil {
			t.Fatal(err)
		}
		st := mustParse(t, "mbs=1,gbs=8,recompute=full")
		p, err := program.Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		live := StageLive(p.Stages[0])
		if live < scores || live >= 2*scores {
			t.Errorf("%d layers: %v live at most, want one layer's scores %v and less than two", layers, live, scores)
		}
		act[i] = StageActivations(p.Stages[0])
		hw := loadHW(t, "a100-80g")
		e, err := Estimate(m, st, hw)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Predict(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		equalResults(t, fmt.Sprintf("%d layers", layers), e, r, 1e-9)
	}
	if got, want := act[1]-act[0], units.Bytes(2*s*b*h); got != want {
		t.Errorf("full recompute saves %v bytes per layer, want 2sbh = %v", float64(got), float64(want))
	}
}

// With tp=4 on 8-GPU nodes, pipeline stages 0 and 1 share a node but stages 1 and 2 do not; the
// pipeline runs at its slowest pair, so every send is priced on InfiniBand. Sequence parallel
// makes each rank's send its own 1/t of the activation; without it the send is Megatron-LM's
// scatter/gather (TestPipelineSendScatterGather).
func TestPipelineSendsCrossNodes(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("g", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := hardware.Load("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	ib := hw.Levels[len(hw.Levels)-1]
	for _, c := range []struct {
		s    string
		want hardware.Level
	}{{"tp=4,pp=4,gbs=8,sp=on", ib}, {"tp=4,pp=2,gbs=8,sp=on", hw.Levels[0]}, {"tp=4,dp=2,pp=2,gbs=8,sp=on", ib}} {
		st, err := strategies.Parse(c.s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := program.Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := NewCoster(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Stages[0].Forward {
			if op.Kind != program.OpSend {
				continue
			}
			want := c.want.Latency + units.Seconds(float64(op.SentBytes)/(float64(c.want.Bandwidth)*c.want.Efficiency))
			if got := cs.Comm(&op); got != want {
				t.Errorf("%s: send priced %v, want %v on %s", c.s, got, want, c.want.Name)
			}
		}
	}
}
