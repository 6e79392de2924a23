package costmodel

import (
	"fmt"
	"math"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// cpuProfile is a host-like profile: 2 shared cores, products from 2^25 multiply-adds split,
// a measured contention table and a fixed time per op.
func cpuProfile(t *testing.T) *hardware.Hardware {
	hw := *loadHW(t, "a100-80g")
	hw.Name, hw.Cores, hw.GEMMParallelMACs = "cpu", 2, 1<<25
	hw.Slowdown = []float64{1, 1.5, 2.5}
	hw.Efficiency.OpOverhead = 1e-6
	hw.Efficiency.GEMMTimes = []hardware.GEMMTime{
		{M: 10, K: 100, N: 1000, TransB: true, Seconds: 1e-3},                    // seed-mlp layer 0 forward
		{M: 1000, K: 10, N: 100, TransA: true, Accumulate: true, Seconds: 3e-3},  // its weight gradient
		{M: 10, K: 10, N: 1000, TransA: true, Accumulate: true, Seconds: 0.5e-3}, // layer 2's weight gradient
	}
	return &hw
}

// lowerCost lowers m under strategy s and returns the Program and its Coster on hw.
func lowerCost(t *testing.T, m *model.Model, s string, hw *hardware.Hardware) (*program.Program, *Coster) {
	t.Helper()
	st, err := strategies.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := program.Lower(m, st)
	if err != nil {
		t.Fatal(err)
	}
	co, err := NewCoster(p, hw)
	if err != nil {
		t.Fatal(err)
	}
	return p, co
}

func linearOps(t *testing.T, p *program.Program, module string) (fwd, bwd *program.Op) {
	s := p.Stages[0]
	for i := range s.Forward {
		if s.Forward[i].Kind == program.OpLinear && s.Forward[i].Module == module {
			fwd = &s.Forward[i]
		}
	}
	for i := range s.Backward {
		if s.Backward[i].Kind == program.OpLinear && s.Backward[i].Module == module {
			bwd = &s.Backward[i]
		}
	}
	if fwd == nil || bwd == nil {
		t.Fatalf("no linear %s in the Program", module)
	}
	return fwd, bwd
}

// TestHostLinearsAtMeasuredProducts: on a CPU profile a linear op costs the measured times of the
// products exec runs for it (forward x Wᵀ; backward dy W and the accumulated dyᵀ x), plus the
// per-op overhead, times the measured slowdown of the ranks computing at once; a product not
// timed is priced on the one-core curve (the peak over the cores).
func TestHostLinearsAtMeasuredProducts(t *testing.T) {
	hw := cpuProfile(t)
	m, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mesh string
		s    float64 // slowdown of that many ranks
		rows int
	}{{"dp=1", 1, 10}, {"dp=2", 1.5, 5}} {
		p, co := lowerCost(t, m, fmt.Sprintf("%s,precision=fp32,gbs=10,mbs=%d", c.mesh, c.rows), hw)
		fwd, bwd := linearOps(t, p, "0")
		if c.rows == 10 {
			// Hand values: 1 ms forward; backward 3 ms, the weight gradient only (the input is
			// data: no input gradient); each plus 1 µs.
			if bwd.GradInput {
				t.Fatal("layer 0 computes an input gradient for the data")
			}
			nearS(t, c.mesh+" layer 0 forward", co.Compute(fwd), 1e-3+1e-6)
			nearS(t, c.mesh+" layer 0 backward", co.Compute(bwd), 3e-3+1e-6)
			// Layer 2 backward: the weight gradient measured (0.5 ms), the input gradient
			// 10x1000x10 not: 2x10x1000x10 FLOPs at the fp32 peak over 2 cores times the GEMM
			// efficiency of that size.
			_, b2 := linearOps(t, p, "2")
			f := units.FLOPs(2 * 10 * 1000 * 10)
			peak, _ := hw.PeakFor("fp32")
			want := 0.5e-3 + float64(f)/(float64(peak)/2*hw.GEMMEfficiency(f)) + 1e-6
			nearS(t, c.mesh+" layer 2 backward", co.Compute(b2), units.Seconds(want))
			continue
		}
		// dp=2: 5 rows per rank, shapes the profile did not time; each op pays the measured
		// slowdown of 2 ranks at once, 1.5.
		one := *hw
		one.Slowdown = []float64{1, 1}
		co1, err := NewCoster(p, &one)
		if err != nil {
			t.Fatal(err)
		}
		nearS(t, c.mesh+" forward at the 2-rank slowdown", co.Compute(fwd), units.Seconds(c.s)*co1.Compute(fwd))
	}
}

