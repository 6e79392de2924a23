package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/")
	pngDir = flag.String("png", "", "also write every golden figure as PNG and SVG to this directory, to look at")
)

const mib = 1 << 20

// sample builds a Sample from times in milliseconds and memory in MiB.
func sample(compute, comm, bubble, opt float64, mem [7]float64, commMiB map[string]float64) Sample {
	s := Sample{
		Time:   StepTime{Compute: compute / 1e3, CommExposed: comm / 1e3, Bubble: bubble / 1e3, Optimizer: opt / 1e3},
		Memory: map[string]float64{}, CommBytes: map[string]float64{},
	}
	s.Time.Step = s.Time.Compute + s.Time.CommExposed + s.Time.Bubble + s.Time.Optimizer
	for i, c := range append(MemoryCategories[:6:6], "peak") {
		s.Memory[c] = mem[i] * mib
	}
	for d, v := range commMiB {
		s.CommBytes[d] = v * mib
	}
	return s
}

// fixtureRows is a small comparison in the shape of `tpsim compare` on gpt-tiny; the numbers are
// made up, with predicted and measured memory and bytes equal as the acceptance asks.
func fixtureRows() []Row {
	type spec struct {
		strategy, mesh string
		ranks          int
		pred, meas     [4]float64 // compute, exposed comm, bubble, optimizer (ms)
		mem            [7]float64 // MiB: params, grads, optimizer, activations, workspace, comm, peak
		peakMeas       float64
		comm           map[string]float64 // MiB
	}
	specs := []spec{
		{"single", "1", 1, [4]float64{36, 0, 0, 4}, [4]float64{39, 0, 0, 4}, [7]float64{8, 8, 16, 24, 4, 0, 52}, 53, nil},
		{"dp", "dp=2", 2, [4]float64{18, 3.5, 0, 2.5}, [4]float64{19.5, 4, 0, 2.5}, [7]float64{8, 8, 16, 12, 4, 2, 44}, 45, map[string]float64{"dp": 8}},
		{"dp", "dp=4", 4, [4]float64{9, 4.5, 0, 1.5}, [4]float64{10.5, 5.5, 0, 1.5}, [7]float64{8, 8, 16, 6, 4, 2, 40}, 41, map[string]float64{"dp": 12}},
		{"tp", "tp=2", 2, [4]float64{19, 6, 0, 2}, [4]float64{17.5, 5.5, 0, 2}, [7]float64{4, 4, 8, 18, 4, 1, 32}, 31, map[string]float64{"tp": 1.5}},
		{"tp", "tp=4", 4, [4]float64{10, 8.5, 0, 1.5}, [4]float64{11, 10, 0, 2}, [7]float64{2, 2, 4, 15, 4, 1, 24}, 25, map[string]float64{"tp": 2.25}},
		{"hybrid", "dp=2,tp=2", 4, [4]float64{10, 6, 0, 2}, [4]float64{11.5, 7.5, 0, 2}, [7]float64{4, 4, 8, 9, 4, 2, 26}, 27, map[string]float64{"dp": 4, "tp": 1.5}},
		{"pp", "pp=2", 2, [4]float64{18, 1, 9, 2}, [4]float64{19, 1.5, 10.5, 2}, [7]float64{4, 4, 8, 20, 4, 1, 36}, 36, map[string]float64{"pp": 0.5}},
	}
	rows := make([]Row, len(specs))
	for i, s := range specs {
		mm := s.mem
		mm[6] = s.peakMeas
		rows[i] = Row{Strategy: s.strategy, Mesh: s.mesh, Ranks: s.ranks,
			Predicted: sample(s.pred[0], s.pred[1], s.pred[2], s.pred[3], s.mem, s.comm),
			Measured:  sample(s.meas[0], s.meas[1], s.meas[2], s.meas[3], mm, s.comm)}
	}
	return rows
}

// fixtureSimulated is fixtureRows' first five rows with a simulated sample between the two.
func fixtureSimulated() []Row {
	rows := fixtureRows()[:5]
	for i := range rows {
		s := rows[i].Predicted
		s.Time.CommExposed *= 0.8
		s.Time.Step = s.Time.Compute + s.Time.CommExposed + s.Time.Bubble + s.Time.Optimizer
		rows[i].Simulated = &s
	}
	return rows
}

