package costmodel

import (
	"math"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// These tests hold the closed form's formulas to numbers worked out by hand (the derivation is
// in each comment), so that changing a formula fails a test even where every copy of it changes
// alike.

func pipeline(t *testing.T, schedule strategies.Schedule, pp, vpp, m int, f, b units.Seconds) (Totals, []Memory) {
	t.Helper()
	st := strategies.Default(strategies.Mesh{PP: pp, DP: 1, CP: 1, TP: 1})
	st.Schedule, st.VPP, st.GBS, st.Seq = schedule, vpp, m, 1
	pieces := make([]Piece, pp*vpp)
	for i := range pieces {
		pieces[i] = Piece{FCompute: f, BCompute: b, Act: 1000}
	}
	var tot Totals
	mem, err := compose(st, m, 2, 2, 12, pieces, &tot, composeOpts{ranks: true})
	if err != nil {
		t.Fatal(err)
	}
	return tot, mem
}

// The pipeline bubble (Narayanan et al. 2021 §2.2): p stages of forward f and backward b per
// microbatch, m microbatches. GPipe and 1F1B both take (m + p - 1)(f + b): for p=4, m=8, f=1,
// b=2 that is 11 x 3 = 33, of which m(f + b) = 24 is compute and 9 bubble. Interleaved with v
// chunks of f/v and b/v: (m + (p-1)/v)(f + b) = (8 + 3/2) x 3 = 28.5, bubble 4.5. One stage:
// no bubble, m(f + b) = 24.
func TestPipelineBubbleHandDerived(t *testing.T) {
	for _, c := range []struct {
		schedule            strategies.Schedule
		pp, vpp             int
		f, b, step, compute units.Seconds
	}{
		{strategies.ScheduleGPipe, 4, 1, 1, 2, 33, 24},
		{strategies.Schedule1F1B, 4, 1, 1, 2, 33, 24},
		{strategies.ScheduleInterleaved, 4, 2, 0.5, 1, 28.5, 24},
		{strategies.Schedule1F1B, 1, 1, 1, 2, 24, 24},
	} {
		tot, _ := pipeline(t, c.schedule, c.pp, c.vpp, 8, c.f, c.b)
		if math.Abs(float64(tot.Time.Step-c.step)) > 1e-12 || math.Abs(float64(tot.Time.Compute-c.compute)) > 1e-12 ||
			math.Abs(float64(tot.Time.Bubble-(c.step-c.compute))) > 1e-12 {
			t.Errorf("%s pp=%d vpp=%d: step %v compute %v bubble %v, by hand %v %v %v", c.schedule, c.pp, c.vpp,
				tot.Time.Step, tot.Time.Compute, tot.Time.Bubble, c.step, c.compute, c.step-c.compute)
		}
	}
}

// Activations in flight per pipeline rank (Narayanan et al. 2021 §2.2; Korthikanti et al. 2022
// §4.2.3): 1F1B keeps p - r microbatches on rank r (p=4: 4, 3, 2, 1), at most m; GPipe all m;
// interleaved 1F1B (p - r)(1 + (p-1)/(p v)) per chunk, for p=4, v=2: 1 + 3/8 = 1.375, so 5.5,
// 4.125, 2.75, 1.375 microbatches of each of the rank's 2 chunks. With 1000 bytes saved per
// microbatch per chunk, rank 0 holds 4000 (1F1B), 8000 (GPipe, m=8), 11000 (interleaved).
func TestInFlightActivationsHandDerived(t *testing.T) {
	for _, c := range []struct {
		schedule strategies.Schedule
		vpp, m   int
		want     []units.Bytes
	}{
		{strategies.Schedule1F1B, 1, 8, []units.Bytes{4000, 3000, 2000, 1000}},
		{strategies.Schedule1F1B, 1, 2, []units.Bytes{2000, 2000, 2000, 1000}},
		{strategies.ScheduleGPipe, 1, 8, []units.Bytes{8000, 8000, 8000, 8000}},
		{strategies.ScheduleInterleaved, 2, 8, []units.Bytes{11000, 8250, 5500, 2750}},
	} {
		_, mem := pipeline(t, c.schedule, 4, c.vpp, c.m, 1, 2)
		for r, w := range c.want {
			if mem[r].Activations != w {
				t.Errorf("%s vpp=%d m=%d: rank %d holds %v of activations, by hand %v", c.schedule, c.vpp, c.m, r, mem[r].Activations, w)
			}
		}
	}
}

// Collectives on two levels (alpha-beta per level, efficiency 1): 8 GPUs per node joined at
// 100 GB/s with 1 us per ring step, nodes joined at 10 GB/s with 10 us per step. The levels'
// names are no GPU link's, so CollectiveTime prices the plain ring (the host profile's path);
// NCCL's protocol model on top of the same bytes and steps is checked by hand in nccl_test.go.
//   - All-gather of n = 8 GB inside one node, g = 8: 7 steps of 1 us and 7/8 n at 100 GB/s:
//     7e-6 + 0.07 s.
//   - All-reduce of n = 8 GB over g = 16 consecutive GPUs (two nodes): hierarchical, the
//     reduce-scatter and all-gather inside each node move 2 x 7/8 n at 100 GB/s (0.14 s), the
//     all-reduce across the 2 nodes moves 2 x 1/2 x n/8 at 10 GB/s (0.1 s) per GPU; the ring's
//     2(g-1) = 30 steps each cost the slower level's 10 us: 0.2403 s in all.
//   - The same over a group of stride 8 (one GPU per node, 16 nodes): a flat ring across nodes,
//     30 steps of 10 us and 2 x 15/16 n at 10 GB/s: 3e-4 + 1.5 s.
func TestHierarchicalCollectiveHandDerived(t *testing.T) {
	hw := &hardware.Hardware{Name: "two-level", Levels: []hardware.Level{
		{Name: "fast", Size: 8, Bandwidth: 100e9, Latency: 1e-6, Efficiency: 1},
		{Name: "slow", Size: 0, Bandwidth: 10e9, Latency: 10e-6, Efficiency: 1},
	}}
	for _, c := range []struct {
		name      string
		kind      program.OpKind
		g, stride int
		want      float64
	}{
		{"all-gather in a node", program.OpAllGather, 8, 1, 7e-6 + 0.07},
		{"all-reduce over two nodes", program.OpAllReduce, 16, 1, 300e-6 + 0.14 + 0.1},
		{"all-reduce, one GPU per node", program.OpAllReduce, 16, 8, 300e-6 + 1.5},
	} {
		got := float64(CollectiveTime(hw, c.kind, c.g, c.stride, 8e9))
		if math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("%s: %.9g s, by hand %.9g s", c.name, got, c.want)
		}
	}
}

