package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tpsim/tpsim/units"
)

// The figures of a planning study (tpsim study). Each takes its own input types, filled by the
// study package from the plans; nothing here computes a model number.

// ScalingSeries is one model on one hardware: tokens per second at each GPU count that fits.
type ScalingSeries struct {
	Name       string
	GPUs       []int
	TokensPerS []float64
}

// gpuTicks marks every GPU count present.
func gpuTicks(counts map[int]bool) plot.ConstantTicks {
	var ticks []plot.Tick
	for g := range counts {
		ticks = append(ticks, plot.Tick{Value: float64(g), Label: strconv.Itoa(g)})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	return plot.ConstantTicks(ticks)
}

// legendSlack is how far a study figure's legend is drawn left of the column Figure.Draw keeps
// for it, into the gap before the panels: browsers draw the SVG's text in whatever font they
// substitute for Liberation Sans, some wider, and the legend's last characters ("frontier
// (labelled", "ideal scaling") were clipped at the figure's right edge.
const legendSlack = 8 // points

// studyFigure is newFigure with the legend moved left by legendSlack.
func studyFigure(title string, panels ...*plot.Plot) *Figure {
	f := newFigure(title, panels...)
	f.Legend.XOffs = -vg.Points(legendSlack)
	return f
}

func newGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = lightGrey, lightGrey
	return g
}

// StudyScaling draws tokens per second against GPU count on log-log axes, one colour per series,
// with each series' ideal scaling (linear from its smallest GPU count) dashed in the same colour.
func StudyScaling(title string, series []ScalingSeries) (*Figure, error) {
	p := newPlot()
	p.X.Label.Text = "GPUs"
	p.Y.Label.Text = "tokens/s"
	p.Add(newGrid())
	fig := studyFigure(title, p)
	counts := map[int]bool{}
	lo, hi := math.Inf(1), 0.0
	n := 0
	for i, s := range series {
		if len(s.GPUs) != len(s.TokensPerS) {
			return nil, fmt.Errorf("reports: series %q has %d GPU counts and %d rates", s.Name, len(s.GPUs), len(s.TokensPerS))
		}
		if len(s.GPUs) == 0 {
			continue
		}
		c := palette[i%len(palette)]
		var xy, ideal plotter.XYs
		for j, g := range s.GPUs {
			v := s.TokensPerS[j]
			if err := checkFinite(s.Name+" tokens/s", v); err != nil {
				return nil, err
			}
			if g < 1 || v <= 0 {
				return nil, fmt.Errorf("reports: series %q: %d GPUs at %g tokens/s; both must be positive", s.Name, g, v)
			}
			counts[g] = true
			xy = append(xy, plotter.XY{X: float64(g), Y: v})
			iv := s.TokensPerS[0] * float64(g) / float64(s.GPUs[0])
			ideal = append(ideal, plotter.XY{X: float64(g), Y: iv})
			lo, hi = math.Min(lo, math.Min(v, iv)), math.Max(hi, math.Max(v, iv))
		}
		l, sc, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.5)}
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		il, err := plotter.NewLine(ideal)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		il.LineStyle = draw.LineStyle{Color: tint(c, 0.3), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		p.Add(il, l, sc)
		fig.Legend.Add(s.Name, lineThumb{line: draw.LineStyle{Color: c, Width: vg.Points(3)}})
		n++
	}
	fig.Legend.Add("ideal scaling", lineThumb{line: draw.LineStyle{Color: darkGrey, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}})
	if n == 0 {
		p.Title.Text = "no GPU count fits"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 10, 1, 10
		return fig, nil
	}
	p.X.Tick.Marker = gpuTicks(counts)
	minG, maxG := math.Inf(1), 0.0
	for g := range counts {
		minG, maxG = math.Min(minG, float64(g)), math.Max(maxG, float64(g))
	}
	logAxis(&p.X, minG, maxG)
	logAxis(&p.Y, lo, hi)
	return fig, nil
}

// logAxis sets a log scale with padding around lo..hi (a factor of ten at least).
func logAxis(a *plot.Axis, lo, hi float64) {
	if hi < lo*10 {
		mid := math.Sqrt(lo * hi)
		lo, hi = mid/math.Sqrt(10), mid*math.Sqrt(10)
	}
	a.Scale = plot.LogScale{}
	a.Min, a.Max = lo/1.25, hi*1.25
	if _, ok := a.Tick.Marker.(plot.ConstantTicks); !ok {
		a.Tick.Marker = logTicks{}
	}
}

