package costmodel

import (
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// benchCase is Narayanan et al. 2021 Table 2's GPT-3 175B row: PTD-P on 1536 A100s.
func benchCase(b *testing.B) (*model.Model, strategies.Strategy) {
	b.Helper()
	m, err := model.Preset("gpt3-175b")
	if err != nil {
		b.Fatal(err)
	}
	st, err := strategies.Parse("dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full")
	if err != nil {
		b.Fatal(err)
	}
	return m, st
}

// BenchmarkEstimate is the closed form with the whole Result (strings and maps as Predict's), from
// an empty memo: every piece lowered and priced.
func BenchmarkEstimate(b *testing.B) {
	m, st := benchCase(b)
	hw := loadHW(b, "a100-80g")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Estimate(m, st, hw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDerivedTotals is the closed form's numbers only, its pieces memoized after the first
// call: what a search loop pays for a strategy whose per-layer configuration it priced before.
func BenchmarkDerivedTotals(b *testing.B) {
	m, st := benchCase(b)
	e, err := NewDerived(m, loadHW(b, "a100-80g"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Totals(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPredict builds the Program and prices it: the baseline the closed form replaces.
func BenchmarkPredict(b *testing.B) {
	m, st := benchCase(b)
	hw := loadHW(b, "a100-80g")
	b.ReportAllocs()
	for b.Loop() {
		p, err := program.Lower(m, st)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Predict(p, hw); err != nil {
			b.Fatal(err)
		}
	}
}