// fixtureSpans is a 2-stage pipeline of 2 microbatches with data-parallel gradients, predicted
// or measured (a little slower and later).
func fixtureSpans(slow float64) []Span {
	var ss []Span
	add := func(proc, thread, name, cat string, start, dur float64) {
		ss = append(ss, Span{Process: proc, Thread: thread, Name: name, Cat: cat, Start: start * slow / 1e3, Dur: dur * slow / 1e3})
	}
	add("stage 0", "compute", "F0", "forward", 0, 2)
	add("stage 0", "compute", "F1", "forward", 2, 2)
	add("stage 1", "compute", "F0", "forward", 2.3, 2)
	add("stage 0", "communication", "send", "p2p", 2, 0.3)
	add("stage 0", "communication", "send", "p2p", 4, 0.3)
	add("stage 1", "compute", "F1", "forward", 4.3, 2)
	add("stage 1", "compute", "B0", "backward", 6.3, 4)
	add("stage 1", "compute", "B1", "backward", 10.3, 4)
	add("stage 1", "communication", "send", "p2p", 10.3, 0.3)
	add("stage 1", "communication", "all-reduce dp", "communication", 14.3, 2.5)
	add("stage 0", "compute", "B0", "backward", 10.6, 4)
	add("stage 0", "compute", "B1", "backward", 14.9, 4)
	add("stage 0", "communication", "all-reduce dp", "communication", 18.9, 2.5)
	add("stage 0", "compute", "adam", "optimizer", 21.4, 1.2)
	add("stage 1", "compute", "adam", "optimizer", 16.8, 1.2)
	return ss
}

// fixtureCandidates is a made-up search: a grid of (memory, time) with a front along its lower
// left edge.
func fixtureCandidates() (all, front []Candidate, winner *Candidate) {
	for i := range 12 {
		for j := range 6 {
			mem := float64(8+6*i+3*j) * (1 << 30)
			t := 2.0 / (1 + 0.15*float64(i)) * (1 + 0.2*float64(j))
			c := Candidate{Label: fmt.Sprintf("tp=%d,pp=%d", 1<<(i%4), j+1), StepTime: t, PeakMemory: mem}
			all = append(all, c)
			if j == 0 {
				front = append(front, c)
			}
		}
	}
	w := front[7]
	return all, front, &w
}

// goldenFigures are the figures checked against testdata/<name>.svg.
func goldenFigures(t *testing.T) map[string]Drawer {
	t.Helper()
	must := func(f *Figure, err error) Drawer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	rows := fixtureRows()
	all, front, winner := fixtureCandidates()
	return map[string]Drawer{
		"predicted_vs_measured":     must(PredictedVsMeasured("Step time: predicted vs measured (gpt-tiny)\nhost, 2 cores", rows, DefaultBand)),
		"predicted_vs_measured_sim": must(PredictedVsMeasured("", fixtureSimulated(), 0.1)),
		"step_breakdown":            must(StepBreakdown("Step time by strategy (gpt-tiny)", rows)),
		"step_breakdown_sim":        must(StepBreakdown("", fixtureSimulated())),
		"memory":                    must(MemoryByCategory("Memory per rank by category (gpt-tiny)", rows)),
		"comm_bytes":                must(CommBytesByDim("Bytes sent per rank per step (gpt-tiny)", rows)),
		"scaling":                   must(Scaling("Step time against ranks (gpt-tiny)", rows)),
		"timeline":                  must(Timelines("Timeline of one step: pp=2, 2 microbatches", []string{"predicted (simulator)", "measured"}, [][]Span{fixtureSpans(1), fixtureSpans(1.1)})),
		"pareto":                    must(Pareto("Step time against peak memory (gpt3-175b, 256 a100-80g)", all, front, winner)),
	}
}

// Golden figures are small so that testdata stays small.
const goldenW, goldenH = 6 * vg.Inch, 3.6 * vg.Inch

func TestGoldenSVG(t *testing.T) {
	for name, d := range goldenFigures(t) {
		t.Run(name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := WriteSVG(&a, d, goldenW, goldenH); err != nil {
				t.Fatal(err)
			}
			if err := WriteSVG(&b, d, goldenW, goldenH); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("drawing the same figure twice gave different SVG bytes")
			}
			path := filepath.Join("testdata", name+".svg")
			if *update {
				if err := os.WriteFile(path, a.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if *pngDir != "" {
				if err := Save(d, *pngDir, name, goldenW, goldenH); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./reports -update to create it)", err)
			}
			if !bytes.Equal(a.Bytes(), want) {
				t.Errorf("%s differs from the figure drawn now; look at both, then run go test ./reports -update if the change is intended", path)
			}
		})
	}
}

// Figures built twice from the same input give the same bytes (no map order, no clock).
func TestFiguresDeterministic(t *testing.T) {
	a, b := goldenFigures(t), goldenFigures(t)
	for name := range a {
		var x, y bytes.Buffer
		if err := WriteSVG(&x, a[name], goldenW, goldenH); err != nil {
			t.Fatal(err)
		}
		if err := WriteSVG(&y, b[name], goldenW, goldenH); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s: two builds of the same figure differ", name)
		}
	}
}

