package reports

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// DefaultBand is the relative error band drawn around y = x by PredictedVsMeasured: ±15%, the
// step-time accuracy that `tpsim compare` aims for.
const DefaultBand = 0.15

// PredictedVsMeasured draws each row's predicted step time (y) against its measured step time (x):
// one colour per strategy, points labelled by mesh, the line y = x and a shaded band of ±band
// relative error around it (band <= 0: no band). Simulated step times, where rows have them, are
// drawn as triangles. Both axes are logarithmic when the times span more than a factor of ten.
// Rows whose measured or predicted step time is not positive are left out (a log axis cannot show
// them). An empty title gives "Step time: predicted vs measured".
func PredictedVsMeasured(title string, rows []Row, band float64) (*Figure, error) {
	type point struct {
		x, y  float64
		s     series
		strat string
		label string
	}
	var pts []point
	for _, r := range rows {
		for _, s := range seriesOf(rows) {
			if s.name == "measured" {
				continue
			}
			ps := s.sample(r)
			if ps == nil {
				continue
			}
			x, y := r.Measured.Time.Step, ps.Time.Step
			if err := checkFinite(fmt.Sprintf("%s measured step time", r.Label()), x); err != nil {
				return nil, err
			}
			if err := checkFinite(fmt.Sprintf("%s %s step time", r.Label(), s.name), y); err != nil {
				return nil, err
			}
			if x <= 0 || y <= 0 {
				continue
			}
			pts = append(pts, point{x, y, s, r.Strategy, r.Mesh})
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("reports: no row has a positive measured and predicted step time to plot")
	}
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		lo, hi = math.Min(lo, math.Min(p.x, p.y)), math.Max(hi, math.Max(p.x, p.y))
	}
	k, unit := timeUnit(hi)
	lo, hi = lo*k, hi*k

	p := newPlot()
	p.X.Label.Text = fmt.Sprintf("measured step time (%s)", unit)
	p.Y.Label.Text = fmt.Sprintf("predicted step time (%s)", unit)
	if len(seriesOf(rows)) > 2 {
		p.Y.Label.Text = fmt.Sprintf("predicted or simulated step time (%s)", unit)
	}
	a, b := 0.0, hi*1.1
	if spansDecade(lo, hi) {
		a, b = lo/1.3, hi*1.3
		for _, ax := range []*plot.Axis{&p.X, &p.Y} {
			ax.Scale = plot.LogScale{}
			ax.Tick.Marker = logTicks{}
		}
	}
	fig := newFigure(orDefault(title, "Step time: predicted vs measured"), p)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = lightGrey, lightGrey
	p.Add(grid)

	var bandPoly *plotter.Polygon
	if band > 0 {
		// In log-log axes y = (1±band)x are straight lines, so four corners draw the band exactly.
		lower := a
		if lower == 0 {
			lower = b * 1e-9
		}
		poly, err := plotter.NewPolygon(plotter.XYs{
			{X: lower, Y: lower * (1 - band)}, {X: b, Y: b * (1 - band)},
			{X: b, Y: b * (1 + band)}, {X: lower, Y: lower * (1 + band)}})
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		poly.Color = color.RGBA{0xe4, 0xea, 0xf2, 0xff}
		poly.LineStyle.Width = 0
		p.Add(poly)
		bandPoly = poly
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: math.Max(a, b*1e-9), Y: math.Max(a, b*1e-9)}, {X: b, Y: b}})
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	diag.LineStyle = draw.LineStyle{Color: darkGrey, Width: vg.Points(0.8)}
	p.Add(diag)

	names, colors := strategyColors(rows)
	var lab plotter.XYLabels
	for _, pt := range pts {
		sc, err := plotter.NewScatter(plotter.XYs{{X: pt.x * k, Y: pt.y * k}})
		if err != nil {
			return nil, fmt.Errorf("reports: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colors[pt.strat], Radius: vg.Points(3), Shape: pt.s.glyph}
		p.Add(sc)
		if pt.s.name == "predicted" && pt.label != "" {
			lab.XYs = append(lab.XYs, plotter.XY{X: pt.x * k, Y: pt.y * k})
			lab.Labels = append(lab.Labels, pt.label)
		}
	}
	if len(lab.Labels) > 0 {
		p.Add(&pointLabels{xy: lab.XYs, labels: lab.Labels, style: textStyle(7), gap: vg.Points(5), radius: vg.Points(3)})
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = a, b, a, b

	for _, n := range names {
		fig.Legend.Add(orDefault(n, "(no strategy)"), lineThumb{glyph: &draw.GlyphStyle{Color: colors[n], Radius: vg.Points(3), Shape: draw.CircleGlyph{}}})
	}
	ss := seriesOf(rows)
	if len(ss) > 2 {
		for _, s := range ss[:len(ss)-1] {
			fig.Legend.Add(map[string]string{"predicted": "cost model", "simulated": "simulator"}[s.name],
				lineThumb{glyph: &draw.GlyphStyle{Color: darkGrey, Radius: vg.Points(3), Shape: s.glyph}})
		}
	}
	fig.Legend.Add("y = x", diag)
	if bandPoly != nil {
		fig.Legend.Add(fmt.Sprintf("±%g%% error", band*100), swatch{fill: bandPoly.Color})
	}
	return fig, nil
}

// part is one layer of a stacked bar.
type part struct {
	name  string
	color color.RGBA
	value func(Sample) float64
}

// stackedBars draws, for each row, one stacked bar per series (predicted, simulated when any row
// has it, measured) side by side, each split into parts and marked with the series' letter. mark,
// when not nil, draws a black line across each bar at the value it returns (ok true).
func stackedBars(title string, rows []Row, parts []part, yname string, toUnit func(max float64) (float64, string),
	mark func(Sample) (v float64, ok bool), markName string) (*Figure, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("reports: no rows to plot")
	}
	ss := seriesOf(rows)
	top := 0.0
	for _, r := range rows {
		for _, s := range ss {
			smp := s.sample(r)
			if smp == nil {
				continue
			}
			sum := 0.0
			for _, pt := range parts {
				v := pt.value(*smp)
				if err := checkFinite(fmt.Sprintf("%s %s %s", r.Label(), s.name, pt.name), v); err != nil {
					return nil, err
				}
				if v < 0 {
					return nil, fmt.Errorf("reports: %s %s %s is %g; bars need values >= 0", r.Label(), s.name, pt.name, v)
				}
				sum += v
			}
			top = math.Max(top, sum)
			if mark != nil {
				if v, ok := mark(*smp); ok {
					if err := checkFinite(fmt.Sprintf("%s %s %s", r.Label(), s.name, markName), v); err != nil {
						return nil, err
					}
					top = math.Max(top, v)
				}
			}
		}
	}
	k, unit := toUnit(top)

	p := newPlot()
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", yname, unit)
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = lightGrey
	p.Add(grid)
	bx := newBoxes()
	var lab plotter.XYLabels
	bw := 0.8 / float64(len(ss))
	for i, r := range rows {
		for j, s := range ss {
			smp := s.sample(r)
			if smp == nil {
				continue
			}
			x0 := float64(i) - 0.4 + float64(j)*bw
			x1 := x0 + bw*0.9
			y := 0.0
			for _, pt := range parts {
				v := pt.value(*smp) * k
				if v > 0 {
					bx.add(box{x0: x0, x1: x1, y0: y, y1: y + v, fill: tint(pt.color, s.tint), line: s.barOutline()})
				}
				y += v
			}
			if mark != nil {
				if v, ok := mark(*smp); ok {
					bx.add(box{x0: x0 - bw*0.05, x1: x1 + bw*0.05, y0: v * k, y1: v * k,
						line: draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}})
					y = math.Max(y, v*k)
				}
			}
			lab.XYs = append(lab.XYs, plotter.XY{X: (x0 + x1) / 2, Y: y})
			lab.Labels = append(lab.Labels, s.letter)
		}
	}
	p.Add(bx)
	l, err := plotter.NewLabels(lab)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = face(7)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{Y: vg.Points(1.5)}
	p.Add(l)
	nominalRows(p, rows)
	p.Y.Min = 0
	if top == 0 {
		p.Y.Max = 1
	}

	fig := newFigure(title, p)
	for _, pt := range parts {
		fig.Legend.Add(pt.name, swatch{fill: pt.color, line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.6)}})
	}
	if mark != nil {
		fig.Legend.Add(markName, lineThumb{line: draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}})
	}
	legendSeries(&fig.Legend, ss)
	return fig, nil
}

