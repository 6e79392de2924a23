package program

import (
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// The invariants doc.go states, on pipelines of every schedule and uneven stages: stages per
// rank and chunk, contiguous layers as StageCounts splits them, receives first and sends last,
// backward ops pointing at their forward op, one Free entry per value used.
func TestProgramInvariants(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32,
		Gated: true, RMSNorm: true, Tied: true, Batch: 8}.Build("llama7", "llama")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pp=3,gbs=6", "pp=2,gbs=4", "pp=3,tp=2,sp=on,gbs=6,recompute=full,schedule=gpipe", "dp=2,zero=3,cp=2", "pp=2,dp=2,tp=2,gbs=8,zero=1", "pp=2,tp=2,sp=on,gbs=4,recompute=op", "dp=2,zero=3,recompute=op,attn=flash"} {
		st, err := strategies.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Lower(m, st)
		if err != nil {
			t.Fatal(err)
		}
		nv := st.Mesh.PP * st.VPP
		if len(p.Stages) != nv {
			t.Fatalf("%s: %d stages, want %d", s, len(p.Stages), nv)
		}
		counts := StageCounts(7, nv)
		lo := 0
		for i, sg := range p.Stages {
			if sg.Index != i || sg.Rank != i%st.Mesh.PP || sg.LayerLo != lo || sg.LayerHi != lo+counts[i] {
				t.Errorf("%s stage %d: index %d rank %d layers [%d, %d), want rank %d layers [%d, %d)", s, i, sg.Index, sg.Rank, sg.LayerLo, sg.LayerHi, i%st.Mesh.PP, lo, lo+counts[i])
			}
			lo += counts[i]
			for _, phase := range [][]Op{sg.Forward, sg.Backward} {
				for j, op := range phase {
					if op.Kind == OpRecv && j != 0 || op.Kind == OpSend && j != len(phase)-1 {
						t.Errorf("%s stage %d: %s at %d of %d ops", s, i, op.Kind, j, len(phase))
					}
				}
			}
			first, last := i == 0, i == nv-1
			if (sg.Forward[0].Kind == OpRecv) == first || (sg.Forward[len(sg.Forward)-1].Kind == OpSend) == last ||
				(sg.Backward[0].Kind == OpRecv) == last || (sg.Backward[len(sg.Backward)-1].Kind == OpSend) == first {
				t.Errorf("%s stage %d: the receives and sends are not where the neighbours are", s, i)
			}
			freed := map[ValueID]int{}
			used := map[ValueID]bool{}
			for _, phase := range [][]Op{sg.Forward, sg.Backward} {
				for _, op := range phase {
					if op.Phase == Backward && op.Fwd >= 0 && (op.Fwd >= len(sg.Forward) || sg.Forward[op.Fwd].Kind != op.Kind) {
						t.Errorf("%s stage %d: backward %s points at forward op %d", s, i, op.Kind, op.Fwd)
					}
					for _, list := range [][]ValueID{op.In, op.Out, op.Saved} {
						for _, id := range list {
							if id >= 0 {
								used[id] = true
							}
						}
					}
					for _, id := range op.Free {
						freed[id]++
					}
				}
			}
			for id := range used {
				if freed[id] != 1 {
					t.Errorf("%s stage %d: value %s freed %d times", s, i, sg.Values[id].Name, freed[id])
				}
			}
		}
	}
}