// CostPoint is one way to train: its cost (or GPU-hours when there is no price) and its time to
// train, with a label; Front marks the points that no other point beats on both.
type CostPoint struct {
	Series string
	Label  string
	Cost   float64
	Days   float64
	Front  bool
}

// StudyFrontier draws time to train against cost, one colour per series, the frontier joined by a
// line and its points labelled. xlabel names the cost axis (a currency, or GPU-hours).
func StudyFrontier(title, xlabel string, pts []CostPoint) (*Figure, error) {
	p := newPlot()
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "days to train"
	p.Add(newGrid())
	fig := studyFigure(title, p)
	if len(pts) == 0 {
		p.Title.Text = "nothing fits"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
		return fig, nil
	}
	var names []string
	colors := map[string]int{}
	xlo, xhi, ylo, yhi := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, pt := range pts {
		for _, v := range []float64{pt.Cost, pt.Days} {
			if err := checkFinite(pt.Label+" cost and time", v); err != nil {
				return nil, err
			}
			if v <= 0 {
				return nil, fmt.Errorf("reports: point %q has cost %g and %g days; both must be positive", pt.Label, pt.Cost, pt.Days)
			}
		}
		if _, ok := colors[pt.Series]; !ok {
			colors[pt.Series] = len(names)
			names = append(names, pt.Series)
		}
		xlo, xhi = math.Min(xlo, pt.Cost), math.Max(xhi, pt.Cost)
		ylo, yhi = math.Min(ylo, pt.Days), math.Max(yhi, pt.Days)
	}
	var front plotter.XYs
	for _, pt := range pts {
		if pt.Front {
			front = append(front, plotter.XY{X: pt.Cost, Y: pt.Days})
		}
	}
	sort.SliceStable(front, func(i, j int) bool { return front[i].X < front[j].X })
	if len(front) > 1 {
		fl, err := plotter.NewLine(front)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		fl.LineStyle = draw.LineStyle{Color: darkGrey, Width: vg.Points(1)}
		p.Add(fl)
	}
	for _, name := range names {
		var xy plotter.XYs
		for _, pt := range pts {
			if pt.Series == name {
				xy = append(xy, plotter.XY{X: pt.Cost, Y: pt.Days})
			}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		c := palette[colors[name]%len(palette)]
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		fig.Legend.Add(name, lineThumb{glyph: &draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}})
	}
	fxy, flab := frontierLabels(pts)
	sty := textStyle(7)
	p.Add(&pointLabels{xy: fxy, labels: flab, style: sty, gap: vg.Points(5), radius: vg.Points(3)})
	fig.Legend.Add("frontier (labelled)", lineThumb{line: draw.LineStyle{Color: darkGrey, Width: vg.Points(1)}})
	logAxis(&p.X, xlo, xhi)
	logAxis(&p.Y, ylo, yhi)
	return fig, nil
}

// MemoryPoint is the peak memory per device of one cell's best strategy.
type MemoryPoint struct {
	Series string // the hardware
	Model  string // the x tick's label
	Params float64
	Peak   units.Bytes
}

// Capacity is a device's memory, drawn as a dashed line.
type Capacity struct {
	Name  string
	Bytes units.Bytes
}