// nominalRows labels the x axis with one row per integer: strategy over mesh, or, when there
// are many rows, both on one slanted line.
func nominalRows(p *plot.Plot, rows []Row) {
	names := make([]string, len(rows))
	for i, r := range rows {
		switch {
		case len(rows) > 8:
			names[i] = r.Label()
		case r.Strategy == "" || r.Strategy == r.Mesh:
			names[i] = r.Mesh
		case r.Mesh == "":
			names[i] = r.Strategy
		default:
			names[i] = r.Strategy + "\n" + r.Mesh
		}
	}
	p.NominalX(names...)
	p.X.Tick.Label.Font = face(8)
	if len(rows) > 8 {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
		p.Y.Padding = 0
	}
	p.X.Min, p.X.Max = -0.5, float64(len(rows))-0.5
}

// StepBreakdown draws, per row, the step time split into compute, exposed communication,
// pipeline bubble and optimizer as stacked bars: predicted (light, dashed outline), simulated
// where rows have it, and measured (solid) side by side. An empty title gives "Step time by
// strategy: where it goes".
func StepBreakdown(title string, rows []Row) (*Figure, error) {
	parts := []part{
		{"compute", blue, func(s Sample) float64 { return s.Time.Compute }},
		{"exposed communication", orange, func(s Sample) float64 { return s.Time.CommExposed }},
		{"pipeline bubble", yellow, func(s Sample) float64 { return s.Time.Bubble }},
		{"optimizer", green, func(s Sample) float64 { return s.Time.Optimizer }},
	}
	return stackedBars(orDefault(title, "Step time by strategy: where it goes"), rows, parts, "step time", timeUnit, nil, "")
}

