package study

import (
	"context"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// benchPlan is one plan of the biggest cell of the shipped llama3 study: Llama 3 405B on 16,384
// H100, the study's batch, sequence and fixed options, on one goroutine as the study runs it.
func benchPlan(b *testing.B, sim string) {
	m, err := model.Preset("llama3-405b")
	if err != nil {
		b.Fatal(err)
	}
	hw, err := hardware.Preset("h100-sxm")
	if err != nil {
		b.Fatal(err)
	}
	fix, err := strategies.ParseFix("attn=flash,precision=mixed")
	if err != nil {
		b.Fatal(err)
	}
	req := search.Request{GPUs: 16384, GlobalBatch: 2048, Seq: 8192, Objective: search.Time, Top: 2, Fix: fix, Sim: sim, Workers: 1}
	for b.Loop() {
		if _, err := search.Plan(m, hw, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanLlama3405B16384SimOff and ...SimAuto side by side give the simulator's share of
// the biggest cell: go test -run x -bench PlanLlama3 -benchtime 3x ./study
func BenchmarkPlanLlama3405B16384SimOff(b *testing.B)  { benchPlan(b, search.SimOff) }
func BenchmarkPlanLlama3405B16384SimAuto(b *testing.B) { benchPlan(b, search.SimAuto) }

// BenchmarkLlama3Study runs the shipped study from scratch (every plan, both cores) and then
// resumed (every plan read back from cells.jsonl), with the report written each time:
// go test -run x -bench Llama3Study -benchtime 1x ./study
func BenchmarkLlama3Study(b *testing.B) {
	st, err := Load("../examples/studies/llama3.yaml", nil)
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, dir string) {
		res, err := Run(context.Background(), st, dir, Options{Version: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := NewReport(st, res, "bench", dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(dir, rep); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			run(b, b.TempDir())
		}
	})
	b.Run("resumed", func(b *testing.B) {
		dir := b.TempDir()
		run(b, dir)
		b.ResetTimer()
		for b.Loop() {
			run(b, dir)
		}
	})
}
