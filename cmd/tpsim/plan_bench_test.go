package main

import (
	"fmt"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// BenchmarkPlanEvaluate prices every candidate of issue 6's acceptance case (GPT-3 175B on 256
// A100-80G, global batch 512) the way tpsim plan does, on one worker and on one worker per CPU,
// in one run: the candidates/s metric of each is the rate to compare with the 1M/s target.
func BenchmarkPlanEvaluate(b *testing.B) {
	m, err := model.Preset("gpt3-175b")
	if err != nil {
		b.Fatal(err)
	}
	hw, err := hardware.Preset("a100-80g")
	if err != nil {
		b.Fatal(err)
	}
	space, err := strategies.Enumerate(m, 256, strategies.EnumerateOptions{GBS: 512})
	if err != nil {
		b.Fatal(err)
	}
	ev, err := search.NewEvaluator(m, hw, space, 256)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 0} {
		name := fmt.Sprintf("workers=%d", workers)
		if workers == 0 {
			name = "workers=all"
		}
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n += len(search.EvaluateParallel(ev, workers))
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "candidates/s")
		})
	}
}

// BenchmarkPlanSearch is the whole search of the acceptance case as tpsim plan runs it (model
// and hardware loading, enumeration, pricing on every CPU, ranking, the top 10's full
// predictions and the explanation), without printing.
func BenchmarkPlanSearch(b *testing.B) {
	o := &planOptions{Target: cli.Target{Model: "gpt3-175b", Hardware: "a100-80g"}, GPUs: 256, GlobalBatch: 512, Objective: search.Time, Top: 10, Sim: "auto"}
	for b.Loop() {
		if _, err := o.search(); err != nil {
			b.Fatal(err)
		}
	}
}