// MemoryByCategory draws, per row, the memory per rank stacked by category (MemoryCategories),
// predicted and measured side by side, with the peak (Sample.Memory["peak"], when present) as a
// black line across each bar. The unit (B, KiB, MiB, GiB, TiB) follows the largest bar. An empty
// title gives "Memory per rank by category".
func MemoryByCategory(title string, rows []Row) (*Figure, error) {
	colors := []color.RGBA{blue, orange, green, red, purple, teal}
	parts := make([]part, len(MemoryCategories))
	for i, c := range MemoryCategories {
		parts[i] = part{c, colors[i%len(colors)], func(s Sample) float64 { return s.Memory[c] }}
	}
	peak := func(s Sample) (float64, bool) {
		v, ok := s.Memory["peak"]
		return v, ok
	}
	return stackedBars(orDefault(title, "Memory per rank by category"), rows, parts, "memory per rank", byteUnit, peak, "peak")
}

// CommBytesByDim draws grouped bars of the bytes each rank sends per step on each mesh dimension:
// per row, one colour per dimension, predicted (light, dashed outline), simulated where rows have
// it, and measured (solid) side by side. Dimensions that no row uses are left out; rows that send
// nothing show no bars. An empty title gives "Bytes sent per rank per step, by mesh dimension".
func CommBytesByDim(title string, rows []Row) (*Figure, error) {
	return groupedBars(orDefault(title, "Bytes sent per rank per step, by mesh dimension"), rows, groups{
		what: "bytes", values: func(s Sample) map[string]float64 { return s.CommBytes }, order: MeshDims,
		fixed: map[string]color.RGBA{"dp": blue, "tp": red, "pp": green, "cp": purple},
		yname: "bytes sent per rank per step", unit: byteUnit, none: "no communication"})
}

