package reports

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// catColors are the fixed colours of the span categories that tpsim writes; other categories
// take the palette's colours in order of first appearance.
var catColors = map[string]color.RGBA{
	"forward":       blue,
	"backward":      orange,
	"optimizer":     green,
	"recompute":     red,
	"communication": purple,
	"collective":    purple,
	"comm":          purple,
	"p2p":           teal,
	"send":          teal,
	"recv":          teal,
	"bubble":        lightGrey,
	"idle":          lightGrey,
}

// Timeline draws spans as a Gantt chart: one lane per (Process, Thread) in order of first
// appearance, time (Start, Dur in seconds) across, one colour per Cat (the Thread when Cat is
// empty) with a legend, and each span's Name written inside it where it fits. An empty title
// gives "Timeline of one step".
func Timeline(title string, spans []Span) (*Figure, error) {
	return Timelines(orDefault(title, "Timeline of one step"), nil, [][]Span{spans})
}

// Timelines draws several timelines stacked top to bottom (for example the predicted one above
// the measured one), with the same lanes, time axis and colours, under one title; panelTitles[i],
// when given, names panel i. It returns an error when a panel has no spans or a span has a
// negative or non-finite time.
func Timelines(title string, panelTitles []string, panels [][]Span) (*Figure, error) {
	if len(panels) == 0 {
		return nil, fmt.Errorf("reports: no timeline to draw")
	}
	if len(panelTitles) > len(panels) {
		return nil, fmt.Errorf("reports: %d panel titles for %d timelines", len(panelTitles), len(panels))
	}
	type lane struct{ process, thread string }
	laneIdx := map[lane]int{}
	var lanes []lane
	cats := map[string]color.RGBA{}
	var catOrder []string
	t0, t1 := 0.0, 0.0
	for i, spans := range panels {
		if len(spans) == 0 {
			return nil, fmt.Errorf("reports: timeline %d has no spans", i)
		}
		for _, s := range spans {
			for _, v := range []float64{s.Start, s.Dur} {
				if err := checkFinite(fmt.Sprintf("span %q of %s", s.Name, s.Process), v); err != nil {
					return nil, err
				}
			}
			if s.Dur < 0 {
				return nil, fmt.Errorf("reports: span %q of %s lasts %g s; durations must be >= 0", s.Name, s.Process, s.Dur)
			}
			t0, t1 = math.Min(t0, s.Start), math.Max(t1, s.Start+s.Dur)
			l := lane{s.Process, s.Thread}
			if _, ok := laneIdx[l]; !ok {
				laneIdx[l] = len(lanes)
				lanes = append(lanes, l)
			}
			c := spanCat(s)
			if _, ok := cats[c]; !ok {
				cats[c] = colorOf(catColors, c, len(catOrder)+5)
				catOrder = append(catOrder, c)
			}
		}
	}
	// Processes first: a lane met later joins the lanes of its process.
	var ordered []lane
	done := map[lane]bool{}
	for _, l := range lanes {
		if done[l] {
			continue
		}
		for _, m := range lanes {
			if m.process == l.process && !done[m] {
				ordered = append(ordered, m)
				done[m] = true
			}
		}
	}
	n := len(ordered)
	ticks := make([]plot.Tick, n)
	for i, l := range ordered {
		laneIdx[l] = i
		label := l.process
		if l.thread != "" {
			label += " " + l.thread
		}
		ticks[i] = plot.Tick{Value: float64(n - 1 - i), Label: label}
	}
	if t1 == t0 {
		t1 = t0 + 1e-9
	}
	k, unit := timeUnit(math.Max(math.Abs(t0), t1))

	fig := newFigure(title)
	for i, spans := range panels {
		p := newPlot()
		if i < len(panelTitles) {
			p.Title.Text = panelTitles[i]
			p.Title.TextStyle.Font = face(10)
		}
		p.X.Label.Text = fmt.Sprintf("time (%s)", unit)
		grid := plotter.NewGrid()
		grid.Horizontal.Width = 0
		grid.Vertical.Color = lightGrey
		p.Add(grid)
		bx := newBoxes()
		for _, s := range spans {
			y := float64(n - 1 - laneIdx[lane{s.Process, s.Thread}])
			bx.add(box{x0: s.Start * k, x1: (s.Start + s.Dur) * k, y0: y - 0.38, y1: y + 0.38,
				fill: cats[spanCat(s)], line: draw.LineStyle{Color: color.White, Width: vg.Points(0.4)}, label: s.Name})
		}
		p.Add(bx)
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Tick.Length = 0
		p.Y.Tick.Label.Font = face(8)
		p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
		p.X.Min, p.X.Max = t0*k, t1*k
		fig.Panels = append(fig.Panels, p)
	}
	for _, c := range catOrder {
		fig.Legend.Add(c, swatch{fill: cats[c]})
	}
	return fig, nil
}

func spanCat(s Span) string {
	if s.Cat != "" {
		return s.Cat
	}
	return s.Thread
}
