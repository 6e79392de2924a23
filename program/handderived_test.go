package program

import (
	"fmt"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// small is a GPT of 4 layers, width 64, no biases but the norms', an untied head: by hand it has
// embed 256 x 64 = 16,384; per layer norm1 2 x 64, qkv 64 x 192 = 12,288, proj 64 x 64 = 4,096,
// norm2 2 x 64, fc1 and fc2 64 x 256 = 16,384 each: 49,408; the final norm 128; the head 16,384:
// 16,384 + 4 x 49,408 + 128 + 16,384 = 230,528 parameters.
func small(t *testing.T, kvHeads int) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: kvHeads, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("small", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func lowerS(t *testing.T, m *model.Model, s string) *Program {
	t.Helper()
	st, err := strategies.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The optimizer step under ZeRO (Rajbhandari et al. 2020 §5): stage 1 and up partition the
// optimizer state over the dp ranks, so each rank updates ceil(P/dp) parameters; without ZeRO
// every rank updates all P. Mixed-precision Adam (2-byte parameters and gradients, 12 bytes of
// fp32 master weights and moments, Rajbhandari et al. §3.1) reads and writes the parameters and
// the state and reads the gradients: 2 x (2 + 12) + 2 = 30 bytes per parameter; about 10 FLOPs
// per parameter. P = 230,528 (small); dp = 3: ceil(230,528 / 3) = 76,843.
func TestZeROStepIsShardedHandDerived(t *testing.T) {
	m := small(t, 4)
	if m.Params() != 230528 {
		t.Fatalf("small has %d parameters, by hand 230,528", m.Params())
	}
	for zero, local := range []int64{230528, 76843, 76843, 76843} {
		p := lowerS(t, m, fmt.Sprintf("dp=3,zero=%d,mbs=1,gbs=3", zero))
		if p.ParamBytes != 2 || p.GradBytes != 2 || p.OptBytes != 12 {
			t.Fatalf("mixed precision: %d, %d, %d bytes of parameter, gradient and state; want 2, 2, 12", p.ParamBytes, p.GradBytes, p.OptBytes)
		}
		n := 0
		for _, op := range p.Stages[0].Optimizer {
			if op.Kind != OpStep {
				continue
			}
			n++
			if op.Elems != local || op.FLOPs != units.FLOPs(10*local) || op.MemBytes != units.Bytes(30*local) {
				t.Errorf("zero=%d dp=3: step over %d parameters, %v FLOPs, %v; want %d, %d, %d bytes", zero, op.Elems, op.FLOPs, op.MemBytes, local, 10*local, 30*local)
			}
		}
		if n != 1 {
			t.Errorf("zero=%d: %d optimizer steps, want 1", zero, n)
		}
	}
}

// Context parallelism (Llama 3 §3.3.2) all-gathers the keys and values over the cp ranks before
// attention; a ring all-gather sends (cp-1)/cp of the gathered tensor from each rank (Thakur,
// Rabenseifner and Gropp 2005). small with 2 KV heads, microbatch 2, sequence 32 over cp = 4:
// K and V of the whole sequence are 2 x 32 x (2 x 2 x 16) x 2 bytes = 8,192 bytes, of which each
// rank sends 3/4, 6,144 bytes, in every layer's forward (and again where recomputed), and the
// backward reduce-scatters their gradients, the same bytes.
func TestContextParallelGatherBytesHandDerived(t *testing.T) {
	p := lowerS(t, small(t, 2), "cp=4,mbs=2,gbs=8")
	var gathers, scatters int
	for _, ops := range [][]Op{p.Stages[0].Forward, p.Stages[0].Backward} {
		for _, op := range ops {
			if op.Dim != strategies.DimCP {
				continue
			}
			switch op.Kind {
			case OpAllGather:
				gathers++
			case OpReduceScatter:
				scatters++
			default:
				continue
			}
			if op.FullBytes != 8192 || op.SentBytes != 6144 || op.Group != 4 {
				t.Errorf("%s %s %s over %d: %v of %v sent; want 6,144 of 8,192 bytes over 4", op.Phase, op.Kind, op.Module, op.Group, op.SentBytes, op.FullBytes)
			}
		}
	}
	if gathers != 4 || scatters != 4 {
		t.Errorf("%d all-gathers and %d reduce-scatters over cp, want one each per layer (4)", gathers, scatters)
	}
}
