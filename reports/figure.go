package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/units"
)

// Default figure size, and the resolution of PNG files.
const (
	DefaultWidth  = 7 * vg.Inch
	DefaultHeight = 4.5 * vg.Inch
	PNGDPI        = 144
)

// Drawer is what Save writes: a *Figure, or a *plot.Plot.
type Drawer interface {
	Draw(draw.Canvas)
}

// Figure is what the figure functions return: one or more plots (panels) stacked top to bottom
// under a common title, their x axes aligned, with one legend drawn to the right of the panels so
// that it never hides data. Callers may change any field before saving.
type Figure struct {
	Title    string
	Subtitle string // a smaller second line under the title; may be empty
	Panels   []*plot.Plot
	Legend   plot.Legend // drawn right of the panels; a legend with no entries takes no room
}

// newFigure returns a figure with the given title; a title with a "\n" gives its first line as
// the title and the rest as the subtitle.
func newFigure(title string, panels ...*plot.Plot) *Figure {
	t, sub, _ := strings.Cut(title, "\n")
	l := plot.NewLegend()
	l.TextStyle.Font = face(9)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(2)
	return &Figure{Title: t, Subtitle: sub, Panels: panels, Legend: l}
}

// face is the font of every text of the figures: Liberation Sans (gonum/plot's default is the
// serif variant), which gonum/plot carries, so no figure depends on the fonts of the machine.
func face(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    face(size),
		XAlign:  draw.XCenter,
		YAlign:  draw.YTop,
		Handler: plot.DefaultTextHandler,
	}
}

// Draw draws f on c: a white background, the title, the legend column and the panels.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	pad := vg.Points(6)
	c = draw.Crop(c, pad, -pad, pad, -pad)
	for _, line := range []struct {
		s    string
		size vg.Length
	}{{f.Title, 13}, {f.Subtitle, 10}} {
		if line.s == "" {
			continue
		}
		sty := textStyle(line.size)
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y}, line.s)
		c.Max.Y -= sty.Rectangle(line.s).Size().Y + vg.Points(3)
	}
	c.Max.Y -= vg.Points(3)
	if lw := f.Legend.Rectangle(c).Size().X; lw > 0 {
		col := c
		col.Min.X = c.Max.X - lw
		col.Max.Y -= vg.Points(4)
		l := f.Legend
		l.Top, l.Left = true, true
		l.Draw(col)
		c.Max.X = col.Min.X - vg.Points(10)
	}
	if len(f.Panels) == 0 {
		return
	}
	rows := make([][]*plot.Plot, len(f.Panels))
	for i, p := range f.Panels {
		rows[i] = []*plot.Plot{p}
	}
	cs := plot.Align(rows, draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(10)}, c)
	for i, p := range f.Panels {
		p.Draw(cs[i][0])
	}
}

// WriteSVG writes d as an SVG image of the given size. Fonts are referenced by name, not
// embedded, so the same input gives the same bytes.
func WriteSVG(w io.Writer, d Drawer, width, height vg.Length) error {
	c := vgsvg.New(width, height)
	d.Draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// WritePNG writes d as a PNG image of the given size at PNGDPI.
func WritePNG(w io.Writer, d Drawer, width, height vg.Length) error {
	c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(PNGDPI))
	d.Draw(draw.New(c))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// Save writes d to dir/base.png and dir/base.svg at the given size (DefaultWidth and
// DefaultHeight suit most figures). It creates dir if needed. Each file is drawn in memory and
// written atomically (internal/atomicfile), so a failed write leaves the previous figure or none,
// never a truncated one.
func Save(d Drawer, dir, base string, width, height vg.Length) error {
	if base == "" {
		return fmt.Errorf("reports: empty file name for a figure")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	// Draw both first, so that a figure that cannot be drawn writes neither file.
	var out [2]bytes.Buffer
	exts := [2]string{".png", ".svg"}
	for i, write := range [2]func(io.Writer, Drawer, vg.Length, vg.Length) error{WritePNG, WriteSVG} {
		if err := write(&out[i], d, width, height); err != nil {
			return fmt.Errorf("reports: drawing %s%s: %w", base, exts[i], err)
		}
	}
	for i, ext := range exts {
		if err := atomicfile.WriteFile(filepath.Join(dir, base+ext), out[i].Bytes(), 0o644); err != nil {
			return fmt.Errorf("reports: %w", err)
		}
	}
	return nil
}

// newPlot returns a plot with the package's styles: smaller fonts than gonum's defaults, light
// grid lines added by the caller.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = face(11)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = face(10)
		a.Tick.Label.Font = face(9)
	}
	return p
}

