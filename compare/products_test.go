package compare

import (
	"context"
	"testing"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// TestTimeProducts: compare times every product of its points' linears that the profile lacks,
// once each, on a copy of the profile; a GPU profile is left as it is.
func TestTimeProducts(t *testing.T) {
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
	hw := &hardware.Hardware{Name: "cpu", Cores: 2, GEMMParallelMACs: 1 << 25,
		Efficiency: hardware.Efficiency{GEMMTimes: []hardware.GEMMTime{{M: 10, K: 100, N: 1000, TransB: true, Seconds: 1}}}}
	got, err := TimeProducts(context.Background(), hw, pts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hw.Efficiency.GEMMTimes) != 1 {
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
	if s, _ := got.Efficiency.Measured(hw.Efficiency.GEMMTimes[0]); s != 1 {
		t.Errorf("the profile's own time became %v", s)
	}
	// dp=1 and dp=2 (10 and 5 rows per rank), two linears each: their forwards, their weight
	// gradients and the second one's input gradient (the first's input is data), 5 per mesh.
	if len(seen) != 10 || len(got.Efficiency.GEMMTimes) != len(seen) {
		t.Errorf("%d distinct products, %d timed; want 10 and 10", len(seen), len(got.Efficiency.GEMMTimes))
	}
	gpu := &hardware.Hardware{Name: "gpu"}
	if g, err := TimeProducts(context.Background(), gpu, pts, nil); err != nil || g != gpu {
		t.Errorf("a GPU profile: %v, %v; want it back unchanged", g, err)
	}
}
