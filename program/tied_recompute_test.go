package program

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func tinyTransformer(t *testing.T, c model.Transformer, name string) *model.Model {
	t.Helper()
	m, err := c.Build(name, "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Tied embeddings over a pipeline (Shoeybi et al. 2019; Megatron-LM's embedding group): the first
// stage holds embed.weight for the embedding, the last stage a copy for the output head, and
// their gradients are all-reduced over the two pipeline ranks before the update. The all-reduce is
// over p = 2 ranks of the tp-local gradient, V/t x h elements of 2 bytes, so it sends
// 2(p-1)/p n = n bytes (docs/architecture.md's bytes-per-rank table). Middle stages, untied models and a single stage have
// none.
func TestTiedEmbeddingAllReduceOverPP(t *testing.T) {
	c := model.Transformer{Hidden: 64, Layers: 8, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 16}
	untied := tinyTransformer(t, c, "gpt")
	c.Tied = true
	tied := tinyTransformer(t, c, "gpt-tied")
	for _, tc := range []struct {
		m  *model.Model
		st string
	}{
		{tied, "pp=2,gbs=16"},
		{tied, "pp=4,tp=2,gbs=16"},
		{tied, "pp=2,dp=2,zero=1,gbs=16"},
		{tied, "pp=2,vpp=2,schedule=interleaved,gbs=16"},
		{tied, "pp=4,vpp=2,schedule=interleaved,gbs=16,tp=2,sp=on"},
		{tied, "dp=2"},
		{untied, "pp=2,gbs=16"},
	} {
		st, err := strategies.Parse(tc.st)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Lower(tc.m, st)
		if err != nil {
			t.Fatal(err)
		}
		name := tc.m.Name + " " + tc.st
		last := len(p.Stages) - 1
		wantBytes := units.Bytes(256 / st.Mesh.TP * 64 * 2)
		for _, s := range p.Stages {
			var got []Op
			for _, op := range s.Optimizer {
				if op.Dim == strategies.DimPP {
					got = append(got, op)
				}
			}
			want := tc.m.Transformer.Tied && st.Mesh.PP > 1 && (s.Index == 0 || s.Index == last)
			if !want {
				if len(got) != 0 {
					t.Errorf("%s: stage %d has %d optimizer ops over pp, want none", name, s.Index, len(got))
				}
				continue
			}
			if len(got) != 1 {
				t.Errorf("%s: stage %d has %d optimizer ops over pp, want the embedding's all-reduce", name, s.Index, len(got))
				continue
			}
			op := got[0]
			peer := last
			if s.Index == last {
				peer = 0
			}
			if op.Kind != OpAllReduce || op.Group != 2 || op.Peer != peer || len(op.Params) != 1 || op.Params[0] != "embed.weight" ||
				op.FullBytes != wantBytes || op.SentBytes != wantBytes {
				t.Errorf("%s: stage %d: %s over %s group %d peer %d params %v full %v sent %v; want all_reduce over pp, group 2, peer %d, [embed.weight], %v bytes",
					name, s.Index, op.Kind, op.Dim, op.Group, op.Peer, op.Params, float64(op.FullBytes), float64(op.SentBytes), peer, float64(wantBytes))
			}
			// It follows the gradient reductions and precedes the update (Megatron-LM's
			// finalize_model_grads, then the optimizer step).
			for i, o := range s.Optimizer {
				if o.Dim == strategies.DimPP {
					if i+1 >= len(s.Optimizer) || s.Optimizer[i+1].Kind != OpStep {
						t.Errorf("%s: stage %d: the embedding's all-reduce is not just before the optimizer step", name, s.Index)
					}
				}
			}
			if q := paramOf(s, "embed.weight"); q == nil || units.Bytes(q.Elems()*2) != wantBytes {
				t.Errorf("%s: stage %d does not hold a %v-byte embed.weight gradient", name, s.Index, float64(wantBytes))
			}
		}
	}
}

func paramOf(s *Stage, name string) *Param {
	for i := range s.Params {
		if s.Params[i].Name == name {
			return &s.Params[i]
		}
	}
	return nil
}

// Under full recompute the replayed forward of a layer writes the softmax output (and attention
// dropout's mask and output) that the attention's backward reads, as Megatron-LM's checkpointed
// layer does; the forward's originals are transient: not saved, freed by the op that writes
// them. The attention's backward costs twice the forward (the replay paid the forward);
// only selective recompute reruns the core inside the backward op (Korthikanti et al. 2022 §4.2),
// with no probabilities saved or replayed.
func TestRecomputeAttentionProbs(t *testing.T) {
	for _, dropout := range []float64{0, 0.1} {
		m := tinyTransformer(t, model.Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256,
			Seq: 32, Bias: true, Learned: true, Batch: 8, Dropout: dropout}, "gpt")
		for _, rc := range []string{"none", "selective", "full"} {
			p := lowerSpec(t, m, "tp=2,mbs=2,gbs=8,recompute="+rc)
			s := p.Stages[0]
			name := fmt.Sprintf("dropout=%v recompute=%s", dropout, rc)
			// [b, a/t, s, s] scores: 2 x 2 x 32 x 32.
			scores := []int{2, 2, 32, 32}
			nScores := 1 // softmax output
			if dropout > 0 {
				nScores = 3 // and the dropout mask and output
			}
			if rc == "selective" {
				nScores = 0
			}
			fwd := 0
			for i, op := range s.Forward {
				if op.Kind != OpAttention {
					continue
				}
				fwd++
				if len(op.Out) != 1+nScores {
					t.Errorf("%s: forward attention %s writes %d values, want %d", name, op.Module, len(op.Out), 1+nScores)
					continue
				}
				for _, id := range op.Out[1:] {
					v := s.Values[id]
					if fmt.Sprint(v.Shape) != fmt.Sprint(scores) {
						t.Errorf("%s: %s has shape %v, want %v", name, v.Name, v.Shape, scores)
					}
					if saved := rc == "none"; v.Saved != saved {
						t.Errorf("%s: forward %s saved %v, want %v", name, v.Name, v.Saved, saved)
					}
					if rc == "full" && !contains(s.Forward[i].Free, id) {
						t.Errorf("%s: forward %s is not freed by the attention op that writes it", name, v.Name)
					}
				}
			}
			bwd := 0
			for _, op := range s.Backward {
				if op.Kind != OpAttention || op.Fwd < 0 {
					continue
				}
				bwd++
				fop := s.Forward[op.Fwd]
				wantFLOPs := 2 * fop.FLOPs
				if rc == "selective" {
					wantFLOPs = 3 * fop.FLOPs
				}
				if op.FLOPs != wantFLOPs || op.Recompute != (rc == "selective") {
					t.Errorf("%s: backward of %s: %v FLOPs, recompute %v; want %v (forward %v)", name, op.Module, float64(op.FLOPs), op.Recompute, float64(wantFLOPs), float64(fop.FLOPs))
				}
				if len(op.Saved) != 1+nScores {
					t.Errorf("%s: backward of %s reads %d values, want qkv and %d of the scores", name, op.Module, len(op.Saved), nScores)
					continue
				}
				for _, id := range op.Saved[1:] {
					v := s.Values[id]
					if recomputed := strings.HasSuffix(v.Name, ".re"); recomputed != (rc == "full") || v.Saved == recomputed {
						t.Errorf("%s: backward of %s reads %s (saved %v)", name, op.Module, v.Name, v.Saved)
					}
					if rc == "full" && (!writtenByReplay(s, id) || !contains(op.Free, id)) {
						t.Errorf("%s: %s is not written by the replayed forward and freed by the attention's backward", name, v.Name)
					}
				}
			}
			if fwd != 2 || bwd != 2 {
				t.Errorf("%s: %d forward and %d backward attention ops, want 2 and 2", name, fwd, bwd)
			}
		}
	}
}

func contains(ids []ValueID, id ValueID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func writtenByReplay(s *Stage, id ValueID) bool {
	for _, op := range s.Backward {
		if op.Recompute && op.Kind == OpAttention && contains(op.Out, id) {
			return true
		}
	}
	return false
}

// Per-op checkpointing (recompute=op, torchtitan's selective_ac_option "op"): a layer's backward
// replays its forward except attention and every other matrix product, counted from the first
// (qkv, the MLP's gate and down projection keep their outputs; the output projection and the up
// projection are replayed), and those saved outputs are read from the forward.
func TestRecomputeOpKeepsEveryOtherProduct(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32,
		Batch: 8, Gated: true, RMSNorm: true}.Build("llama-tiny", "llama")
	if err != nil {
		t.Fatal(err)
	}
	st, err := strategies.Parse("mbs=2,gbs=8,recompute=op,attn=flash")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Stages[0]
	var fwd, replayed []string
	for _, op := range s.Forward {
		if op.Kind == OpLinear && strings.HasPrefix(op.Module, "layers.0.") {
			fwd = append(fwd, op.Module)
		}
	}
	for _, op := range s.Backward {
		if op.Recompute && op.Fwd < 0 && strings.HasPrefix(op.Module, "layers.0.") {
			if op.Kind == OpAttention {
				t.Errorf("attention %s replayed; its output is saved", op.Module)
			}
			if op.Kind == OpLinear {
				replayed = append(replayed, op.Module)
			}
		}
	}
	if len(fwd) != 5 {
		t.Fatalf("layer 0 has products %v, want 5 (qkv, proj, gate, up, down)", fwd)
	}
	if want := []string{fwd[1], fwd[3]}; fmt.Sprint(replayed) != fmt.Sprint(want) {
		t.Errorf("replayed products %v, want %v (every second of %v)", replayed, want, fwd)
	}
	for _, op := range s.Forward {
		if op.Kind == OpLinear && (op.Module == fwd[0] || op.Module == fwd[2] || op.Module == fwd[4]) && !s.Values[op.Out[0]].Saved {
			t.Errorf("%s: output not saved for backward", op.Module)
		}
	}
}

// Under ZeRO-3 with full or per-op recompute, the recomputed forward's gathers also serve the
// backward ops, as FSDP unshards a checkpointed unit once in its backward: each parameter op
// of a layer is gathered once in the backward (and once in the forward). DeepSpeed's ZeRO-3 of
// 2021 (tensorlists=on) released the parameters after the recomputed forward and gathered them
// again for the backward: twice. Without recompute the backward gathers once.
func TestZeRO3RecomputeGathersOncePerBackward(t *testing.T) {
	m := tinyLlama(t, 2)
	for _, c := range []struct {
		knobs string
		want  int // gathers of layers.1's attention output projection in the backward
	}{
		{"", 1}, {",recompute=full", 1}, {",recompute=op", 1}, {",recompute=selective", 1},
		{",recompute=full,tensorlists=on", 2},
	} {
		st, err := strategies.Parse("dp=2,zero=3,mbs=1,gbs=2" + c.knobs)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		count := func(ops []Op) (n int) {
			for _, op := range ops {
				if op.Kind == OpAllGather && op.Dim == strategies.DimDP && op.Module == "layers.1.attn.proj" {
					n++
				}
			}
			return n
		}
		s := p.Stages[0]
		if f, b := count(s.Forward), count(s.Backward); f != 1 || b != c.want {
			t.Errorf("%s: layers.1.attn.proj gathered %d times in the forward, %d in the backward; want 1 and %d", c.knobs, f, b, c.want)
		}
	}
}