// Colours: the Tableau 10 palette, which stays distinguishable for most colour-blind readers.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0xba, 0xb0, 0xac, 0xff}, // grey
}

var (
	blue, orange, red, teal, green = palette[0], palette[1], palette[2], palette[3], palette[4]
	yellow, purple, grey           = palette[5], palette[6], palette[9]
	darkGrey                       = color.RGBA{0x55, 0x55, 0x55, 0xff}
	lightGrey                      = color.RGBA{0xd8, 0xd8, 0xd8, 0xff}
)

// colorOf returns the fixed colour of a known name, else the i-th colour of the palette.
func colorOf(fixed map[string]color.RGBA, name string, i int) color.RGBA {
	if c, ok := fixed[name]; ok {
		return c
	}
	return palette[i%len(palette)]
}

// tint mixes c with white: f = 0 gives c, f = 1 white.
func tint(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v) + (255-float64(v))*f)) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

// timeUnit returns the factor that turns seconds into the unit that shows max with at least
// one digit before the point, and the unit's name.
func timeUnit(max float64) (float64, string) {
	switch {
	case max >= 1:
		return 1, "s"
	case max >= 1e-3:
		return 1e3, "ms"
	case max >= 1e-6:
		return 1e6, "µs"
	default:
		return 1e9, "ns"
	}
}

// byteUnit returns the binary unit (B, KiB, MiB, GiB, TiB) that shows max with at least one digit
// before the point: the factor that turns bytes into it (1 / its size) and its name.
func byteUnit(max float64) (float64, string) {
	for _, u := range []struct {
		size units.Bytes
		name string
	}{{units.TiB, "TiB"}, {units.GiB, "GiB"}, {units.MiB, "MiB"}, {units.KiB, "KiB"}} {
		if max >= float64(u.size) {
			return 1 / float64(u.size), u.name
		}
	}
	return 1, "B"
}

// logTicks marks 1, 2 and 5 times each power of ten with labels and the other integer multiples
// without; axes drawn on a log scale span at least a factor of ten, so at least three ticks
// are labelled.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = formatTick(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func formatTick(v float64) string {
	if v >= 1 && v < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// spansDecade reports whether positive values lo..hi span more than a factor of ten, the rule
// for drawing an axis on a log scale.
func spansDecade(lo, hi float64) bool { return lo > 0 && hi/lo > 10 }

// box is a rectangle in data coordinates, or a horizontal segment when y0 == y1.
type box struct {
	x0, x1, y0, y1 float64
	fill           color.Color // nil: not filled
	line           draw.LineStyle
	label          string // drawn inside when it fits
}

// boxes is a plot.Plotter of rectangles in data coordinates: the bars and Gantt spans of the
// figures (gonum's BarChart places bars in canvas lengths, which does not group or scale).
type boxes struct {
	bs    []box
	label text.Style
}

func newBoxes() *boxes {
	sty := textStyle(7)
	sty.YAlign = draw.YCenter
	return &boxes{label: sty}
}

func (b *boxes) add(bx box) { b.bs = append(b.bs, bx) }