func TestSaveWritesPNGAndSVG(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "figures")
	f, err := Scaling("", fixtureRows())
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(f, dir, "scaling", 4*vg.Inch, 3*vg.Inch); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "scaling.png"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("scaling.png does not start with the PNG signature")
	}
	svg, err := os.ReadFile(filepath.Join(dir, "scaling.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("Step time against number of ranks")) {
		t.Errorf("scaling.svg is not an SVG with the figure's title")
	}
	var again bytes.Buffer
	if err := WritePNG(&again, f, 4*vg.Inch, 3*vg.Inch); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), png) {
		t.Errorf("the same figure gave different PNG bytes")
	}
	if err := Save(f, dir, "", 4*vg.Inch, 3*vg.Inch); err == nil {
		t.Errorf("Save with an empty name: no error")
	}
}

// The figures' titles say what they show: the SVG holds the title text.
func TestTitles(t *testing.T) {
	rows := fixtureRows()
	for _, tc := range []struct {
		name string
		fig  func() (*Figure, error)
		want []string
	}{
		{"default", func() (*Figure, error) { return StepBreakdown("", rows) }, []string{"Step time by strategy: where it goes", "compute", "exposed communication"}},
		{"subtitle", func() (*Figure, error) { return MemoryByCategory("Memory per rank (gpt-tiny)\nhost", rows) }, []string{"Memory per rank (gpt-tiny)", ">host<", "MiB", "peak"}},
		{"pvm", func() (*Figure, error) { return PredictedVsMeasured("", rows, 0.15) }, []string{"Step time: predicted vs measured", "±15% error", "y = x", "dp=2,tp=2"}},
	} {
		f, err := tc.fig()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, f, goldenW, goldenH); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: SVG lacks %q", tc.name, w)
			}
		}
	}
}

func TestFigureErrors(t *testing.T) {
	nan := fixtureRows()
	nan[1].Predicted.Time.Compute = 0 / func() float64 { return 0 }()
	zeroRanks := fixtureRows()
	zeroRanks[2].Ranks = 0
	neg := fixtureRows()
	neg[0].Measured.CommBytes["dp"] = -1
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"no rows", func() error { _, err := StepBreakdown("", nil); return err }, "no rows"},
		{"nan", func() error { _, err := StepBreakdown("", nan); return err }, "dp dp=2 predicted compute is NaN"},
		{"no points", func() error { _, err := PredictedVsMeasured("", []Row{{Strategy: "dp"}}, 0.15); return err }, "no row has a positive"},
		{"ranks", func() error { _, err := Scaling("", zeroRanks); return err }, `"dp dp=4" has 0 ranks`},
		{"negative bytes", func() error { _, err := CommBytesByDim("", neg); return err }, "bars need values >= 0"},
		{"no spans", func() error { _, err := Timelines("", nil, [][]Span{nil}); return err }, "has no spans"},
		{"negative span", func() error { _, err := Timeline("", []Span{{Name: "x", Dur: -1}}); return err }, "durations must be >= 0"},
		{"pareto empty", func() error { _, err := Pareto("", nil, nil, nil); return err }, "no candidates"},
		{"pareto zero", func() error { _, err := Pareto("", []Candidate{{Label: "a", StepTime: 1}}, nil, nil); return err }, "must be positive"},
	} {
		err := tc.err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// Single-rank rows send nothing: the communication figure still draws, with a legend that says so.
func TestCommBytesNone(t *testing.T) {
	rows := fixtureRows()[:1]
	f, err := CommBytesByDim("", rows)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, f, goldenW, goldenH); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no communication") {
		t.Errorf("legend does not say there is no communication")
	}
}

// The mechanisms figure draws a bar per mechanism and series where a row has it, names them in
// the legend, refuses negative times, and says so when no row has any.
func TestPhaseTimes(t *testing.T) {
	rows := fixtureRows()[:2]
	rows[1].Predicted.Phases = map[string]float64{"bubble": 0.004, "recompute": 0.002}
	rows[1].Measured.Phases = map[string]float64{"bubble": 0.005, "recompute": 0.003}
	f, err := PhaseTimes("", rows)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, f, goldenW, goldenH); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.Contains(svg, "pipeline bubble") || !strings.Contains(svg, "recompute (replayed forward)") || strings.Contains(svg, "ZeRO all-gathers") {
		t.Errorf("legend: want the bubble and recompute, not the gathers no row has")
	}
	if n := len(f.Panels); n != 1 {
		t.Errorf("%d panels", n)
	}
	rows[1].Measured.Phases["recompute"] = -1
	if _, err := PhaseTimes("", rows); err == nil || !strings.Contains(err.Error(), "bars need values >= 0") {
		t.Errorf("negative time: %v", err)
	}
	f, err = PhaseTimes("", fixtureRows()[:1])
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteSVG(&b, f, goldenW, goldenH); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no bubble, gathers or recompute") {
		t.Error("no mechanism: the legend does not say so")
	}
}

