package costmodel

import (
	"testing"

	"github.com/tpsim/tpsim/internal/testmodels"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Ring attention passes the keys and values around cp ranks in cp - 1 steps, each under the
// blockwise products of the block before it. By hand from the ops' own prices, with share =
// (cp-1)/cp x the attention's time: the forward's (and the recomputed forward's) gather hides
// min(comm, share); in backward the keys' and values' gather hides min(comm, share of the
// attention's backward) and their gradients' reduce-scatter what that leaves. Eager attention
// hides nothing; with it the gathered keys and values are saved, with flash they are gathered
// again in backward (the ring keeps its own chunk).
func TestRingAttentionHidesCPCollectives(t *testing.T) {
	m := testmodels.Llama(t, 2)
	for _, c := range []struct {
		s        string
		ring     bool
		perLayer int // context-parallel collectives per layer
	}{
		{"cp=2,mbs=1,gbs=8,attn=flash", true, 3},
		{"cp=4,mbs=1,gbs=8,attn=flash,recompute=full", true, 3}, // the backward reads the recomputed gather
		{"cp=2,mbs=1,gbs=8,attn=eager", false, 2},
	} {
		p, co := lowerCost(t, m, c.s, loadHW(t, "a100-80g"))
		cp := units.Seconds(p.Strategy.Mesh.CP)
		share := func(att *program.Op) units.Seconds { return co.Compute(att) * (cp - 1) / cp }
		seen := 0
		for _, ops := range [][]program.Op{p.Stages[0].Forward, p.Stages[0].Backward} {
			for i := range ops {
				op := &ops[i]
				if op.Dim != strategies.DimCP || !op.Kind.IsComm() {
					continue
				}
				seen++
				att := &ops[i+1]
				budget := units.Seconds(0)
				if op.Kind == program.OpReduceScatter {
					att = &ops[i-1]
				}
				if att.Kind != program.OpAttention {
					t.Fatalf("%s: cp %s %s next to %s, not the attention", c.s, op.Kind, op.Module, att.Kind)
				}
				if c.ring {
					budget = share(att)
					if g := &ops[i-2]; op.Kind == program.OpReduceScatter && g.Kind == program.OpAllGather && g.Dim == strategies.DimCP {
						budget -= min(co.Comm(g), budget)
					}
				}
				// Both sides of min: the collective alone, and a collective 1000x longer.
				for _, d := range []units.Seconds{co.Comm(op), 1000 * co.Comm(op)} {
					if got, want := co.Hidden(ops, i, d), min(d, budget)/units.Seconds(1+co.OverlapSlowdown()); got != want {
						t.Errorf("%s: %s %s %s of %v hides %v, want %v", c.s, op.Phase, op.Kind, op.Module, d, got, want)
					}
				}
			}
		}
		if want := 2 * c.perLayer; seen != want {
			t.Errorf("%s: %d context-parallel collectives, want %d", c.s, seen, want)
		}
	}
}

// Ring attention keeps its own chunk of the keys and values: with flash attention the gathered
// sequence is not saved from the forward to the backward (the backward gathers it again), with
// eager attention (an all-gather, then the whole attention) it is.
func TestRingAttentionSavesTheLocalChunk(t *testing.T) {
	m := testmodels.Llama(t, 2)
	for _, c := range []struct {
		attn  string
		saved bool
	}{{"flash", false}, {"eager", true}} {
		p, _ := lowerCost(t, m, "cp=2,mbs=1,gbs=8,attn="+c.attn, loadHW(t, "a100-80g"))
		s := p.Stages[0]
		n := 0
		for _, op := range s.Forward {
			if op.Kind != program.OpAttention {
				continue
			}
			n++
			if len(op.In) < 2 {
				t.Fatalf("attn=%s: the attention reads no gathered keys and values", c.attn)
			}
			if got := s.Values[op.In[1]].Saved; got != c.saved {
				t.Errorf("attn=%s: %s's gathered keys and values saved for backward: %v, want %v", c.attn, op.Module, got, c.saved)
			}
			if !s.Values[op.In[0]].Saved {
				t.Errorf("attn=%s: %s's local q, k, v not saved for backward", c.attn, op.Module)
			}
		}
		if n != 2 {
			t.Errorf("attn=%s: %d attention ops, want 2", c.attn, n)
		}
	}
}
