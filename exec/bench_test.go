package exec

import (
	"context"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// BenchmarkPipelineBubble runs a 4-stage pipeline on 8 microbatches (one layer of a Llama-shaped
// model per stage, about 3 ms of compute per microbatch and stage on this machine with exec's
// GEMM; 5 ms or more with gonum's) and reports
// the bubble measured on the median step (Result.BubbleFraction: each pipeline rank's waits in its
// receives over its step) beside (p-1)/(m+p-1) = 3/11 (Narayanan et al. 2021 §2.2, GPipe and
// 1F1B alike). It is a benchmark, not a test: with 4 ranks on 2 cores the ranks share the cores,
// and a rank whose input has arrived may wait for a core, up to Go's 10 ms time slice, inside its
// receive, which lengthens the measured idle share the shorter the stages' compute (55-57% here
// against the formula's 27.3% on 2026-12-02, 30% when products ran at gonum's speed); run it
// where every rank has a core for the figure the formula describes.
//
//	go test -run - -bench PipelineBubble -benchtime 3x ./exec
func BenchmarkPipelineBubble(b *testing.B) {
	m, err := model.Transformer{Hidden: 128, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 32, FFN: 512, Vocab: 64, Seq: 64,
		Gated: true, RMSNorm: true, Batch: 8}.Build("llama-bubble", "llama")
	if err != nil {
		b.Fatal(err)
	}
	for _, sched := range []strategies.Schedule{strategies.ScheduleGPipe, strategies.Schedule1F1B} {
		b.Run(string(sched), func(b *testing.B) {
			st, err := strategies.Parse("pp=4,mbs=1,optimizer=sgd,schedule=" + string(sched))
			if err != nil {
				b.Fatal(err)
			}
			var sum float64
			for i := 0; i < b.N; i++ {
				res, err := Run(context.Background(), Config{Model: m, Strategy: st.Resolve(m), Steps: 4, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				sum += res.BubbleFraction
			}
			b.ReportMetric(100*sum/float64(b.N), "bubble_%")
			b.ReportMetric(100*3.0/11, "theory_%")
		})
	}
}
