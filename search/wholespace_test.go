package search

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// The closed form derived from the Program (costmodel.Derived, which the search prices every
// candidate with) equals Predict of the Program lowered whole on every candidate of whole search
// spaces: every strategy family the enumeration produces (ZeRO 0-3, tp, sp, cp, pp with every
// schedule and vpp, uneven stages, recompute modes, overlap on and off), a model whose gradient
// buckets span layers, tied embeddings, and a model of two layers.
func TestDerivedEqualsPredictOnWholeSpaces(t *testing.T) {
	mid, err := model.Transformer{Hidden: 256, Layers: 10, Heads: 8, KVHeads: 4, HeadDim: 32, FFN: 512, Vocab: 512, Seq: 64,
		Gated: true, RMSNorm: true, Tied: true, Batch: 16}.Build("llama-mid", "llama")
	if err != nil {
		t.Fatal(err)
	}
	hw := a100(t)
	for _, c := range []struct {
		m    *model.Model
		gpus int
		o    strategies.EnumerateOptions
	}{
		{tinyGPT(t), 8, strategies.EnumerateOptions{GBS: 16}},
		{mid, 16, strategies.EnumerateOptions{GBS: 32, Fix: mustFix(t, "bucket_mb=1")}},
		// DeepSpeed 2021's list collectives: ZeRO-3's gathers pay their copies in both.
		{tinyGPT(t), 8, strategies.EnumerateOptions{GBS: 16, Fix: mustFix(t, "tensorlists=on")}},
		// Two layers: too few for Derived to shorten a pipeline, so it lowers them whole.
		{preset(t, "gpt-tiny"), 8, strategies.EnumerateOptions{GBS: 16}},
	} {
		space, err := strategies.Enumerate(c.m, c.gpus, c.o)
		if err != nil {
			t.Fatal(err)
		}
		der, err := costmodel.NewDerived(c.m, hw)
		if err != nil {
			t.Fatal(err)
		}
		low := program.NewLowerer(c.m)
		n, uneven := 0, 0
		t0 := time.Now()
		for i := range space.Candidates {
			st := space.Strategy(i)
			if c.m.Transformer.Layers%(st.Mesh.PP*st.VPP) != 0 {
				uneven++
			}
			b, err2 := der.Totals(st)
			p, err1 := low.Lower(st)
			var a *costmodel.Result
			if err1 == nil {
				a, err1 = costmodel.Predict(p, hw)
			}
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s %s: Predict error %v, derived %v", c.m.Name, st, err1, err2)
			}
			if err1 != nil {
				continue
			}
			n++
			if a.Memory != b.Memory || a.Feasible != b.Feasible || a.Devices != b.Devices {
				t.Fatalf("%s %s: Predict memory %+v, derived %+v", c.m.Name, st, a.Memory, b.Memory)
			}
			for _, p := range [][2]float64{
				{float64(a.Time.Step), float64(b.Time.Step)}, {float64(a.Time.Compute), float64(b.Time.Compute)},
				{float64(a.Time.CommExposed), float64(b.Time.CommExposed)}, {float64(a.Time.Bubble), float64(b.Time.Bubble)},
				{float64(a.Time.Optimizer), float64(b.Time.Optimizer)}, {float64(a.FLOPs.Hardware), float64(b.FLOPs.Hardware)},
				{float64(a.FLOPs.Model), float64(b.FLOPs.Model)}, {a.MFU, b.MFU},
			} {
				// Derived multiplies a layer's price by the layers where Predict adds them.
				if !near(p[0], p[1], 1e-9) {
					t.Fatalf("%s %s: Predict %+v, derived %+v", c.m.Name, st, a, b)
				}
			}
			for d, dim := range strategies.DimOrder {
				if !near(float64(a.CommBytes[dim]), float64(b.CommBytes[d]), 1e-12) || !near(float64(a.CommTime[dim]), float64(b.CommTime[d]), 1e-9) {
					t.Fatalf("%s %s: Predict comm %v %v, derived %v %v", c.m.Name, st, a.CommBytes, a.CommTime, b.CommBytes, b.CommTime)
				}
			}
			program.Recycle(p)
		}
		if n < 100 || c.m.Name == "gpt-tiny6" && uneven == 0 {
			t.Errorf("%s: only %d candidates compared, %d of uneven stages", c.m.Name, n, uneven)
		}
		t.Logf("%s on %d: %d candidates equal (%d of uneven stages), %s", c.m.Name, c.gpus, n, uneven, time.Since(t0))
	}
}

// RankExact, which refines lower bounds only where it names a candidate, ranks as Rank does on
// every step exact, for every objective.
func TestRankExactEqualsRankOnExactSteps(t *testing.T) {
	hw := a100(t)
	for _, m := range []*model.Model{tinyGPT(t), preset(t, "gpt3-1.3b")} {
		gpus, gbs := 8, 16
		if m.Name == "gpt3-1.3b" {
			gpus, gbs = 64, 128
		}
		space, err := strategies.Enumerate(m, gpus, strategies.EnumerateOptions{GBS: gbs})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := NewEvaluator(m, hw, space, gpus)
		if err != nil {
			t.Fatal(err)
		}
		exact := ev.Evaluate()
		bounds := 0
		for _, obj := range Objectives {
			evals := make([]Eval, len(exact))
			ev.EvaluateRange(0, len(evals), evals)
			for i := range evals {
				if evals[i].Bound {
					bounds++
					if evals[i].Step > exact[i].Step*(1+1e-12) {
						t.Fatalf("%s: bound %v above the step %v", space.Strategy(i), evals[i].Step, exact[i].Step)
					}
				}
			}
			got, err := RankExact(ev, evals, obj, 10)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := Rank(space, exact, obj, 10)
			got.Folded, want.Folded = 0, 0 // a bound's twin is not folded until it is exact
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: RankExact %+v, Rank on exact steps %+v", m.Name, obj, got, want)
			}
			if a, b := Explain(ev, evals, got, got.Top), Explain(ev, exact, want, want.Top); !reflect.DeepEqual(a, b) {
				t.Errorf("%s %s: explanation\n%s\nwith exact steps\n%s", m.Name, obj, a, b)
			}
		}
		if bounds == 0 {
			t.Errorf("%s: no pipeline priced by its bound", m.Name)
		}
	}
}