// PhaseTimes draws grouped bars of the time per step of each mechanism rows have (Sample.Phases,
// in PhaseNames' order: the pipeline bubble, the critical pipeline rank's; ZeRO's all-gathers and
// recompute's replayed forward, per rank), predicted, simulated where rows have it, and measured
// side by side, as CommBytesByDim draws bytes. An empty title gives "Pipeline bubble, ZeRO gathers and recompute".
func PhaseTimes(title string, rows []Row) (*Figure, error) {
	return groupedBars(orDefault(title, "Pipeline bubble, ZeRO gathers and recompute"), rows, groups{
		what: "s", values: func(s Sample) map[string]float64 { return s.Phases }, order: PhaseNames,
		fixed: map[string]color.RGBA{"bubble": yellow, "zero_gather": orange, "recompute": teal},
		names: map[string]string{"bubble": "pipeline bubble", "zero_gather": "ZeRO all-gathers", "recompute": "recompute (replayed forward)"},
		yname: "time per step", unit: timeUnit, none: "no bubble, gathers or recompute"})
}

// groups describes a grouped bar chart of one map of values per sample.
type groups struct {
	what   string // unit word in error messages
	values func(Sample) map[string]float64
	// order of the keys; other keys follow in lexical order.
	order []string
	fixed map[string]color.RGBA
	// names are the legend's names of keys (the key itself when missing).
	names map[string]string
	yname string
	unit  func(max float64) (float64, string)
	none  string // the legend when no row has any value
}

// groupedBars draws, per row, one bar per key and series (predicted, simulated, measured) side by
// side; keys with no positive value in any row are left out.
func groupedBars(title string, rows []Row, g groups) (*Figure, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("reports: no rows to plot")
	}
	ss := seriesOf(rows)
	used := map[string]bool{}
	top := 0.0
	for _, r := range rows {
		for _, s := range ss {
			smp := s.sample(r)
			if smp == nil {
				continue
			}
			for d, v := range g.values(*smp) {
				if err := checkFinite(fmt.Sprintf("%s %s %s %s", r.Label(), s.name, d, g.what), v); err != nil {
					return nil, err
				}
				if v < 0 {
					return nil, fmt.Errorf("reports: %s %s %s %s is %g; bars need values >= 0", r.Label(), s.name, d, g.what, v)
				}
				if v > 0 {
					used[d] = true
				}
				top = math.Max(top, v)
			}
		}
	}
	var dims []string
	for _, d := range g.order {
		if used[d] {
			dims = append(dims, d)
			delete(used, d)
		}
	}
	var other []string
	for d := range used {
		other = append(other, d)
	}
	sort.Strings(other)
	dims = append(dims, other...)
	extra := []color.RGBA{yellow, palette[8], palette[7], teal, orange}

	k, unit := g.unit(top)
	p := newPlot()
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", g.yname, unit)
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	grid.Horizontal.Color = lightGrey
	p.Add(grid)
	bx := newBoxes()
	slots := len(dims) * len(ss)
	bw := 0.8 / float64(max(slots, 1))
	dimColors := map[string]color.RGBA{}
	for i, d := range dims {
		c, ok := g.fixed[d]
		if !ok {
			c = extra[(i-(len(dims)-len(other)))%len(extra)]
		}
		dimColors[d] = c
	}
	for i, r := range rows {
		for di, d := range dims {
			for j, s := range ss {
				smp := s.sample(r)
				if smp == nil || g.values(*smp)[d] <= 0 {
					continue
				}
				x0 := float64(i) - 0.4 + float64(di*len(ss)+j)*bw
				bx.add(box{x0: x0, x1: x0 + bw*0.9, y0: 0, y1: g.values(*smp)[d] * k,
					fill: tint(dimColors[d], s.tint), line: s.barOutline()})
			}
		}
	}
	if len(bx.bs) > 0 {
		p.Add(bx)
	}
	nominalRows(p, rows)
	p.Y.Min, p.Y.Max = 0, top*k*1.05
	if top == 0 {
		p.Y.Max = 1
	}
	fig := newFigure(title, p)
	for _, d := range dims {
		name := d
		if n, ok := g.names[d]; ok {
			name = n
		}
		fig.Legend.Add(name, swatch{fill: dimColors[d], line: draw.LineStyle{Color: darkGrey, Width: vg.Points(0.6)}})
	}
	if len(dims) == 0 {
		fig.Legend.Add(g.none, swatch{})
	}
	for _, s := range ss {
		fig.Legend.Add(s.name, swatch{fill: tint(grey, s.tint), line: s.barOutline()})
	}
	return fig, nil
}

