package search

import (
	"testing"
	"time"

	"github.com/tpsim/tpsim/program"

	"github.com/tpsim/tpsim/strategies"
)

// benchSpace is the acceptance case of issue 6: GPT-3 175B on 256 A100-80G, global batch 512.
func benchSpace(b *testing.B) *Evaluator {
	b.Helper()
	m := preset(b, "gpt3-175b")
	space, err := strategies.Enumerate(m, 256, strategies.EnumerateOptions{GBS: 512})
	if err != nil {
		b.Fatal(err)
	}
	ev, err := NewEvaluator(m, a100(b), space, 256)
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// BenchmarkEnumerate lists the 320,160 combinations of the acceptance case.
func BenchmarkEnumerate(b *testing.B) {
	m := preset(b, "gpt3-175b")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := strategies.Enumerate(m, 256, strategies.EnumerateOptions{GBS: 512}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluate prices every candidate of the acceptance case on one goroutine; the rate on
// several cores is BenchmarkPlanEvaluate in cmd/tpsim.
func BenchmarkEvaluate(b *testing.B) {
	ev := benchSpace(b)
	out := make([]Eval, len(ev.Space.Candidates))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ev.EvaluateRange(0, len(out), out)
		n += len(out)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "candidates/s")
}

// BenchmarkRank ranks and finds the Pareto front of the acceptance case.
func BenchmarkRank(b *testing.B) {
	ev := benchSpace(b)
	evals := ev.Evaluate()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Rank(ev.Space, evals, Time, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan is the whole planner on the acceptance case, the closed form alone (sim=off)
// and with the simulator re-ranking its best DefaultSimTop (sim=auto), side by side.
func BenchmarkPlan(b *testing.B) {
	m := preset(b, "gpt3-175b")
	hw := a100(b)
	for _, mode := range []string{SimOff, SimAuto} {
		b.Run("sim="+mode, func(b *testing.B) {
			n := 0
			for b.Loop() {
				pl, err := Plan(m, hw, Request{GPUs: 256, GlobalBatch: 512, Objective: Time, Top: 10, Sim: mode})
				if err != nil {
					b.Fatal(err)
				}
				n += len(pl.Ev.Space.Candidates)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "candidates/s")
		})
	}
}

// BenchmarkPlanSideBySide runs, in each iteration, the planner on the acceptance case twice: the
// closed form alone (sim=off, the search before the simulator re-ranked it) and the whole
// pipeline (closed form, then the simulator re-ranking the best DefaultSimTop), and reports
// each one's candidates per second and the ratio of their times.
func BenchmarkPlanSideBySide(b *testing.B) {
	m := preset(b, "gpt3-175b")
	hw := a100(b)
	var took [2]time.Duration
	n := 0
	for b.Loop() {
		for j, mode := range []string{SimOff, SimAuto} {
			t0 := time.Now()
			pl, err := Plan(m, hw, Request{GPUs: 256, GlobalBatch: 512, Objective: Time, Top: 10, Sim: mode})
			if err != nil {
				b.Fatal(err)
			}
			took[j] += time.Since(t0)
			if j == 0 {
				n += len(pl.Ev.Space.Candidates)
			}
		}
	}
	b.ReportMetric(float64(n)/took[0].Seconds(), "closed-form-candidates/s")
	b.ReportMetric(float64(n)/took[1].Seconds(), "full-pipeline-candidates/s")
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "full/closed-form")
	b.ReportMetric(took[1].Seconds()/float64(b.N), "full-s/op")
}

// BenchmarkEvaluateColdVsWarm prices every candidate of the acceptance case on one goroutine
// twice in each iteration: with the derived closed form's memo empty (every distinct per-layer
// configuration lowered and priced, what one plan pays) and again with it full (composition
// only). Besides wall-clock rates it reports candidates per second of this process's CPU time
// (user + system, the garbage collector's included), which other processes sharing the machine
// do not change, and the share of the cold pass the lowering takes.
func BenchmarkEvaluateColdVsWarm(b *testing.B) {
	var wall, cpu [2]time.Duration
	n := 0
	for b.Loop() {
		ev := benchSpace(b)
		out := make([]Eval, len(ev.Space.Candidates))
		for j := range 2 {
			t0, c0 := time.Now(), cpuTime()
			ev.EvaluateRange(0, len(out), out)
			wall[j] += time.Since(t0)
			cpu[j] += cpuTime() - c0
		}
		n += len(out)
	}
	b.ReportMetric(float64(n)/wall[0].Seconds(), "cold-candidates/s")
	b.ReportMetric(float64(n)/wall[1].Seconds(), "warm-candidates/s")
	if cpu[0] > 0 && cpu[1] > 0 {
		b.ReportMetric(float64(n)/cpu[0].Seconds(), "cold-candidates/cpu-s")
		b.ReportMetric(float64(n)/cpu[1].Seconds(), "warm-candidates/cpu-s")
		b.ReportMetric(1-cpu[1].Seconds()/cpu[0].Seconds(), "lowering-share")
	}
}

// benchTop is the acceptance case's closed-form top DefaultSimTop, lowered.
func benchTop(b *testing.B) (*Evaluator, []*program.Program) {
	b.Helper()
	ev := benchSpace(b)
	evals := EvaluateParallel(ev, 0)
	res, err := RankExact(ev, evals, Time, DefaultSimTop)
	if err != nil {
		b.Fatal(err)
	}
	lows := &lowerings{low: ev.lowerer}
	var ps []*program.Program
	for _, i := range res.Top {
		p, err := lows.get(ev.Space.Strategy(i))
		if err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ev, ps
}

// BenchmarkSimulateTop simulates the acceptance case's top DefaultSimTop Programs (lowered
// beforehand) on one goroutine.
func BenchmarkSimulateTop(b *testing.B) {
	ev, ps := benchTop(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range ps {
			if _, err := simulateProgram(p, ev.HW); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLowerTop lowers the acceptance case's top DefaultSimTop strategies on one goroutine.
func BenchmarkLowerTop(b *testing.B) {
	ev, ps := benchTop(b)
	b.ReportAllocs()
	for b.Loop() {
		lows := &lowerings{low: ev.lowerer}
		for _, p := range ps {
			if _, err := lows.get(p.Strategy); err != nil {
				b.Fatal(err)
			}
		}
	}
}
