package exec

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// A mismatch against single-device training, a divergence or a memory error is a failure.
func TestFailures(t *testing.T) {
	m, err := model.Load("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgFor(t, m, "dp=2", "", "sgd")
	res := &Result{Losses: []float64{1, 0.9}}
	if f := Failures(cfg, res, res, Match{}); len(f) != 0 {
		t.Errorf("a matching run fails: %v", f)
	}
	if f := Failures(cfg, res, res, Match{Worst: 2e-5, Where: "fc1.weight"}); len(f) != 1 || !strings.Contains(f[0], "does not match single-device training") || !strings.Contains(f[0], "at fc1.weight") {
		t.Errorf("a mismatch: %v", f)
	}
	if f := Failures(cfg, res, res, Match{Worst: math.NaN()}); len(f) != 1 || !strings.Contains(f[0], "does not match") {
		t.Errorf("a NaN difference must fail, got %v", f)
	}
	bad := &Result{Losses: []float64{1, math.Inf(1)}}
	if f := Failures(cfg, bad, res, Match{}); len(f) != 1 || f[0] != "diverged: the run's loss is +Inf at step 2 (lr 0.01); lower --lr" {
		t.Errorf("a diverged run: %v", f)
	}
	if f := Failures(cfg, res, bad, Match{}); len(f) != 1 || !strings.Contains(f[0], "single-device training's loss is +Inf") {
		t.Errorf("diverged single-device training: %v", f)
	}
	res.MemoryErrors = []string{"stage 0 holds x"}
	if f := Failures(cfg, res, res, Match{}); len(f) != 1 || !strings.Contains(f[0], "memory: stage 0 holds x") {
		t.Errorf("a memory error: %v", f)
	}
}

func TestLearningRate(t *testing.T) {
	for _, c := range []struct {
		lr   float64
		opt  strategies.Optimizer
		want float64
	}{{0, strategies.OptimizerSGD, 0.01}, {0, strategies.OptimizerAdam, 1e-3}, {0.5, strategies.OptimizerAdam, 0.5}} {
		if got := LearningRate(c.lr, c.opt); got != c.want {
			t.Errorf("LearningRate(%g, %s) = %g, want %g", c.lr, c.opt, got, c.want)
		}
	}
}

// seed-mlp (Linear(100,1000)-ReLU-Linear(1000,10), batch 10) with 0=colwise,2=rowwise over tp=2
// needs one all-reduce: the second Linear's partial [10,10] outputs in forward (the input needs
// no gradient, so backward needs none). A ring all-reduce of 400 bytes over 2 ranks sends
// 2(n-1)/n x 400 = 400 bytes per rank.
func TestCollectivesTutorialMLP(t *testing.T) {
	m, err := model.Load("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Lowered(cfgFor(t, m, "tp=2", "0=colwise,2=rowwise", "sgd"))
	if err != nil {
		t.Fatal(err)
	}
	got := Collectives(p)
	want := []CollectiveRecord{{Stage: 0, Phase: "forward", Kind: "all_reduce", Dim: "tp", Module: "2", Shape: []int{10, 10}, SentBytes: 400}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Collectives = %+v, want %+v", got, want)
	}
}

func TestNewReport(t *testing.T) {
	m, err := model.Load("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	cfg := cfgFor(t, m, "dp=2", "", "sgd")
	p, err := Lowered(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Program: p, Losses: []float64{2, math.NaN()}, Ranks: []RankResult{
		{Rank: 0, PeakBytes: map[string]int64{"params": 10, "peak": 30}, CommBytes: map[string]int64{"dp": 5}, CommByKind: map[string]int64{"all_reduce/dp": 5}},
		{Rank: 1, PeakBytes: map[string]int64{"params": 12, "peak": 20}, CommBytes: map[string]int64{"dp": 7}, CommByKind: map[string]int64{"all_gather/dp": 1, "all_reduce/dp": 7}},
	}}
	ref := &Result{Losses: []float64{2, 1.5}}
	rep := NewReport(cfg, res, ref)
	if rep.OK || len(rep.Failures) != 1 || !strings.HasPrefix(rep.Failures[0], "diverged: the run's loss is NaN at step 2") {
		t.Errorf("ok %v, failures %v", rep.OK, rep.Failures)
	}
	if rep.Plan != "none" || rep.Devices != 2 || rep.MemoryBytes["params"] != 12 || rep.MemoryBytes["peak"] != 30 || rep.CommBytes["dp"] != 7 {
		t.Errorf("plan %q, devices %d, memory %v, comm %v: want none, 2, the most loaded rank's per key", rep.Plan, rep.Devices, rep.MemoryBytes, rep.CommBytes)
	}
	if got := rep.CommKinds(); !reflect.DeepEqual(got, []string{"all_gather/dp", "all_reduce/dp"}) {
		t.Errorf("CommKinds = %v", got)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	// A diverged run still encodes: NaN is null; empty lists are [] and not null.
	for _, s := range []string{`"loss":[2,null]`, `"max_rel_diff_vs_single":null`, `"memory_errors":[]`, `"ok":false`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON lacks %s: %s", s, b)
		}
	}
}

func TestCheckSpec(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"dp=2", ""},
		{"dp=2,precision=fp32", ""},
		{"dp=2,overlap=off", ""},
		{"dp=2, Precision = Mixed", "precision=mixed is priced by 'tpsim predict', not executed"},
		{"dp=2,overlap=on", "overlap=on is priced by 'tpsim predict', not executed"},
		{"tp=2,tpoverlap=off", ""},
		{"tp=2,tpoverlap=on", "tpoverlap=on is priced by 'tpsim predict', not executed"},
		{"dp=2,zero=3,tensorlists=on", "tensorlists=on is priced by 'tpsim predict', not executed"},
		{"dp=2,zero=3,prefetch=1", ""},
		{"dp=2,zero=3,prefetch=2", "prefetch=2 is priced by 'tpsim predict', not executed"},
		{"tp=2,fusion=off", ""},
		{"tp=2,fusion=on", "fusion=on is priced by 'tpsim predict', not executed"},
		{"tp=2,compile=off", ""},
		{"tp=2,compile=on", "compile=on is priced by 'tpsim predict', not executed"},
		{"tp=2,kernels=fused", ""},
		{"tp=2,kernels=eager", "kernels=eager is priced by 'tpsim predict', not executed"},
	} {
		st, err := strategies.Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSpec(c.spec, st)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckSpec(%q) = %v, want %q", c.spec, err, c.want)
		}
	}
}