// StudyMemory draws peak memory per device against model size (parameters, log axis), one
// colour per hardware, with each device's capacity as a dashed line in its colour. Each model
// has a tick with its name; the series are set slightly apart around it so none hides another.
func StudyMemory(title string, pts []MemoryPoint, caps []Capacity) (*Figure, error) {
	p := newPlot()
	p.X.Label.Text = "model (log of parameters)"
	p.Add(newGrid())
	fig := studyFigure(title, p)
	top := 0.0
	for _, c := range caps {
		top = math.Max(top, float64(c.Bytes))
	}
	for _, pt := range pts {
		if err := checkFinite("peak memory", float64(pt.Peak)); err != nil {
			return nil, err
		}
		if pt.Params <= 0 {
			return nil, fmt.Errorf("reports: a model of %g parameters; it must be positive", pt.Params)
		}
		top = math.Max(top, float64(pt.Peak))
	}
	k, unit := byteUnit(top)
	p.Y.Label.Text = "peak memory per device (" + unit + ")"
	var names []string
	idx := map[string]int{}
	add := func(n string) int {
		if i, ok := idx[n]; ok {
			return i
		}
		idx[n] = len(names)
		names = append(names, n)
		return idx[n]
	}
	for _, c := range caps {
		add(c.Name)
	}
	for _, pt := range pts {
		add(pt.Series)
	}
	xlo, xhi := math.Inf(1), 0.0
	for _, pt := range pts {
		xlo, xhi = math.Min(xlo, pt.Params), math.Max(xhi, pt.Params)
	}
	if len(pts) == 0 {
		xlo, xhi = 1e9, 1e10
	}
	modelTicks := map[float64]string{}
	for _, pt := range pts {
		modelTicks[pt.Params] = pt.Model
	}
	var ticks []plot.Tick
	for v, l := range modelTicks {
		ticks = append(ticks, plot.Tick{Value: v, Label: l})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	if len(ticks) > 0 {
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	logAxis(&p.X, xlo, xhi)
	for si, name := range names {
		c := palette[idx[name]%len(palette)]
		// Dodge: series i of n sits at a factor 1.06^(i-(n-1)/2) of the model's size.
		dodge := math.Pow(1.06, float64(si)-float64(len(names)-1)/2)
		var xy plotter.XYs
		for _, pt := range pts {
			if pt.Series == name {
				xy = append(xy, plotter.XY{X: pt.Params * dodge, Y: float64(pt.Peak) * k})
			}
		}
		if len(xy) > 0 {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, fmt.Errorf("reports: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
		fig.Legend.Add(name, lineThumb{glyph: &draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}})
	}
	for _, cp := range caps {
		c := palette[idx[cp.Name]%len(palette)]
		y := float64(cp.Bytes) * k
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		p.Add(l)
	}
	fig.Legend.Add("capacity", lineThumb{line: draw.LineStyle{Color: darkGrey, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}})
	p.Y.Min, p.Y.Max = 0, top*k*1.08
	if top == 0 {
		p.Y.Max = 1
	}
	return fig, nil
}

// LayoutPanel is the best strategy's mesh at each GPU count of one model on one hardware; a
// zero Mesh is a count where nothing fits.
type LayoutPanel struct {
	Title  string
	GPUs   []int
	Meshes [][4]int // pp, dp, cp, tp
}

// layoutDims are the mesh dimensions of a layout strip, bottom to top, with their colours.
var layoutDims = []struct {
	name  string
	index int
}{{"tp", 3}, {"pp", 0}, {"cp", 2}, {"dp", 1}}

// StudyLayout draws, for each GPU count, a bar of height log2(GPUs) split into log2 of each mesh
// dimension (tp, pp, cp, dp from the bottom), labelled with the dimension's size: how the best
// layout changes as the GPU count grows (each part labelled with its size, its colour naming the
// dimension). One panel per model and hardware.
func StudyLayout(title string, panels []LayoutPanel) (*Figure, error) {
	if len(panels) == 0 {
		return nil, fmt.Errorf("reports: no layout panels")
	}
	fig := studyFigure(title)
	colors := map[string]int{"tp": 0, "pp": 1, "cp": 3, "dp": 4}
	maxH := 1.0
	for _, pn := range panels {
		for _, g := range pn.GPUs {
			maxH = math.Max(maxH, math.Log2(float64(g)))
		}
	}
	for _, pn := range panels {
		if len(pn.GPUs) != len(pn.Meshes) {
			return nil, fmt.Errorf("reports: layout %q has %d GPU counts and %d meshes", pn.Title, len(pn.GPUs), len(pn.Meshes))
		}
		p := newPlot()
		p.Title.Text = pn.Title
		p.Y.Label.Text = "log2 of devices"
		p.X.Label.Text = "GPUs"
		b := newBoxes()
		var ticks []plot.Tick
		for i, g := range pn.GPUs {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: strconv.Itoa(g)})
			m := pn.Meshes[i]
			if m == [4]int{} {
				b.add(box{x0: float64(i) - 0.4, x1: float64(i) + 0.4, y0: 0, y1: 0.001, line: draw.LineStyle{Color: red, Width: vg.Points(1)}})
				continue
			}
			y := 0.0
			for _, d := range layoutDims {
				v := m[d.index]
				if v < 1 {
					return nil, fmt.Errorf("reports: layout %q at %d GPUs has %s=%d", pn.Title, g, d.name, v)
				}
				if v == 1 {
					continue
				}
				h := math.Log2(float64(v))
				b.add(box{x0: float64(i) - 0.4, x1: float64(i) + 0.4, y0: y, y1: y + h, fill: palette[colors[d.name]],
					line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.5)}, label: strconv.Itoa(v)})
				y += h
			}
		}
		p.Add(b)
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.6, float64(len(pn.GPUs))-0.4
		p.Y.Min, p.Y.Max = 0, maxH*1.05
		fig.Panels = append(fig.Panels, p)
	}
	for _, d := range []string{"tp", "pp", "cp", "dp"} {
		fig.Legend.Add(d, swatch{fill: palette[colors[d]], line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.5)}})
	}
	fig.Legend.Add("nothing fits", lineThumb{line: draw.LineStyle{Color: red, Width: vg.Points(1)}})
	return fig, nil
}