// The planner's winner is the simulator's best of the closed form's top K, and the table's
// simulated column is the simulator's step of each row.
func TestPlanWinnerIsSimulatorsBestOfTopK(t *testing.T) {
	m, hw := tinyGPT(t), a100(t)
	const k = 20
	pl, err := Plan(m, hw, Request{GPUs: 8, GlobalBatch: 16, Objective: Time, Top: 5, Sim: SimOn, SimTop: k})
	if err != nil {
		t.Fatal(err)
	}
	fix, _ := DefaultStack(m, hw, strategies.Fix{}) // the knobs Plan assumes (attn=flash on an A100)
	ev, evals := evaluated(t, m, hw, 8, strategies.EnumerateOptions{GBS: 16, Fix: fix})
	space := ev.Space
	res, err := Rank(space, evals, Time, k)
	if err != nil {
		t.Fatal(err)
	}
	best, bestStep := "", 0.0
	for _, i := range res.Top {
		st := space.Strategy(i)
		s, err := Simulate(m, hw, st)
		if err != nil {
			t.Fatal(err)
		}
		if best == "" || float64(s) < bestStep {
			best, bestStep = st.String(), float64(s)
		}
	}
	if pl.Out.Simulated != k {
		t.Fatalf("simulated %d, want %d", pl.Out.Simulated, k)
	}
	if w := pl.Out.Top[0]; w.Strategy != best || w.SimStep == nil || *w.SimStep != bestStep {
		t.Errorf("winner %s (simulated %v), the simulator's best of the top %d is %s at %v", w.Strategy, w.SimStep, k, best, bestStep)
	}
}

// Over the closed form's best 100 candidates, the closed form is within 0.7% of the simulator with
// overlap on and equal to it with overlap off, every candidate, with no exception for the ones
// the planner re-ranks by the simulator: the two follow one set of overlap rules (DDP buckets
// behind the last backward, each link taking the collective that became ready first, so a later
// chunk's buckets go before an earlier chunk's under interleaving; ZeRO-3's gathers and
// reduce-scatters on the data-parallel link, one at a time in the order they become ready, the
// gathers released Prefetch units ahead, laid out by the same walk, costmodel's linkWalk). On
// small models here (not on gpt-tiny-sized shapes, whose ops are all latency). Measured on
// 2026-12-07 (go test ./search -run TestClosedFormNearSimulatorOverTop100 -v with the tolerance
// at 0): the closed form is at or below the simulator, worst llama-mid pp=2,dp=8 interleaved
// (vpp=5) -0.59%, llama-mid pp=4 1F1B and GPipe -0.37% to -0.40%, gpt3-1.3b -0.39%; every
// ZeRO-3 candidate 0.0000% (the closed form walks the link as the simulator does). (This comment
// said 0.09% worst before; that figure was stale.) The tolerance, 0.7%, is the worst measured
// plus about 0.1 point: the 1% the test had left room for a new 0.4-point gap to pass unseen.
func TestClosedFormNearSimulatorOverTop100(t *testing.T) {
	mid, err := model.Transformer{Hidden: 256, Layers: 10, Heads: 8, KVHeads: 4, HeadDim: 32, FFN: 512, Vocab: 512, Seq: 64,
		Gated: true, RMSNorm: true, Tied: true, Batch: 16}.Build("llama-mid", "llama")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    *model.Model
		gpus int
		gbs  int
	}{{mid, 16, 32}, {preset(t, "gpt3-1.3b"), 8, 16}} {
		// attn=eager, the attention these figures were measured with. Under the planner's
		// default attn=flash, llama-mid's pp=8,dp=2,mbs=16 (1f1b and gpipe, overlap=off) are 1%
		// apart (closed form 2.2334 ms, simulated 2.2569 ms): a difference of costmodel and sim
		// under flash, outside this package, reported for its owners.
		pl, err := Plan(c.m, a100(t), Request{GPUs: c.gpus, GlobalBatch: c.gbs, Objective: Time, Top: 100, Sim: SimOn, SimTop: 100, Fix: mustFix(t, "attn=eager")})
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.Out.Top) != 100 {
			t.Fatalf("%s: %d candidates, want 100", c.m.Name, len(pl.Out.Top))
		}
		for _, e := range pl.Out.Top {
			if e.SimStep == nil {
				t.Fatalf("%s: %s not simulated", c.m.Name, e.Strategy)
			}
			cf, sim := float64(e.Time.Step), *e.SimStep
			tol := 0.007
			if strings.Contains(e.Strategy, ",overlap=off") {
				tol = 1e-9
			}
			if math.Abs(cf-sim) > tol*sim {
				t.Errorf("%s %s (closed-form rank %d): closed form %v, simulated %v (%.2g%%)", c.m.Name, e.Strategy, e.Rank, cf, sim, 100*(cf-sim)/sim)
			}
		}
	}
}