// TestHostSplitProduct: a product of at least GEMMParallelMACs splits over the cores a rank has:
// one rank on 2 cores runs it in half its one-core time, two ranks each on one core.
func TestHostSplitProduct(t *testing.T) {
	hw := cpuProfile(t)
	m, err := model.MLP("wide", model.KindReLU, 1024, 1024, 1024)
	if err != nil {
		t.Fatal(err)
	}
	op := func(mesh string) (units.Seconds, units.Seconds) {
		p, co := lowerCost(t, m, mesh+",precision=fp32,gbs=2048,mbs=1024", hw)
		fwd, _ := linearOps(t, p, "0")
		return co.Compute(fwd), co.hostGEMMs(fwd)
	}
	got, one := op("dp=1")
	if macs := 1024 * 1024 * 1024; int64(macs) < hw.GEMMParallelMACs {
		t.Fatalf("1024^3 = %d multiply-adds does not split", macs)
	}
	nearS(t, "dp=1 split over 2 cores", got, one/2+1e-6)
	got2, one2 := op("dp=2")
	nearS(t, "dp=2 on one core each", got2, units.Seconds(1.5)*(one2+1e-6))
}

func nearS(t *testing.T, what string, got, want units.Seconds) {
	t.Helper()
	if math.Abs(float64(got-want)) > 1e-9*math.Abs(float64(want)) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// TestHostMeetingOverhead: on shared cores a blocking collective also pays the measured meeting
// overhead (the gradient all-reduce here: its ring time plus 5 µs).
func TestHostMeetingOverhead(t *testing.T) {
	hw := cpuProfile(t)
	hw.MeetOverhead = []units.Seconds{0, 5e-6}
	m, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	p, co := lowerCost(t, m, "dp=2,precision=fp32,gbs=10,mbs=5", hw)
	n := 0
	for _, op := range p.Stages[0].Optimizer {
		if op.Kind != program.OpAllReduce || op.Group < 2 {
			continue
		}
		n++
		ring := CollectiveTime(hw, op.Kind, op.Group, 1, op.FullBytes)
		nearS(t, "gradient all-reduce", co.Comm(&op), ring+5e-6)
	}
	if n == 0 {
		t.Fatal("no gradient all-reduce over dp in the Program")
	}
}

// TestRankSlowdown: ranks that meet at dp, cp or tp collectives pay the slowdown measured with
// meetings; a pipeline's ranks, which meet only point to point, the one measured without.
func TestRankSlowdown(t *testing.T) {
	hw := &hardware.Hardware{Cores: 2, Slowdown: []float64{1, 1.15}, UnmetSlowdown: []float64{1, 1.01}}
	for _, c := range []struct {
		mesh strategies.Mesh
		want float64
	}{{strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 1}, 1.15}, {strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 2}, 1.15}, {strategies.Mesh{PP: 2, DP: 1, CP: 1, TP: 1}, 1.01}, {strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 1}, 1}} {
		if got := RankSlowdown(hw, c.mesh); got != c.want {
			t.Errorf("%v: slowdown %v, want %v", c.mesh, got, c.want)
		}
	}
}

// A linear that full recompute replays in the backward is its forward product again, not the
// backward's two: on a CPU profile it costs what its forward costs (it carries Phase Backward,
// which priced it as dy W and dyᵀ x until HostGEMMs asked op.Differentiates).
func TestHostRecomputedLinearIsItsForward(t *testing.T) {
	hw := cpuProfile(t)
	p, co := lowerCost(t, testModels(t)["gpt"], "recompute=full,precision=fp32,mbs=2,gbs=2", hw)
	s := p.Stages[0]
	fwd := map[string]*program.Op{}
	for i := range s.Forward {
		if op := &s.Forward[i]; op.Kind == program.OpLinear {
			fwd[op.Module] = op
		}
	}
	n := 0
	for i := range s.Backward {
		op := &s.Backward[i]
		if op.Kind != program.OpLinear || !op.Recompute {
			continue
		}
		f := fwd[op.Module]
		if f == nil {
			t.Fatalf("recomputed %s has no forward", op.Module)
		}
		if g := HostGEMMs(op); len(g) != 1 || g[0] != HostGEMMs(f)[0] {
			t.Errorf("%s recomputed runs %+v, its forward %+v", op.Module, g, HostGEMMs(f))
		}
		if got, want := co.Compute(op), co.Compute(f); got != want {
			t.Errorf("%s recomputed costs %v, its forward %v", op.Module, got, want)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no recomputed linear: the test checks nothing")
	}
}
