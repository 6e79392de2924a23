package reports

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// paretoCells is the number of cells across each axis of the grid that thins the candidates of
// a large search: of the candidates falling in one cell only the first is drawn, since the others
// would cover the same pixels. Searches of a few thousand candidates are drawn in full.
const (
	paretoCells    = 400
	paretoMaxDrawn = 2000
)

// Pareto draws step time (y) against peak memory per device (x) for the candidates of a search:
// every candidate in all as a small grey dot, the front as a line through its points in order of
// memory, and the winner, when not nil, as a red ring labelled with its Label, step time and
// memory. Each axis is logarithmic when its values span more than a factor of ten. When all holds
// more than 2000 candidates, candidates that would land on the pixels of one drawn before them
// (the same cell of a 400 x 400 grid over the axes) are not drawn again; the legend gives the
// full count. Times and memory must be positive and finite. An empty title gives "Step time
// against peak memory per device".
func Pareto(title string, all, front []Candidate, winner *Candidate) (*Figure, error) {
	every := append(append([]Candidate(nil), all...), front...)
	if winner != nil {
		every = append(every, *winner)
	}
	if len(every) == 0 {
		return nil, fmt.Errorf("reports: no candidates to plot")
	}
	var tMin, tMax, mMin, mMax = math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, c := range every {
		for _, v := range []float64{c.StepTime, c.PeakMemory} {
			if err := checkFinite(fmt.Sprintf("candidate %q", c.Label), v); err != nil {
				return nil, err
			}
			if v <= 0 {
				return nil, fmt.Errorf("reports: candidate %q has step time %g s and peak memory %g B; both must be positive", c.Label, c.StepTime, c.PeakMemory)
			}
		}
		tMin, tMax = math.Min(tMin, c.StepTime), math.Max(tMax, c.StepTime)
		mMin, mMax = math.Min(mMin, c.PeakMemory), math.Max(mMax, c.PeakMemory)
	}
	kt, tu := timeUnit(tMax)
	mb, mu := byteUnit(mMax)
	xy := func(c Candidate) plotter.XY { return plotter.XY{X: c.PeakMemory * mb, Y: c.StepTime * kt} }

	p := newPlot()
	p.X.Label.Text = fmt.Sprintf("peak memory per device (%s)", mu)
	p.Y.Label.Text = fmt.Sprintf("step time (%s)", tu)
	logX, logY := spansDecade(mMin, mMax), spansDecade(tMin, tMax)
	if logX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = lightGrey, lightGrey
	p.Add(grid)
	fig := newFigure(orDefault(title, "Step time against peak memory per device"), p)

	if len(all) > 0 {
		norm := func(v, lo, hi float64, log bool) int {
			if log {
				v, lo, hi = math.Log(v), math.Log(lo), math.Log(hi)
			}
			if hi == lo {
				return 0
			}
			return int(math.Min(paretoCells-1, (v-lo)/(hi-lo)*paretoCells))
		}
		seen := map[[2]int]bool{}
		var dots plotter.XYs
		for _, c := range all {
			if len(all) > paretoMaxDrawn {
				cell := [2]int{norm(c.PeakMemory, mMin, mMax, logX), norm(c.StepTime, tMin, tMax, logY)}
				if seen[cell] {
					continue
				}
				seen[cell] = true
			}
			dots = append(dots, xy(c))
		}
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: grey, Radius: vg.Points(1.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		fig.Legend.Add(fmt.Sprintf("candidates (%d)", len(all)), sc)
	}
	if len(front) > 0 {
		f := append([]Candidate(nil), front...)
		sort.SliceStable(f, func(i, j int) bool {
			if f[i].PeakMemory != f[j].PeakMemory {
				return f[i].PeakMemory < f[j].PeakMemory
			}
			return f[i].StepTime < f[j].StepTime
		})
		pts := make(plotter.XYs, len(f))
		for i, c := range f {
			pts[i] = xy(c)
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: blue, Width: vg.Points(1.5)}
		sc.GlyphStyle = draw.GlyphStyle{Color: blue, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		p.Add(l, sc)
		fig.Legend.Add(fmt.Sprintf("Pareto front (%d)", len(front)), l, sc)
	}
	if winner != nil {
		sc, err := plotter.NewScatter(plotter.XYs{xy(*winner)})
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: red, Radius: vg.Points(5), Shape: thickRing{}}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{xy(*winner)}, Labels: []string{
			fmt.Sprintf("%s\n%.3g %s, %.3g %s", winner.Label, winner.StepTime*kt, tu, winner.PeakMemory*mb, mu)}})
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		lab.TextStyle[0].Font = face(8)
		lab.TextStyle[0].Color = red
		// Below and left of the winner: no candidate of the front's lower-left side is there,
		// since it would dominate the winner's neighbours on the front.
		lab.TextStyle[0].XAlign = draw.XRight
		lab.TextStyle[0].YAlign = draw.YTop
		lab.Offset = vg.Point{X: vg.Points(-6), Y: vg.Points(-5)}
		p.Add(sc, lab)
		fig.Legend.Add("winner", sc)
	}
	return fig, nil
}

// thickRing is a ring glyph with a line of a third of its radius, visible over the dots.
type thickRing struct{}

func (thickRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: sty.Radius / 3})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}
