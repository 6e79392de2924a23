package compare

import (
	"context"
	"slices"
	"testing"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// TestTimeKernels: compare times every product of its points' linears, once each, and the kernels
// priced by rates, on a copy of the profile that keeps the profile's other products; a GPU
// profile is left as it is.
func TestTimeKernels(t *testing.T) {
	m, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	var pts []Point
	for _, mesh := range []string{"dp=1", "dp=2"} {
		ms, err := strategies.ParseMesh(mesh)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := exec.MeshConfig(m, ms, exec.MeshSettings{Optimizer: strategies.OptimizerSGD, Attention: strategies.AttentionEager, Steps: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := exec.Lowered(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, Point{Program: p})
	}
	other := hardware.GEMMTime{M: 3, K: 5, N: 7, Seconds: 2}
	hw := &hardware.Hardware{Name: "cpu", Cores: 2, GEMMParallelMACs: 1 << 25,
		Efficiency: hardware.Efficiency{GEMMTimes: []hardware.GEMMTime{{M: 10, K: 100, N: 1000, TransB: true, Seconds: 1}, other}}}
	got, err := TimeKernels(context.Background(), hw, pts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hw.Efficiency.GEMMTimes) != 2 || hw.Efficiency.KernelRates != nil {
		t.Fatalf("the profile itself changed: %d products", len(hw.Efficiency.GEMMTimes))
	}
	// Every product of every linear is priced from a measurement, the one given kept as it was.
	seen := map[hardware.GEMMTime]bool{}
	for _, pt := range pts {
		for _, ops := range [][]program.Op{pt.Program.Stages[0].Forward, pt.Program.Stages[0].Backward} {
			for i := range ops {
				if ops[i].Kind != program.OpLinear {
					continue
				}
				for _, g := range costmodel.HostGEMMs(&ops[i]) {
					s, ok := got.Efficiency.Measured(g)
					if !ok || !(s > 0) {
						t.Errorf("product %+v not timed", g)
					}
					seen[g] = true
				}
			}
		}
	}
	if s, _ := got.Efficiency.Measured(hw.Efficiency.GEMMTimes[0]); s == 1 {
		t.Errorf("a product the points run kept the profile's time instead of being timed again")
	}
	if s, ok := got.Efficiency.Measured(other); !ok || s != 2 {
		t.Errorf("the profile's product no point runs: %v, %v; want it kept at 2 s", s, ok)
	}
	if got.Efficiency.KernelRates[hardware.KernelGELU] <= 0 || got.Efficiency.KernelRates[hardware.KernelAdam] <= 0 {
		t.Errorf("kernel rates not timed: %v", got.Efficiency.KernelRates)
	}
	// dp=1 and dp=2 (10 and 5 rows per rank), two linears each: their forwards, their weight
	// gradients and the second one's input gradient (the first's input is data), 5 per mesh.
	if len(seen) != 10 || len(Products(pts)) != 10 || len(got.Efficiency.GEMMTimes) != 11 {
		t.Errorf("%d distinct products, %d listed, %d in the profile; want 10, 10 and 11 (the other kept)", len(seen), len(Products(pts)), len(got.Efficiency.GEMMTimes))
	}
	// The sharing of the points' 2 ranks measured again: met at least unmet, both at least 1.
	if len(got.Slowdown) != 2 || len(got.UnmetSlowdown) != 2 || len(got.MeetOverhead) != 2 ||
		!(got.UnmetSlowdown[1] >= 1) || got.UnmetSlowdown[1] > got.Slowdown[1] || got.MeetOverhead[1] < 0 {
		t.Errorf("sharing of 2 ranks: slowdown %v, unmet %v, meeting %v", got.Slowdown, got.UnmetSlowdown, got.MeetOverhead)
	}
	gpu := &hardware.Hardware{Name: "gpu"}
	if g, err := TimeKernels(context.Background(), gpu, pts, nil); err != nil || g != gpu {
		t.Errorf("a GPU profile: %v, %v; want it back unchanged", g, err)
	}
}

// TestWithEntries: measured entries replace the table's, which grows with its last entry.
func TestWithEntries(t *testing.T) {
	got := withEntries([]float64{1, 1.1, 2.2}, map[int]float64{2: 1.05, 5: 4}, 1)
	want := []float64{1, 1.05, 2.2, 2.2, 4}
	if !slices.Equal(got, want) {
		t.Errorf("withEntries = %v, want %v", got, want)
	}
	if got := withEntries(nil, map[int]float64{2: 1.2}, 1); !slices.Equal(got, []float64{1, 1.2}) {
		t.Errorf("from no table: %v", got)
	}
}

// TestLower: a figure measured now is kept where it is lower than the profile's, else the
// profile's, and kept as it is where the profile has none.
func TestLower(t *testing.T) {
	got := lower([]float64{1, 1.1, 2.2}, map[int]float64{2: 1.6, 3: 2.0, 5: 4})
	if got[2] != 1.1 || got[3] != 2.0 || got[5] != 4 || len(got) != 3 {
		t.Errorf("lower = %v, want 2: 1.1, 3: 2.0, 5: 4", got)
	}
}

// TestWithSharing: a profile's low met slowdown caps the unmet one measured now (the CI run that
// drew a negative exposed communication had unmet above met).
func TestWithSharing(t *testing.T) {
	hw := &hardware.Hardware{Slowdown: []float64{1, 1.05}, UnmetSlowdown: []float64{1, 1.02}, MeetOverhead: []units.Seconds{0, 3e-6}}
	sh := calibrate.Sharing{Slowdown: map[int]float64{2: 1.4, 4: 2.5}, Unmet: map[int]float64{2: 1.3, 4: 2.1}, Meeting: map[int]units.Seconds{2: 2e-6, 4: 50e-6}}
	slow, unmet, meet := withSharing(hw, sh)
	if !slices.Equal(slow, []float64{1, 1.05, 1.05, 2.5}) || !slices.Equal(unmet, []float64{1, 1.02, 1.02, 2.1}) || !slices.Equal(meet, []units.Seconds{0, 2e-6, 2e-6, 50e-6}) {
		t.Errorf("slowdown %v, unmet %v, meeting %v", slow, unmet, meet)
	}
	hw.UnmetSlowdown = nil
	if _, unmet, _ := withSharing(hw, sh); unmet[1] != 1.05 {
		t.Errorf("unmet 1.3 measured now against met 1.05 in the profile: %v, want capped at 1.05", unmet)
	}
}

// MedianProfile takes each timed figure's median over the profiles: products' times, kernel
// rates, both contention tables (the unmet one capped by the met one) and the meeting overheads.
func TestMedianProfile(t *testing.T) {
	g := hardware.GEMMTime{M: 8, K: 16, N: 32}
	mk := func(s units.Seconds, rate, slow, unmet float64, meet units.Seconds) *hardware.Hardware {
		h := &hardware.Hardware{Name: "host", Slowdown: []float64{1, slow}, UnmetSlowdown: []float64{1, unmet}, MeetOverhead: []units.Seconds{0, meet}}
		g := g
		g.Seconds = s
		h.Efficiency.GEMMTimes = []hardware.GEMMTime{g}
		h.Efficiency.KernelRates = map[hardware.Kernel]float64{hardware.KernelAdd: rate}
		return h
	}
	got := MedianProfile([]*hardware.Hardware{mk(1, 5, 1.2, 1.6, 3), mk(3, 1, 1.8, 1.9, 1), mk(2, 3, 1.5, 1.7, 2)})
	if s, _ := got.Efficiency.Measured(g); s != 2 || got.Efficiency.KernelRates[hardware.KernelAdd] != 3 {
		t.Errorf("product %v, rate %v; want the medians 2 and 3", s, got.Efficiency.KernelRates[hardware.KernelAdd])
	}
	if !slices.Equal(got.Slowdown, []float64{1, 1.5}) || !slices.Equal(got.UnmetSlowdown, []float64{1, 1.5}) || !slices.Equal(got.MeetOverhead, []units.Seconds{0, 2}) {
		t.Errorf("slowdown %v, unmet %v (capped by the met 1.5), meeting %v", got.Slowdown, got.UnmetSlowdown, got.MeetOverhead)
	}
}

// With Retime, Run times the kernels again before rounds 2 and 3 and predicts with the median of
// the three timings: the same predictions as one round with that median profile.
func TestRunPredictsWithTheMedianTiming(t *testing.T) {
	pts := points(t)
	scaled := func(k units.Seconds) *hardware.Hardware {
		h := *hostFixture(t)
		h.Efficiency.GEMMTimes = nil
		for _, g := range Products(pts) {
			g.Seconds = k * 1e-5
			h.Efficiency.GEMMTimes = append(h.Efficiency.GEMMTimes, g)
		}
		return &h
	}
	timings := []*hardware.Hardware{scaled(2), scaled(4)}
	calls := 0
	retime := func(context.Context) (*hardware.Hardware, error) {
		calls++
		return timings[calls-1], nil
	}
	res := &Results{Profile: scaled(1), Load: NewLoad(-1)}
	if _, err := Run(t.Context(), res, pts, Options{Rounds: 3, Retime: retime}); err != nil {
		t.Fatal(err)
	}
	want := &Results{Profile: scaled(2), Load: NewLoad(-1)}
	if _, err := Run(t.Context(), want, pts, Options{Rounds: 1}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("%d timings, want one before each of rounds 2 and 3", calls)
	}
	for i := range res.Rows {
		if got, w := res.Rows[i].Predicted.Time, want.Rows[i].Predicted.Time; got != w {
			t.Errorf("%s: predicted %+v, want %+v (the median timing's)", res.Rows[i].Label(), got, w)
		}
	}
	if s, _ := res.Profile.Efficiency.Measured(Products(pts)[0]); s != 2e-5 {
		t.Errorf("the results' profile times the first product at %v, want the median 2e-5", s)
	}
}