// compose charges a ZeRO-3 stage's walked link time per microbatch under overlap and all of its
// link time without: one stage, 3 microbatches of forward 10 and backward 20, link time 4
// forward and 6 backward of which the walk leaves 1 and 2 exposed: 3 x (1 + 2) = 9, step
// 3 x 30 + 9 = 99; without overlap 3 x (4 + 6) = 30, step 120.
func TestZeRO3LinkComposedHandDerived(t *testing.T) {
	for _, c := range []struct {
		overlap       bool
		exposed, step units.Seconds
	}{{true, 9, 99}, {false, 30, 120}} {
		st := strategies.Default(strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 1})
		st.ZeRO, st.Overlap, st.GBS, st.MBS, st.Seq = 3, c.overlap, 6, 1, 1
		p := Piece{FCompute: 10, BCompute: 20, FOverlap: 4, BOverlap: 6, FLink: 1, BLink: 2}
		var tot Totals
		if _, err := compose(st, 3, 2, 2, 12, []Piece{p}, &tot, composeOpts{}); err != nil {
			t.Fatal(err)
		}
		if tot.Time.CommExposed != c.exposed || tot.Time.Step != c.step {
			t.Errorf("overlap %v: exposed %v step %v, want %v and %v", c.overlap, tot.Time.CommExposed, tot.Time.Step, c.exposed, c.step)
		}
	}
}

// DDP's buckets beside the last backward, with the overlap slowdown σ = 0.25, by hand: a
// backward of 20 and buckets of 12 (the last 2): the 10 before the last run beside the backward,
// which they lengthen by 10 x 0.2 = 2 (slowedBy), to 22; the last bucket then takes 2: 4 exposed
// (2 without the slowdown), step 10 + 20 + 4 = 34. Buckets of 40 outlast the backward, slowed
// whole to 25: the step is the buckets' 40 after the forward, 20 exposed either way.
func TestDDPOverlapSlowdownHandDerived(t *testing.T) {
	for _, c := range []struct {
		dp, sigma     units.Seconds
		exposed, step units.Seconds
	}{{12, 0.25, 4, 34}, {12, 0, 2, 32}, {40, 0.25, 20, 50}, {40, 0, 20, 50}} {
		st := strategies.Default(strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 1})
		st.Overlap, st.GBS, st.MBS, st.Seq = true, 2, 1, 1
		p := Piece{FCompute: 10, BCompute: 20, DPComm: c.dp, LastBucket: 2}
		var tot Totals
		if _, err := compose(st, 1, 2, 2, 12, []Piece{p}, &tot, composeOpts{sigma: float64(c.sigma)}); err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(tot.Time.CommExposed-c.exposed)) > 1e-12 || math.Abs(float64(tot.Time.Step-c.step)) > 1e-12 {
			t.Errorf("buckets %v, slowdown %v: exposed %v step %v, want %v and %v", c.dp, c.sigma, tot.Time.CommExposed, tot.Time.Step, c.exposed, c.step)
		}
	}
}