// BreakdownPanel is where the step time of the best strategy goes at each GPU count.
type BreakdownPanel struct {
	Title                            string
	Labels                           []string
	Compute, Comm, Bubble, Optimizer []float64 // seconds
}

// StudyBreakdown draws the step time of each cell split into compute, exposed communication,
// pipeline bubble and optimizer, as shares of the step (100% bars, the step time above each bar):
// one panel per model and hardware.
func StudyBreakdown(title string, panels []BreakdownPanel) (*Figure, error) {
	if len(panels) == 0 {
		return nil, fmt.Errorf("reports: no breakdown panels")
	}
	fig := studyFigure(title)
	parts := []string{"compute", "comm exposed", "bubble", "optimizer"}
	cols := []int{0, 2, 5, 4}
	for _, pn := range panels {
		n := len(pn.Labels)
		if len(pn.Compute) != n || len(pn.Comm) != n || len(pn.Bubble) != n || len(pn.Optimizer) != n {
			return nil, fmt.Errorf("reports: breakdown %q: %d labels but parts of other lengths", pn.Title, n)
		}
		p := newPlot()
		p.Title.Text = pn.Title
		p.Y.Label.Text = "share of step (%)"
		p.X.Label.Text = "GPUs"
		b := newBoxes()
		var ticks []plot.Tick
		for i := range pn.Labels {
			vals := []float64{pn.Compute[i], pn.Comm[i], pn.Bubble[i], pn.Optimizer[i]}
			total := 0.0
			for _, v := range vals {
				if err := checkFinite(pn.Title+" step part", v); err != nil {
					return nil, err
				}
				if v < 0 {
					return nil, fmt.Errorf("reports: breakdown %q: negative time %g", pn.Title, v)
				}
				total += v
			}
			label := pn.Labels[i]
			if total > 0 {
				label += "\n" + shortSeconds(total)
			}
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
			if total == 0 {
				continue
			}
			y := 0.0
			for j, v := range vals {
				h := 100 * v / total
				if h == 0 {
					continue
				}
				b.add(box{x0: float64(i) - 0.4, x1: float64(i) + 0.4, y0: y, y1: y + h, fill: palette[cols[j]],
					line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.5)}})
				y += h
			}
		}
		p.Add(b)
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		if n > 8 {
			// Eleven bars' labels ("16", "25.3 min") at 9 points ran into each other.
			p.X.Tick.Label.Font.Size = vg.Points(8)
		}
		p.X.Min, p.X.Max = -0.6, float64(n)-0.4
		p.Y.Min, p.Y.Max = 0, 100
		fig.Panels = append(fig.Panels, p)
	}
	for j, name := range parts {
		fig.Legend.Add(name, swatch{fill: palette[cols[j]], line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.5)}})
	}
	return fig, nil
}

// shortSeconds prints a step time in at most about six characters under a bar: seconds below
// ten minutes, then whole minutes, then whole hours (1520 s is "25 min"; "%g" wrote "1.52e+03 s",
// which ran into the next bar's label), milli- and microseconds below a second.
func shortSeconds(v float64) string {
	switch {
	case v < 1:
		k, u := timeUnit(v)
		return strconv.FormatFloat(v*k, 'g', 3, 64) + " " + u
	case v < 600:
		return strconv.FormatFloat(v, 'g', 3, 64) + " s"
	case v < 36000:
		return strconv.FormatFloat(v/60, 'f', 0, 64) + " min"
	}
	return strconv.FormatFloat(v/3600, 'f', 0, 64) + " h"
}

// frontierLabels are the labeller's points and labels: every point, the ones off the frontier
// with no label, so that a label avoids them too (the frontier's labels were written over the
// other hardware's points).
func frontierLabels(pts []CostPoint) (plotter.XYs, []string) {
	var xy plotter.XYs
	var labels []string
	for _, pt := range pts {
		xy = append(xy, plotter.XY{X: pt.Cost, Y: pt.Days})
		if pt.Front {
			labels = append(labels, pt.Label)
		} else {
			labels = append(labels, "")
		}
	}
	return xy, labels
}
