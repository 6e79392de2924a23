package compare

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

func TestParseMeshesFamilies(t *testing.T) {
	if got, err := ParseMeshes(" 1,2 ,64"); err != nil || !reflect.DeepEqual(got, []int{1, 2, 64}) {
		t.Errorf("1,2,64: %v, %v", got, err)
	}
	for in, want := range map[string]string{
		"1,0":  `"0" is not a positive number of ranks; write e.g. --meshes 1,2,4`,
		"two":  `"two" is not a positive number of ranks`,
		"1,65": "65 ranks is more goroutine ranks than compare runs (64 at most)",
	} {
		if _, err := ParseMeshes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMeshes(%q): %v, want %q", in, err, want)
		}
	}
	if got, err := ParseFamilies("DP, tp"); err != nil || !reflect.DeepEqual(got, []string{"dp", "tp"}) {
		t.Errorf("DP, tp: %v, %v", got, err)
	}
	if _, err := ParseFamilies("dp,hybird"); err == nil || err.Error() != `unknown strategy "hybird" (did you mean "hybrid"?); valid: `+strings.Join(FamilyNames(), ", ") {
		t.Errorf("hybird: %v", err)
	}
}

// Points configures each grid point as exec runs it (overlap off, fp32) and skips with the
// reason, on progress, what cannot run: tp=3 does not divide gpt-tiny's 4 heads.
func TestPoints(t *testing.T) {
	m, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	grid, _, err := Grid([]string{"dp", "tp", "pp"}, []int{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	pts, skipped, batch := Points(m, grid, exec.MeshSettings{Optimizer: strategies.OptimizerSGD, Attention: strategies.AttentionEager, Plan: "megatron", Steps: 2, Seed: 1}, &log)
	var got []string
	for _, p := range pts {
		got = append(got, p.Strategy+" "+p.Mesh.String())
		if p.Config.Strategy.Overlap || p.Program == nil || p.Config.Strategy.Precision != strategies.PrecisionFP32 {
			t.Errorf("%s %s: overlap %v, program %v, precision %s; want off, lowered, fp32", p.Strategy, p.Mesh, p.Config.Strategy.Overlap, p.Program != nil, p.Config.Strategy.Precision)
		}
	}
	// gpt-tiny's batch of 8 (presets.json) splits over dp=2; pp runs on the smallest mesh only,
	// with 2 microbatches per stage: mbs 8/(2*2) = 2.
	if want := []string{"dp " + (strategies.Mesh{PP: 1, DP: 2, CP: 1, TP: 1}).String(), "tp " + (strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 2}).String(),
		"pp " + (strategies.Mesh{PP: 2, DP: 1, CP: 1, TP: 1}).String()}; !reflect.DeepEqual(got, want) || batch != 8 || pts[2].Config.Strategy.MBS != 2 {
		t.Errorf("points %q, batch %d; want %q, 8 and pp mbs 2", got, batch, want)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0].Reason, "does not split over dp=3") || !strings.Contains(skipped[1].Reason, "tp=3") {
		t.Fatalf("skipped %+v; want dp=3 (batch 8) and tp=3 (4 heads)", skipped)
	}
	dp3, tp3 := strategies.Mesh{PP: 1, DP: 3, CP: 1, TP: 1}, strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 3}
	for _, want := range []string{"tpsim compare: [2/5] dp " + dp3.String() + " skipped: the batch of 8", "tpsim compare: [4/5] tp " + tp3.String() + " skipped: "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("progress %q does not say %q", log.String(), want)
		}
	}
	if got := SkippedText(skipped[:1]); got != "  dp "+skipped[0].Mesh+": "+skipped[0].Reason {
		t.Errorf("SkippedText = %q", got)
	}
}

// A row with memory errors makes compare fail naming the rows; none, no error.
func TestMemoryError(t *testing.T) {
	res := &Results{Rows: []Row{{}, {}}}
	res.Rows[0].Strategy, res.Rows[0].Mesh = "single", "dp=1"
	res.Rows[1].Strategy, res.Rows[1].Mesh = "zero3", "dp=2"
	res.Summary = Summarize(res.Rows)
	if err := res.MemoryError("out"); err != nil {
		t.Errorf("no memory errors: %v", err)
	}
	res.Rows[1].MemoryErrors = []string{"params: predicted 1 bytes per rank, measured 2 (+1)"}
	res.Summary = Summarize(res.Rows)
	want := `memory errors in 1 of 2 rows (zero3 dp=2): the memory the ranks held differs from the prediction or from what the Program declares; see "memory error" above and report.md in out`
	if err := res.MemoryError("out"); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// A GPU preset is refused unless ForeignHardware says so; a profile of a machine with another
// core count is used with a warning.
func TestHostProfileFiles(t *testing.T) {
	ctx := context.Background()
	if _, _, err := HostProfile(ctx, HostOptions{Hardware: "a100-80g"}); err == nil || !strings.Contains(err.Error(), "not of this machine") {
		t.Errorf("a100-80g: %v, want a refusal", err)
	}
	h, load, err := HostProfile(ctx, HostOptions{Hardware: "a100-80g", ForeignHardware: true})
	if err != nil || h.Name != "a100-80g" || load.Calibration != -1 {
		t.Errorf("a100-80g, foreign allowed: %v, calibration share %v", err, load.Calibration)
	}
	var log bytes.Buffer
	h, _, err = HostProfile(ctx, HostOptions{Hardware: "../cmd/tpsim/testdata/host.json", Progress: &log})
	if err != nil || h.Cores != 2 {
		t.Fatalf("host.json: %v", err)
	}
	if warned := strings.Contains(log.String(), "measured on a machine with 2 cores"); warned != (runtime.NumCPU() != 2) {
		t.Errorf("%d cores here, warning %q", runtime.NumCPU(), log.String())
	}
	if _, _, err := HostProfile(ctx, HostOptions{Hardware: "nosuch"}); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("nosuch: %v", err)
	}
}

// MeasureWinner refuses what exec does not run here, naming the fix, and measures the rest.
func TestMeasureWinner(t *testing.T) {
	m, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for spec, want := range map[string]string{
		"pp=2,precision=fp32":                "pp=2",
		"dp=2,zero=1,precision=fp32":         "fix zero: 0, recompute: none",
		"dp=2,recompute=full,precision=fp32": "recompute=full",
		"dp=2,precision=mixed":               "fix precision: fp32",
	} {
		st, err := strategies.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := MeasureWinner(ctx, m, st, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
	if testing.Short() {
		t.Skip("measures seed-mlp 3 x 10 steps")
	}
	st, err := strategies.Parse("dp=2,precision=fp32,optimizer=sgd,gbs=10")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := MeasureWinner(ctx, m, st, ""); err != nil || !(s > 0) {
		t.Errorf("dp=2: %v s, %v; want a positive step time", s, err)
	}
}