// Plot implements plot.Plotter.
func (b *boxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, bx := range b.bs {
		x0, x1, y0, y1 := trX(bx.x0), trX(bx.x1), trY(bx.y0), trY(bx.y1)
		if bx.y0 == bx.y1 {
			c.StrokeLine2(bx.line, x0, y0, x1, y0)
			continue
		}
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		if bx.fill != nil {
			c.FillPolygon(bx.fill, pts)
		}
		if bx.line.Width > 0 {
			c.StrokeLines(bx.line, append(pts, pts[0]))
		}
		if bx.label != "" {
			r := b.label.Rectangle(bx.label)
			if r.Size().X+vg.Points(2) <= x1-x0 && r.Size().Y <= y1-y0 {
				sty := b.label
				sty.Color = textOn(bx.fill)
				c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, bx.label)
			}
		}
	}
}

// textOn returns black or white, whichever reads better on fill.
func textOn(fill color.Color) color.Color {
	if fill == nil {
		return color.Black
	}
	r, g, b, _ := fill.RGBA()
	// Relative luminance weights of ITU-R BT.601.
	if 0.299*float64(r)+0.587*float64(g)+0.114*float64(b) < 0.55*0xffff {
		return color.White
	}
	return color.Black
}

// DataRange implements plot.DataRanger.
func (b *boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, bx := range b.bs {
		xmin, xmax = math.Min(xmin, math.Min(bx.x0, bx.x1)), math.Max(xmax, math.Max(bx.x0, bx.x1))
		ymin, ymax = math.Min(ymin, math.Min(bx.y0, bx.y1)), math.Max(ymax, math.Max(bx.y0, bx.y1))
	}
	return xmin, xmax, ymin, ymax
}

// swatch is a legend thumbnail: a filled rectangle with an outline.
type swatch struct {
	fill color.Color
	line draw.LineStyle
}

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	r.Min.Y += vg.Points(1)
	r.Max.Y -= vg.Points(1)
	pts := []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
	if s.fill != nil {
		c.FillPolygon(s.fill, pts)
	}
	if s.line.Width > 0 {
		c.StrokeLines(s.line, append(pts, pts[0]))
	}
}

// lineThumb is a legend thumbnail: a horizontal line, with a glyph in its middle if given.
type lineThumb struct {
	line  draw.LineStyle
	glyph *draw.GlyphStyle
}

// Thumbnail implements plot.Thumbnailer.
func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	if t.line.Width > 0 {
		c.StrokeLine2(t.line, c.Min.X, y, c.Max.X, y)
	}
	if t.glyph != nil {
		c.DrawGlyphNoClip(*t.glyph, c.Center())
	}
}

// series is one of the kinds of sample a row holds, with the style that tells it apart in bars
// and lines.
type series struct {
	name   string
	letter string // above bars
	sample func(Row) *Sample
	tint   float64 // of bar fills
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

var (
	predictedSeries = series{name: "predicted", letter: "P", tint: 0.5, dashes: []vg.Length{vg.Points(3), vg.Points(2)},
		glyph: draw.CircleGlyph{}, sample: func(r Row) *Sample { return &r.Predicted }}
	simulatedSeries = series{name: "simulated", letter: "S", tint: 0.25, dashes: []vg.Length{vg.Points(1), vg.Points(1.5)},
		glyph: draw.TriangleGlyph{}, sample: func(r Row) *Sample { return r.Simulated }}
	measuredSeries = series{name: "measured", letter: "M", glyph: draw.BoxGlyph{},
		sample: func(r Row) *Sample { return &r.Measured }}
)

// seriesOf returns predicted, simulated (when any row has it) and measured, in that order.
func seriesOf(rows []Row) []series {
	ss := []series{predictedSeries}
	for _, r := range rows {
		if r.Simulated != nil {
			ss = append(ss, simulatedSeries)
			break
		}
	}
	return append(ss, measuredSeries)
}

// barOutline is the outline of the bars of s.
func (s series) barOutline() draw.LineStyle {
	return draw.LineStyle{Color: darkGrey, Width: vg.Points(0.6), Dashes: s.dashes}
}

// legendSeries adds one entry per series that shows how its bars look.
func legendSeries(l *plot.Legend, ss []series) {
	for _, s := range ss {
		l.Add(fmt.Sprintf("%s (%s)", s.name, s.letter), swatch{fill: tint(grey, s.tint), line: s.barOutline()})
	}
}

func strategyColors(rows []Row) (names []string, colors map[string]color.RGBA) {
	colors = map[string]color.RGBA{}
	for _, r := range rows {
		if _, ok := colors[r.Strategy]; !ok {
			colors[r.Strategy] = palette[len(names)%len(palette)]
			names = append(names, r.Strategy)
		}
	}
	return names, colors
}

func orDefault(title, def string) string {
	if title == "" {
		return def
	}
	return title
}

// checkFinite returns an error naming what when v is NaN or infinite.
func checkFinite(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("reports: %s is %v; every value drawn must be finite", what, v)
	}
	return nil
}

