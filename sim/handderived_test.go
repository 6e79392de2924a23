package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// 1F1B over pp=2 with 4 microbatches, one layer a stage, each forward 1 s and backward 2 s
// (unitCoster; sends, the head and the optimizer free), laid out by hand from the schedule
// (Narayanan et al. 2021 §2.2.1: rank r warms up with pp-r-1 forwards, then one forward one
// backward, then drains):
//
//	rank 0: F0 F1 B0 F2 B1 F3 B2 B3     rank 1: F0 B0 F1 B1 F2 B2 F3 B3
//
// A forward on rank 1 waits for rank 0's, a backward on rank 0 for rank 1's:
//
//	rank 0: F0 [0,1]  F1 [1,2]  B0 [4,6]  F2 [6,7]  B1 [7,9]  F3 [9,10]  B2 [10,12]  B3 [13,15]
//	rank 1: F0 [1,2]  B0 [2,4]  F1 [4,5]  B1 [5,7]  F2 [7,8]  B2 [8,10]  F3 [10,11]  B3 [11,13]
//
// Step 15 s = (m + p - 1)(f + b) = 5 x 3; each rank computes 4 x 3 = 12 s of it: utilization
// 12/15 = 0.8 on both; rank 0 finishes last; the bubble is 3 s = (p - 1)(f + b). The critical
// path runs from the first op (starting at 0) to the last (ending at 15), in time order.
func TestOneFOneBTimelineHandDerived(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Batch: 8}.Build("scenario", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	p := lowerT(t, m, "pp=2,mbs=2,gbs=8,schedule=1f1b")
	if p.Microbatches != 4 {
		t.Fatalf("%d microbatches, want 4", p.Microbatches)
	}
	res, err := Simulate(p, unitCoster{fwd: 1, bwd: 2}, Options{Spans: true})
	if err != nil {
		t.Fatal(err)
	}
	want := [2]string{
		"F0[0,1] F1[1,2] B0[4,6] F2[6,7] B1[7,9] F3[9,10] B2[10,12] B3[13,15]",
		"F0[1,2] B0[2,4] F1[4,5] B1[5,7] F2[7,8] B2[8,10] F3[10,11] B3[11,13]",
	}
	// Each task is the span of its rank's priced Linear ops (the layer's, unitCoster).
	type key struct {
		rank, micro int
		bwd         bool
	}
	first, last := map[key]units.Seconds{}, map[key]units.Seconds{}
	var order [2][]key
	for _, s := range res.Spans {
		if s.Kind != program.OpLinear || !strings.HasPrefix(s.Module, "layers.") || s.Phase == program.Optimizer {
			continue
		}
		k := key{s.Rank, s.Micro, s.Phase == program.Backward}
		if _, ok := first[k]; !ok {
			first[k] = s.Start
			order[s.Rank] = append(order[s.Rank], k)
		}
		last[k] = max(last[k], s.End)
	}
	for r := range 2 {
		var b []string
		for _, k := range order[r] {
			fb := "F"
			if k.bwd {
				fb = "B"
			}
			b = append(b, fmt.Sprintf("%s%d[%g,%g]", fb, k.micro, float64(first[k]), float64(last[k])))
		}
		if got := strings.Join(b, " "); got != want[r] {
			t.Errorf("rank %d:\n got %s\nwant %s", r, got, want[r])
		}
	}
	if res.Step != 15 || res.CriticalRank != 0 || res.Compute != 12 || res.Bubble != 3 {
		t.Errorf("step %v on rank %d, compute %v, bubble %v; want 15 s on rank 0, 12, 3", res.Step, res.CriticalRank, res.Compute, res.Bubble)
	}
	if len(res.Utilization) != 2 || !near(units.Seconds(res.Utilization[0]), 0.8) || !near(units.Seconds(res.Utilization[1]), 0.8) {
		t.Errorf("utilization %v, want 12/15 = 0.8 on both ranks", res.Utilization)
	}
	cp := res.CriticalPath
	if len(cp) < 2 {
		t.Fatalf("critical path of %d ops", len(cp))
	}
	if cp[0].Start != 0 || cp[len(cp)-1].End != res.Step {
		t.Errorf("critical path from %v to %v, want from 0 to the step's end %v", cp[0].Start, cp[len(cp)-1].End, res.Step)
	}
	for i := 1; i < len(cp); i++ {
		if cp[i].Start < cp[i-1].End {
			t.Errorf("critical path op %d (%s %s rank %d, [%v, %v]) starts before op %d ends (%v): not first to last", i, cp[i].Phase, cp[i].Module, cp[i].Rank, cp[i].Start, cp[i].End, i-1, cp[i-1].End)
			break
		}
	}
	// No gaps on it: each of its ops starts when the dep before it ends (that is what makes it
	// critical), so their durations sum to the step.
	var busy units.Seconds
	for _, s := range cp {
		busy += s.End - s.Start
	}
	if busy != res.Step {
		t.Errorf("the critical path's ops sum to %v, want the step %v (no gaps on it)", busy, res.Step)
	}
}