// A prediction written by `tpsim predict --json` decodes into a Sample, and a Row survives a JSON
// round trip (how `tpsim plot --in results.json` reads them back).
func TestSampleJSON(t *testing.T) {
	const predict = `{"model":"gpt-tiny","strategy":"dp=2","memory_bytes":{"params":100,"grads":100,"optimizer":200,
	"activations":50,"workspace":10,"comm":0,"peak":400},"comm_bytes":{"dp":100},
	"time_s":{"step":0.01,"compute":0.008,"comm_exposed":0.001,"bubble":0,"optimizer":0.001},"mfu":0.1}`
	var s Sample
	if err := json.Unmarshal([]byte(predict), &s); err != nil {
		t.Fatal(err)
	}
	if s.Time.Step != 0.01 || s.Time.CommExposed != 0.001 || s.Memory["peak"] != 400 || s.CommBytes["dp"] != 100 {
		t.Errorf("decoded %+v", s)
	}
	rows := fixtureSimulated()
	data, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"strategy"`, `"mesh"`, `"ranks"`, `"predicted"`, `"measured"`, `"simulated"`, `"time_s"`, `"comm_exposed"`, `"memory_bytes"`, `"comm_bytes"`} {
		if !bytes.Contains(data, []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	var back []Row
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(data, again) {
		t.Errorf("rows changed in a JSON round trip")
	}
}

func TestRowLabel(t *testing.T) {
	for _, tc := range []struct {
		r    Row
		want string
	}{
		{Row{Strategy: "dp", Mesh: "dp=2"}, "dp dp=2"},
		{Row{Strategy: "dp"}, "dp"},
		{Row{Mesh: "tp=2"}, "tp=2"},
		{Row{Strategy: "tp=2", Mesh: "tp=2"}, "tp=2"},
	} {
		if got := tc.r.Label(); got != tc.want {
			t.Errorf("%+v.Label() = %q, want %q", tc.r, got, tc.want)
		}
	}
}

// Units follow the magnitude: hand-picked values on each side of each boundary.
func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		k    float64
		name string
	}{{2, 1, "s"}, {0.5, 1e3, "ms"}, {1e-3, 1e3, "ms"}, {9e-4, 1e6, "µs"}, {5e-8, 1e9, "ns"}} {
		if k, n := timeUnit(tc.v); k != tc.k || n != tc.name {
			t.Errorf("timeUnit(%g) = %g %s, want %g %s", tc.v, k, n, tc.k, tc.name)
		}
	}
	for _, tc := range []struct {
		v    float64
		name string
	}{{100, "B"}, {1024, "KiB"}, {3 << 20, "MiB"}, {(1 << 30) - 1, "MiB"}, {80 << 30, "GiB"}, {2 << 40, "TiB"}} {
		if _, n := byteUnit(tc.v); n != tc.name {
			t.Errorf("byteUnit(%g) = %s, want %s", tc.v, n, tc.name)
		}
	}
}

func TestLogTicks(t *testing.T) {
	var labels []string
	for _, tk := range (logTicks{}).Ticks(3, 250) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	// 1, 2, 5 times each power of ten inside [3, 250].
	if got, want := strings.Join(labels, " "), "5 10 20 50 100 200"; got != want {
		t.Errorf("labels %q, want %q", got, want)
	}
}

// A large search is thinned to what can be seen; the legend still counts every candidate.
func TestParetoThinning(t *testing.T) {
	var all []Candidate
	for i := range 50000 {
		all = append(all, Candidate{Label: "c", StepTime: 1 + float64(i%100)/100, PeakMemory: float64(1+i%37) * (1 << 30)})
	}
	f, err := Pareto("", all, all[:3], nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, f, goldenW, goldenH); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "candidates (50000)") {
		t.Errorf("legend does not count every candidate")
	}
	if b.Len() > 2<<20 {
		t.Errorf("SVG of a thinned search is %d bytes", b.Len())
	}
}

// A figure that cannot be written fails with the file's name and leaves no temporary file
// beside it (internal/atomicfile): the truncated 24,576-byte pareto.svg cannot happen.
func TestSaveFailureLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	f, err := Scaling("", fixtureRows())
	if err != nil {
		t.Fatal(err)
	}
	// scaling.png is a non-empty directory: the rename over it fails.
	if err := os.MkdirAll(filepath.Join(dir, "scaling.png", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = Save(f, dir, "scaling", 4*vg.Inch, 3*vg.Inch)
	if err == nil || !strings.Contains(err.Error(), "scaling.png") {
		t.Fatalf("Save over a directory: %v, want an error naming scaling.png", err)
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if e.Name() != "scaling.png" {
			t.Errorf("Save left %s behind", e.Name())
		}
	}
}