// Scaling draws step time against the number of ranks: one colour per strategy, predicted dashed,
// simulated dotted (where rows have it) and measured solid. The ranks axis is logarithmic, with a
// tick at each number of ranks present, when the ranks span a factor of four or more. It returns
// an error when a row has fewer than one rank. An empty title gives "Step time against number of
// ranks".
func Scaling(title string, rows []Row) (*Figure, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("reports: no rows to plot")
	}
	names, colors := strategyColors(rows)
	ss := seriesOf(rows)
	top := 0.0
	minR, maxR := math.MaxInt, 0
	rankSet := map[int]bool{}
	for _, r := range rows {
		if r.Ranks < 1 {
			return nil, fmt.Errorf("reports: row %q has %d ranks; the scaling figure needs at least 1", r.Label(), r.Ranks)
		}
		minR, maxR = min(minR, r.Ranks), max(maxR, r.Ranks)
		rankSet[r.Ranks] = true
		for _, s := range ss {
			if smp := s.sample(r); smp != nil {
				if err := checkFinite(fmt.Sprintf("%s %s step time", r.Label(), s.name), smp.Time.Step); err != nil {
					return nil, err
				}
				top = math.Max(top, smp.Time.Step)
			}
		}
	}
	k, unit := timeUnit(top)
	p := newPlot()
	p.X.Label.Text = "ranks"
	p.Y.Label.Text = fmt.Sprintf("step time (%s)", unit)
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = lightGrey, lightGrey
	p.Add(grid)

	fig := newFigure(orDefault(title, "Step time against number of ranks"), p)
	for _, n := range names {
		var rs []Row
		for _, r := range rows {
			if r.Strategy == n {
				rs = append(rs, r)
			}
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Ranks < rs[j].Ranks })
		for _, s := range ss {
			var xy plotter.XYs
			for _, r := range rs {
				if smp := s.sample(r); smp != nil && smp.Time.Step > 0 {
					xy = append(xy, plotter.XY{X: float64(r.Ranks), Y: smp.Time.Step * k})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("reports: %w", err)
			}
			l.LineStyle = draw.LineStyle{Color: colors[n], Width: vg.Points(1.5), Dashes: s.dashes}
			sc.GlyphStyle = draw.GlyphStyle{Color: colors[n], Radius: vg.Points(2.5), Shape: s.glyph}
			p.Add(l, sc)
		}
		fig.Legend.Add(orDefault(n, "(no strategy)"), lineThumb{line: draw.LineStyle{Color: colors[n], Width: vg.Points(3)}})
	}
	for _, s := range ss {
		fig.Legend.Add(s.name, lineThumb{line: draw.LineStyle{Color: darkGrey, Width: vg.Points(1.5), Dashes: s.dashes},
			glyph: &draw.GlyphStyle{Color: darkGrey, Radius: vg.Points(2.5), Shape: s.glyph}})
	}

	var ticks []plot.Tick
	for r := range rankSet {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: fmt.Sprint(r)})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if maxR >= 4*minR {
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = float64(minR)/1.25, float64(maxR)*1.25
	} else {
		p.X.Min, p.X.Max = float64(minR)-0.5, float64(maxR)+0.5
	}
	p.Y.Min = 0
	if top == 0 {
		p.Y.Max = 1
	}
	return fig, nil
}