// pointLabels writes a label next to each point, at the first of eight places around it (right,
// left, above, below, then the diagonals) where the label overlaps no label placed before it, no
// point and stays inside the data area; when there is no such place, to the right. Placement is
// greedy in input order, so it is deterministic.
type pointLabels struct {
	xy     plotter.XYs
	labels []string
	style  text.Style
	gap    vg.Length // between a point's centre and its label
	radius vg.Length // of the points, which labels avoid
}

// Plot implements plot.Plotter.
func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	pts := make([]vg.Point, len(l.xy))
	for i, xy := range l.xy {
		pts[i] = vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
	}
	g, d := l.gap, l.gap*0.7
	places := []struct {
		dx, dy vg.Length
		xa     text.XAlignment
		ya     text.YAlignment
	}{
		{g, 0, draw.XLeft, draw.YCenter}, {-g, 0, draw.XRight, draw.YCenter},
		{0, g, draw.XCenter, draw.YBottom}, {0, -g, draw.XCenter, draw.YTop},
		{d, d, draw.XLeft, draw.YBottom}, {d, -d, draw.XLeft, draw.YTop},
		{-d, d, draw.XRight, draw.YBottom}, {-d, -d, draw.XRight, draw.YTop},
	}
	overlaps := func(a, b vg.Rectangle) bool {
		return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
	}
	var placed []vg.Rectangle
	for i, s := range l.labels {
		if s == "" {
			continue
		}
		chosen := -1
		var chosenRect vg.Rectangle
		for k, pl := range places {
			sty := l.style
			sty.XAlign, sty.YAlign = pl.xa, pl.ya
			at := vg.Point{X: pts[i].X + pl.dx, Y: pts[i].Y + pl.dy}
			r := sty.Rectangle(s).Add(at)
			ok := r.Min.X >= c.Min.X && r.Max.X <= c.Max.X && r.Min.Y >= c.Min.Y && r.Max.Y <= c.Max.Y
			for _, q := range placed {
				ok = ok && !overlaps(r, q)
			}
			for j, pt := range pts {
				box := vg.Rectangle{Min: vg.Point{X: pt.X - l.radius, Y: pt.Y - l.radius}, Max: vg.Point{X: pt.X + l.radius, Y: pt.Y + l.radius}}
				ok = ok && (j == i || !overlaps(r, box))
			}
			if ok {
				chosen, chosenRect = k, r
				break
			}
		}
		if chosen < 0 {
			chosen = 0
			sty := l.style
			sty.XAlign, sty.YAlign = places[0].xa, places[0].ya
			chosenRect = sty.Rectangle(s).Add(vg.Point{X: pts[i].X + g, Y: pts[i].Y})
		}
		placed = append(placed, chosenRect)
		sty := l.style
		sty.XAlign, sty.YAlign = places[chosen].xa, places[chosen].ya
		c.FillText(sty, vg.Point{X: pts[i].X + places[chosen].dx, Y: pts[i].Y + places[chosen].dy}, s)
	}
}