// The link's walk, by hand, on three units A, B, C of one gather and one main op each (gather 1,
// compute 5; 1, 5; 6, 1), with a reduce-scatter of 4 after A's op or without. Prefetch 1: A's
// gather runs [0, 1], A [1, 6]; B's gather is released as A starts, [1, 2]; B starts at 6 and
// releases C's gather, [6, 12]; B [6, 11]; C waits for its gather, [12, 13]: 13 - 11 = 2
// exposed. Prefetch 2: A's and B's gathers from 0, [0, 1] and [1, 2]; A's start (1) releases
// C's, [2, 8]; B [6, 11], C [11, 12]: 1. With the reduce-scatter, ready when A ends (6):
// prefetch 1 runs it [6, 10], before C's gather (released at B's start, also 6, but later in
// the order: the simulator breaks the tie by node order), which then runs [10, 16]: C [16, 17],
// 6 exposed; prefetch 2 runs it after C's gather, [8, 12]: C [11, 12], the link ends at 12: 1.
// The held gather bytes (A 10, B 20, C 30 bytes) are those of a unit and the next one at
// prefetch 1 (50), of three at prefetch 2 (60), of one alone without prefetch (30).
func TestLinkWalkHandDerived(t *testing.T) {
	items := func(reduce bool) []linkItem {
		l := []linkItem{{d: 1, bytes: 10, kind: linkGather, unit: 0}, {d: 5, unit: 0}}
		if reduce {
			l = append(l, linkItem{d: 4, kind: linkReduce, unit: 0})
		}
		return append(l, linkItem{d: 1, bytes: 20, kind: linkGather, unit: 1}, linkItem{d: 5, unit: 1},
			linkItem{d: 6, bytes: 30, kind: linkGather, unit: 2}, linkItem{d: 1, unit: 2})
	}
	for _, c := range []struct {
		reduce bool
		depth  int
		want   units.Seconds
	}{{false, 1, 2}, {false, 2, 1}, {true, 1, 6}, {true, 2, 1}} {
		it := items(c.reduce)
		g := gatherUnits(it)
		if got := linkWalk(it, &g, c.depth, 0); got != c.want {
			t.Errorf("reduce-scatter %v, prefetch %d: %v exposed, by hand %v", c.reduce, c.depth, got, c.want)
		}
	}
	// With the overlap slowdown σ = 0.25 the main ops run at 0.8 of their speed while the link is
	// busy, each lengthened by 0.2 s per second of link beside it (slowedBy). Prefetch 1: A [1,
	// 6.2] beside B's gather [1, 2]; B from 6.2 beside C's gather [6.2, 12.2], 5 + 6 x 0.2 = 6.2
	// long, to 12.4; C [12.4, 13.4]: 2.4 exposed. Prefetch 2: A from 1 beside the link busy until
	// 8 (B's and C's gathers), 5 x 1.25 = 6.25 long, to 7.25; B beside 0.75 s of it, 5.15 long, to
	// 12.4; C [12.4, 13.4]: 2.4.
	for _, c := range []struct {
		depth int
		want  units.Seconds
	}{{1, 2.4}, {2, 2.4}} {
		it := items(false)
		g := gatherUnits(it)
		if got := linkWalk(it, &g, c.depth, 0.25); math.Abs(float64(got-c.want)) > 1e-12 {
			t.Errorf("overlap slowdown 0.25, prefetch %d: %v exposed, by hand %v", c.depth, got, c.want)
		}
	}
	it := items(false)
	g := gatherUnits(it)
	for ahead, want := range []units.Bytes{30, 50, 60} {
		if got := g.held(ahead); got != want {
			t.Errorf("%d units ahead: %v bytes held, by hand %v", ahead, got, want)
		}
	}
}
