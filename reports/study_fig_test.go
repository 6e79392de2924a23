package reports

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/units"
)

func studyFigures(t *testing.T) map[string]Drawer {
	t.Helper()
	sc, err := StudyScaling("scaling", []ScalingSeries{
		{Name: "a100", GPUs: []int{8, 16, 32}, TokensPerS: []float64{1e5, 1.9e5, 3.5e5}},
		{Name: "h100", GPUs: []int{16, 32}, TokensPerS: []float64{4e5, 7e5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	fr, err := StudyFrontier("frontier", "cost (USD)", []CostPoint{
		{Series: "a100", Label: "a100 x8", Cost: 100, Days: 30, Front: true},
		{Series: "a100", Label: "a100 x16", Cost: 120, Days: 40},
		{Series: "h100", Label: "h100 x16", Cost: 150, Days: 10, Front: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	me, err := StudyMemory("memory", []MemoryPoint{{Series: "a100", Model: "small", Params: 1e9, Peak: 30 * units.GiB}, {Series: "a100", Model: "big", Params: 7e10, Peak: 70 * units.GiB}},
		[]Capacity{{Name: "a100", Bytes: units.Bytes(80e9)}})
	if err != nil {
		t.Fatal(err)
	}
	la, err := StudyLayout("layout", []LayoutPanel{{Title: "m on a100", GPUs: []int{8, 16, 64}, Meshes: [][4]int{{}, {1, 2, 1, 8}, {2, 4, 1, 8}}}})
	if err != nil {
		t.Fatal(err)
	}
	br, err := StudyBreakdown("breakdown", []BreakdownPanel{{Title: "m on a100", Labels: []string{"16", "64"},
		Compute: []float64{1, 0.5}, Comm: []float64{0.2, 0.3}, Bubble: []float64{0, 0.1}, Optimizer: []float64{0.01, 0.01}}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Drawer{"scaling": sc, "frontier": fr, "memory": me, "layout": la, "breakdown": br}
}

func svgOf(t *testing.T, d Drawer) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSVG(&b, d, DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The study's figures are the same bytes for the same input, and say what they show.
func TestStudyFiguresDeterministicAndLabelled(t *testing.T) {
	a, b := studyFigures(t), studyFigures(t)
	want := map[string][]string{
		"scaling":   {"tokens/s", "GPUs", "ideal scaling", "a100", "h100"},
		"frontier":  {"a100 x8", "h100 x16", "frontier (labelled)", "days to train"},
		"memory":    {"small", "big", "capacity", "GiB"},
		"layout":    {"nothing fits", ">8<", ">2<", ">4<"},
		"breakdown": {"compute", "comm exposed", "share of step"},
	}
	for name, d := range a {
		s := svgOf(t, d)
		if s != svgOf(t, b[name]) {
			t.Errorf("%s: two drawings of the same input differ", name)
		}
		for _, w := range want[name] {
			if !strings.Contains(s, w) {
				t.Errorf("%s: SVG lacks %q", name, w)
			}
		}
	}
	// Only frontier points are labelled.
	if s := svgOf(t, a["frontier"]); strings.Contains(s, "a100 x16") {
		t.Errorf("frontier labels a point off the frontier")
	}
}

func TestStudyFigureErrors(t *testing.T) {
	if _, err := StudyScaling("", []ScalingSeries{{Name: "x", GPUs: []int{1}, TokensPerS: []float64{math.NaN()}}}); err == nil {
		t.Error("NaN tokens/s drew")
	}
	if _, err := StudyScaling("", []ScalingSeries{{Name: "x", GPUs: []int{1, 2}, TokensPerS: []float64{1}}}); err == nil {
		t.Error("mismatched lengths drew")
	}
	if _, err := StudyFrontier("", "c", []CostPoint{{Label: "x", Cost: 0, Days: 1}}); err == nil {
		t.Error("zero cost drew on a log axis")
	}
	if _, err := StudyLayout("", []LayoutPanel{{GPUs: []int{4}, Meshes: [][4]int{{1, 0, 1, 4}}}}); err == nil {
		t.Error("a mesh with dp=0 drew")
	}
	if _, err := StudyBreakdown("", []BreakdownPanel{{Labels: []string{"1"}, Compute: []float64{-1}, Comm: []float64{0}, Bubble: []float64{0}, Optimizer: []float64{0}}}); err == nil {
		t.Error("a negative time drew")
	}
	if _, err := StudyMemory("", []MemoryPoint{{Params: 0}}, nil); err == nil {
		t.Error("a model of 0 parameters drew")
	}
}

// The issue: the breakdown's labels ran into each other ("32.1 s16.1 s8.11 s", "1.52e+03 s670
// s"). Step times under the bars are at most about six characters.
func TestShortSeconds(t *testing.T) {
	for v, want := range map[float64]string{
		0.0123: "12.3 ms", 1.53: "1.53 s", 285.4: "285 s", 599: "599 s",
		1520: "25 min", 670: "11 min", 36000: "10 h", 4e6: "1111 h",
	} {
		if got := shortSeconds(v); got != want {
			t.Errorf("shortSeconds(%g) = %q, want %q", v, got, want)
		}
	}
}

// Frontier labels avoid every point, not only the frontier's: a label written over another
// hardware's point hid it. The labeller gets every point, those off the frontier unlabelled.
func TestFrontierLabelsAvoidEveryPoint(t *testing.T) {
	pts := []CostPoint{{Series: "a", Label: "a x8", Cost: 10, Days: 100, Front: true}, {Series: "b", Label: "b x8", Cost: 12, Days: 100},
		{Series: "a", Label: "a x16", Cost: 11, Days: 50, Front: true}}
	xy, labels := frontierLabels(pts)
	if len(xy) != 3 || xy[1].X != 12 || xy[1].Y != 100 || strings.Join(labels, "|") != "a x8||a x16" {
		t.Errorf("points %v, labels %q; want all three, the middle one unlabelled", xy, labels)
	}
	if _, err := StudyFrontier("t", "cost", pts); err != nil {
		t.Error(err)
	}
}
