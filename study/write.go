package study

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

// Output file names.
const (
	HTMLFile = "study.html"
	MDFile   = "study.md"
	CSVFile  = "cells.csv"
)

// Figure is one drawn figure of the report: its id, caption and inline SVG.
type Figure struct {
	ID      string
	Caption string
	SVG     string
	// Drawer and Height are what SVG was drawn from, so that a test can render the figure as a
	// PNG to look at (reports.Save).
	Drawer reports.Drawer `json:"-"`
	Height vg.Length      `json:"-"`
}

// Write writes study.html, study.md, cells.csv and, for hardware that no preset name loads, the
// hardware JSON the plan command lines refer to (hardware/NAME.json), each atomically.
func Write(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	for i := range rep.Study.Variants {
		v := &rep.Study.Variants[i]
		if v.Preset {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, "hardware"), 0o755); err != nil {
			return fmt.Errorf("study: %w", err)
		}
		b, err := json.MarshalIndent(v.HW, "", "  ")
		if err != nil {
			return fmt.Errorf("study: %w", err)
		}
		if err := writeFile(filepath.Join(dir, "hardware", v.Name+".json"), append(b, '\n')); err != nil {
			return err
		}
	}
	var csv bytes.Buffer
	if err := reports.CSV(&csv, CSVHeader, rep.CSVRows()); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, CSVFile), csv.Bytes()); err != nil {
		return err
	}
	md, err := rep.Markdown()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, MDFile), md); err != nil {
		return err
	}
	figs, err := rep.Figures()
	if err != nil {
		return err
	}
	page, err := rep.HTML(figs)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, HTMLFile), page)
}

// primary returns the rows of the first objective, in cell order.
func (rep *Report) primary() []Row {
	var out []Row
	obj := rep.Study.File.Objectives[0]
	for _, r := range rep.Rows {
		if r.Objective == obj {
			out = append(out, r)
		}
	}
	return out
}

// CellRows groups the rows by cell: CellRows()[i] holds cell i's rows, one per objective.
func (rep *Report) CellRows() [][]Row {
	n := len(rep.Study.File.Objectives)
	var out [][]Row
	for i := 0; i+n <= len(rep.Rows); i += n {
		out = append(out, rep.Rows[i:i+n])
	}
	return out
}

// Days is seconds in days.
func Days(s float64) float64 { return s / 86400 }

// costAxis says how the frontier of model mi measures cost: in the currency when every hardware
// it runs on has a price, else in GPU-hours.
func (rep *Report) costAxis(mi int) (priced bool, label string) {
	priced = true
	for _, r := range rep.primary() {
		if r.Cell.Model == mi && r.Status == StatusOK && !r.HasCost {
			priced = false
		}
	}
	if priced {
		cur := rep.Study.File.Currency
		if cur == "" {
			cur = "price units"
		}
		return true, "cost (" + cur + ")"
	}
	return false, "GPU-hours"
}

// Frontier returns model mi's ways to train (primary objective, every hardware and GPU count
// that fits) with the frontier marked: no other point is as cheap and as fast and better in one.
func (rep *Report) Frontier(mi int) []reports.CostPoint {
	priced, _ := rep.costAxis(mi)
	var pts []reports.CostPoint
	for _, r := range rep.primary() {
		if r.Cell.Model != mi || r.Status != StatusOK || r.TimeToTrain <= 0 {
			continue
		}
		c := r.GPUHours
		if priced {
			c = r.Cost
		}
		pts = append(pts, reports.CostPoint{Series: r.Variant.Name, Label: r.Variant.Name + " x" + strconv.Itoa(r.Cell.GPUs), Cost: c, Days: Days(r.TimeToTrain)})
	}
	for i := range pts {
		pts[i].Front = true
		for j := range pts {
			a, b := pts[i], pts[j]
			if i != j && b.Cost <= a.Cost && b.Days <= a.Days && (b.Cost < a.Cost || b.Days < a.Days || j < i) {
				pts[i].Front = false
				break
			}
		}
	}
	return pts
}

// Figures draws the report's figures from the primary objective's rows.
func (rep *Report) Figures() ([]Figure, error) {
	st := rep.Study
	obj := st.File.Objectives[0]
	prim := rep.primary()
	var figs []Figure
	add := func(id, caption string, d reports.Drawer, h vg.Length) error {
		var b bytes.Buffer
		if err := reports.WriteSVG(&b, d, reports.DefaultWidth, h); err != nil {
			return err
		}
		svg := b.String()
		if i := strings.Index(svg, "<svg"); i >= 0 {
			svg = svg[i:]
		}
		figs = append(figs, Figure{ID: id, Caption: caption, SVG: svg, Drawer: d, Height: h})
		return nil
	}
	panelH := func(n int) vg.Length { return vg.Length(n)*2.3*vg.Inch + 0.9*vg.Inch }
	for mi, m := range st.Models {
		var series []reports.ScalingSeries
		var layouts []reports.LayoutPanel
		var parts []reports.BreakdownPanel
		for vi, v := range st.Variants {
			s := reports.ScalingSeries{Name: v.Name}
			lp := reports.LayoutPanel{Title: m.Name + " on " + v.Name}
			bp := reports.BreakdownPanel{Title: m.Name + " on " + v.Name}
			for _, r := range prim {
				if r.Cell.Model != mi || r.Cell.Variant != vi || r.Status == StatusOverLimit {
					continue
				}
				var mesh [4]int
				if r.Status == StatusOK {
					s.GPUs = append(s.GPUs, r.Cell.GPUs)
					s.TokensPerS = append(s.TokensPerS, r.Best.TokensPerS)
					mesh = [4]int{r.Mesh.PP, r.Mesh.DP, r.Mesh.CP, r.Mesh.TP}
					t := r.Best.Time
					bp.Labels = append(bp.Labels, strconv.Itoa(r.Cell.GPUs))
					bp.Compute = append(bp.Compute, float64(t.Compute))
					bp.Comm = append(bp.Comm, float64(t.CommExposed))
					bp.Bubble = append(bp.Bubble, float64(t.Bubble))
					bp.Optimizer = append(bp.Optimizer, float64(t.Optimizer))
				}
				lp.GPUs = append(lp.GPUs, r.Cell.GPUs)
				lp.Meshes = append(lp.Meshes, mesh)
			}
			series = append(series, s)
			if len(lp.GPUs) > 0 {
				layouts = append(layouts, lp)
			}
			if len(bp.Labels) > 0 {
				parts = append(parts, bp)
			}
		}
		id := figID(m.Name)
		fig, err := reports.StudyScaling(fmt.Sprintf("%s: tokens/s against GPUs (objective %s)\ndashed: ideal scaling from the smallest count that fits", m.Name, obj), series)
		if err != nil {
			return nil, err
		}
		if err := add("scaling-"+id, "Scaling of "+m.Name+": tokens per second of the best strategy at each GPU count, with ideal (linear) scaling from the smallest count that fits.", fig, reports.DefaultHeight); err != nil {
			return nil, err
		}
		_, xl := rep.costAxis(mi)
		fr, err := reports.StudyFrontier(fmt.Sprintf("%s: time to train %s tokens against cost", m.Name, tokens(st.File.Tokens)), xl, rep.Frontier(mi))
		if err != nil {
			return nil, err
		}
		if err := add("frontier-"+id, "Time to train against "+xl+" for "+m.Name+"; the labelled points are the frontier: nothing else is both cheaper and faster.", fr, reports.DefaultHeight); err != nil {
			return nil, err
		}
		if len(layouts) > 0 {
			lf, err := reports.StudyLayout(m.Name+": best layout by GPU count (bar height: log2 GPUs)", layouts)
			if err != nil {
				return nil, err
			}
			if err := add("layout-"+id, "Layout of the best strategy of "+m.Name+" at each GPU count: each bar is log2 of the GPUs, split into log2 of tp, pp, cp and dp.", lf, panelH(len(layouts))); err != nil {
				return nil, err
			}
		}
		if len(parts) > 0 {
			bf, err := reports.StudyBreakdown(m.Name+": where the step goes (best strategy, closed form)", parts)
			if err != nil {
				return nil, err
			}
			if err := add("breakdown-"+id, "Step breakdown of "+m.Name+" per cell: compute, exposed communication, pipeline bubble and optimizer as shares of the step; the step time under each GPU count.", bf, panelH(len(parts))); err != nil {
				return nil, err
			}
		}
	}
	var mem []reports.MemoryPoint
	var caps []reports.Capacity
	seen := map[string]bool{}
	for _, v := range st.Variants {
		if !seen[v.Name] {
			seen[v.Name] = true
			caps = append(caps, reports.Capacity{Name: v.Name, Bytes: v.HW.Device.Memory})
		}
	}
	for _, r := range prim {
		if r.Status == StatusOK {
			mem = append(mem, reports.MemoryPoint{Series: r.Variant.Name, Model: r.Model.Name, Params: float64(r.Model.Params), Peak: r.Best.Memory.Peak})
		}
	}
	mf, err := reports.StudyMemory("Peak memory per device of the best strategy against model size\none point per GPU count; dashed: device capacity", mem, caps)
	if err != nil {
		return nil, err
	}
	if err := add("memory", "Peak memory per device of the best strategy of every cell that fits, against the model's parameters, with each device's capacity.", mf, reports.DefaultHeight); err != nil {
		return nil, err
	}
	return figs, nil
}

func figID(s string) string {
	return strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}

// tokens prints a token count: 15e12 as 15T.
func tokens(v float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.f {
			return strconv.FormatFloat(v/u.f, 'g', 4, 64) + u.s
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// Human forms of the numbers, for the tables.
func humanSeconds(s float64) string { return units.Seconds(s).String() }

func humanDays(s float64) string {
	d := Days(s)
	switch {
	case d >= 100:
		return strconv.FormatFloat(d, 'f', 0, 64) + " d"
	case d >= 1:
		return strconv.FormatFloat(d, 'f', 1, 64) + " d"
	}
	return strconv.FormatFloat(s/3600, 'f', 1, 64) + " h"
}

// commas rounds v and writes it with thousands separators.
func commas(v float64) string { return reports.Commas(int64(math.Round(v))) }

func (rep *Report) money(r Row) string {
	if !r.HasCost {
		return "-"
	}
	cur := rep.Study.File.Currency
	if cur != "" {
		cur += " "
	}
	return cur + commas(r.Cost)
}

// summaryHeader and summaryRow are the summary table, one row per cell (primary objective;
// the other objectives' winners in the last columns).
func (rep *Report) summaryHeader() []string {
	objs := rep.Study.File.Objectives
	h := []string{"model", "hardware", "GPUs", "status", "best (" + objs[0] + ")", "step", "tokens/s", "MFU", "peak/device", "time to train", "GPU-hours", "cost", "fits from"}
	for _, o := range objs[1:] {
		h = append(h, "best ("+o+")")
	}
	return h
}

func (rep *Report) summaryRow(rows []Row) []string {
	r := rows[0]
	fit := "none"
	if r.SmallestFit > 0 {
		fit = strconv.Itoa(r.SmallestFit)
	}
	out := []string{r.Model.Name, r.Variant.Name, strconv.Itoa(r.Cell.GPUs)}
	if r.Status == StatusOK {
		b := r.Best
		out = append(out, "ok", r.Label, humanSeconds(float64(b.Time.Step)), commas(b.TokensPerS),
			strconv.FormatFloat(100*b.MFU, 'f', 1, 64)+"%", strconv.FormatFloat(b.Memory.Peak.GiB(), 'f', 1, 64)+" GiB",
			humanDays(r.TimeToTrain), commas(r.GPUHours), rep.money(r), fit)
	} else {
		out = append(out, r.Status+": "+short(r.Reason), "-", "-", "-", "-", "-", "-", "-", "-", fit)
	}
	for _, o := range rows[1:] {
		if o.Status == StatusOK {
			out = append(out, o.Label)
		} else {
			out = append(out, o.Status)
		}
	}
	return out
}

// Markdown is study.md: the summary table and each cell's details.
func (rep *Report) Markdown() ([]byte, error) {
	st := rep.Study
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", rep.title())
	if d := st.File.Description; d != "" {
		fmt.Fprintf(&b, "%s\n\n", d)
	}
	b.WriteString(rep.intro() + "\n\n")
	b.WriteString("## Summary\n\n")
	var rows [][]string
	for _, cr := range rep.CellRows() {
		rows = append(rows, rep.summaryRow(cr))
	}
	if err := reports.Markdown(&b, rep.summaryHeader(), rows); err != nil {
		return nil, err
	}
	b.WriteString("\n## Frontier per model\n\n")
	for mi, m := range st.Models {
		fmt.Fprintf(&b, "- **%s**: %s\n", m.Name, rep.frontierText(mi))
	}
	b.WriteString("\n## Cells\n")
	for _, cr := range rep.CellRows() {
		r := cr[0]
		fmt.Fprintf(&b, "\n### %s on %d x %s\n\n", r.Model.Name, r.Cell.GPUs, r.Variant.Name)
		for _, o := range cr {
			fmt.Fprintf(&b, "**Objective %s**: %s\n\n", o.Objective, rep.detailText(o))
			if o.Record != nil && o.Record.Plan != nil && o.Record.Plan.Explanation != "" {
				for _, l := range strings.Split(o.Record.Plan.Explanation, "\n") {
					fmt.Fprintf(&b, "- %s\n", l)
				}
				b.WriteString("\n")
			}
			if o.PlanArgs != nil {
				fmt.Fprintf(&b, "```\ntpsim %s\n", ShellJoin(o.PlanArgs))
				if a := o.PredictArgs(); a != nil {
					fmt.Fprintf(&b, "tpsim %s\n", ShellJoin(a))
				}
				b.WriteString("```\n\n")
			}
		}
	}
	return b.Bytes(), nil
}

func (rep *Report) title() string {
	n := rep.Study.File.Name
	if n == "" {
		n = strings.TrimSuffix(filepath.Base(rep.Study.Path), filepath.Ext(rep.Study.Path))
	}
	return "Planning study: " + n
}

// intro says what the study asked and how the numbers were made.
func (rep *Report) intro() string {
	f := rep.Study.File
	var models, hws []string
	for _, m := range rep.Study.Models {
		models = append(models, m.Name)
	}
	for _, v := range rep.Study.Variants {
		hws = append(hws, v.Name)
	}
	gbs := "each model's default global batch"
	if f.GlobalBatch > 0 {
		gbs = "global batch " + strconv.Itoa(f.GlobalBatch) + " sequences"
	}
	seq := "its default sequence length"
	if f.Seq > 0 {
		seq = "sequence " + strconv.Itoa(f.Seq) + " tokens"
	}
	fix := "nothing fixed"
	if f.Fix != "" {
		fix = "fixed " + f.Fix
	}
	gs := make([]string, len(f.GPUs))
	for i, g := range f.GPUs {
		gs[i] = strconv.Itoa(g)
	}
	return fmt.Sprintf("Models %s on %s at %s GPUs; %s, %s, %s; token budget %s; objectives %s. "+
		"Each cell is one `tpsim plan` (closed-form search, top %d, simulator %s re-ranking the best %d), whose command line is under the cell; "+
		"time to train is the token budget over the winner's closed-form tokens/s, GPU-hours are GPUs x that time, cost is GPU-hours x the price per GPU-hour. tpsim build %s.",
		strings.Join(models, ", "), strings.Join(hws, ", "), strings.Join(gs, ", "), gbs, seq, fix, tokens(f.Tokens), strings.Join(f.Objectives, ", "),
		f.Top, f.Sim, f.SimTop, rep.Version)
}

// frontierText lists a model's frontier from fastest to cheapest.
func (rep *Report) frontierText(mi int) string {
	pts := rep.Frontier(mi)
	priced, _ := rep.costAxis(mi)
	var parts []string
	var front []reports.CostPoint
	for _, p := range pts {
		if p.Front {
			front = append(front, p)
		}
	}
	if len(front) == 0 {
		return "no GPU count of the study fits."
	}
	// Fastest first.
	for i := 1; i < len(front); i++ {
		for j := i; j > 0 && front[j].Days < front[j-1].Days; j-- {
			front[j], front[j-1] = front[j-1], front[j]
		}
	}
	for _, p := range front {
		c := commas(p.Cost) + " GPU-hours"
		if priced {
			c = strings.TrimSpace(rep.Study.File.Currency + " " + commas(p.Cost))
		}
		parts = append(parts, fmt.Sprintf("%s: %s days, %s", p.Label, strconv.FormatFloat(p.Days, 'f', 1, 64), c))
	}
	return strings.Join(parts, "; ")
}

// detailText is one row's numbers in a sentence.
func (rep *Report) detailText(r Row) string {
	if r.Status != StatusOK {
		return r.Status + ": " + r.Reason
	}
	b := r.Best
	s := fmt.Sprintf("`%s` (plan %s): step %s", b.Strategy, b.Plan, humanSeconds(float64(b.Time.Step)))
	if b.SimStep != nil {
		s += fmt.Sprintf(" (simulated %s)", humanSeconds(*b.SimStep))
	}
	if r.Record.MeasuredStep != nil {
		s += fmt.Sprintf(" (measured here %s)", humanSeconds(*r.Record.MeasuredStep))
	} else if r.Record.MeasureNote != "" {
		s += " (" + r.Record.MeasureNote + ")"
	}
	t := b.Time
	s += fmt.Sprintf(" = compute %s + comm exposed %s + bubble %s + optimizer %s; %s tokens/s, MFU %.1f%%, peak %.2f GiB of %.2f GiB per device; %s to train %s tokens, %s GPU-hours",
		humanSeconds(float64(t.Compute)), humanSeconds(float64(t.CommExposed)), humanSeconds(float64(t.Bubble)), humanSeconds(float64(t.Optimizer)),
		commas(b.TokensPerS), 100*b.MFU, b.Memory.Peak.GiB(), r.Variant.HW.Device.Memory.GiB(), humanDays(r.TimeToTrain), tokens(rep.Study.File.Tokens), commas(r.GPUHours))
	if r.HasCost {
		s += ", cost " + rep.money(r)
	}
	return s + "; " + fitText(r) + "."
}

var page = template.Must(template.New("study").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
td.text { overflow-wrap: break-word; min-width: 8em; }
td.num, td.name { white-space: nowrap; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td.text { max-width: 24em; }
tr.bad td { color: #888; }
figure { margin: 1em 0 2em; }
figure svg { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
details { margin: 0.3em 0; }
summary { cursor: pointer; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; }
ul.why { font-size: 0.9em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>{{.Intro}}</p>
<h2 id="summary">Summary</h2>
<table id="summary-table">
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Summary}}<tr class="{{.Class}}">{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<h2 id="frontier">Frontier per model</h2>
<ul id="frontier-list">
{{range .Frontier}}<li><b>{{.Model}}</b>: {{.Text}}</li>
{{end}}</ul>
<h2 id="figures">Figures</h2>
{{range .Figures}}<figure id="{{.ID}}" class="study-figure">
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}
<h2 id="cells">Cells</h2>
{{range .Cells}}<details class="cell" id="{{.ID}}">
<summary>{{.Title}}</summary>
{{range .Objectives}}<p><b>Objective {{.Objective}}</b>: {{.Text}}</p>
{{if .Why}}<ul class="why">{{range .Why}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Cmd}}<pre>{{.Cmd}}</pre>{{end}}
{{end}}</details>
{{end}}
</body>
</html>
`))

// htmlCell is a cell of the summary table; Class is num (numbers, right-aligned, never broken),
// name (model and hardware names, never broken) or text (broken anywhere, at need).
type htmlCell struct {
	Text  template.HTML
	Class string
}

// breakable escapes s for HTML and lets the browser break it after each comma (strategies are
// long lists of key=value without spaces); <wbr> adds nothing to copied text.
func breakable(s string) template.HTML {
	return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), ",", ",<wbr>"))
}

type htmlRow struct {
	Class string
	Cells []htmlCell
}

type htmlObjective struct {
	Objective, Text, Cmd string
	Why                  []string
}

type htmlDetail struct {
	ID, Title  string
	Objectives []htmlObjective
}

type htmlFrontier struct{ Model, Text string }

type htmlFigure struct {
	ID, Caption string
	SVG         template.HTML
}

// HTML is study.html: one self-contained page (inline CSS and SVG, no scripts, no external
// assets).
func (rep *Report) HTML(figs []Figure) ([]byte, error) {
	st := rep.Study
	data := struct {
		Title, Description, Intro string
		Header                    []string
		Summary                   []htmlRow
		Frontier                  []htmlFrontier
		Figures                   []htmlFigure
		Cells                     []htmlDetail
	}{Title: rep.title(), Description: st.File.Description, Intro: rep.intro(), Header: rep.summaryHeader()}
	numeric := map[int]bool{2: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true, 11: true, 12: true}
	class := func(i int) string {
		switch {
		case numeric[i]:
			return "num"
		case i < 2:
			return "name"
		}
		return "text"
	}
	for ci, cr := range rep.CellRows() {
		cls := "ok"
		if cr[0].Status != StatusOK {
			cls = "bad"
		}
		var cells []htmlCell
		for i, s := range rep.summaryRow(cr) {
			text := template.HTML(template.HTMLEscapeString(s))
			if class(i) == "text" {
				text = breakable(s) // numbers never break: a <wbr> is a break even under nowrap
			}
			cells = append(cells, htmlCell{Text: text, Class: class(i)})
		}
		data.Summary = append(data.Summary, htmlRow{Class: cls, Cells: cells})
		r := cr[0]
		d := htmlDetail{ID: fmt.Sprintf("cell-%d", ci+1), Title: fmt.Sprintf("%s on %d x %s: %s", r.Model.Name, r.Cell.GPUs, r.Variant.Name, cellVerdict(r))}
		for _, o := range cr {
			ho := htmlObjective{Objective: o.Objective, Text: rep.detailText(o)}
			if o.Record != nil && o.Record.Plan != nil && o.Record.Plan.Explanation != "" {
				ho.Why = strings.Split(o.Record.Plan.Explanation, "\n")
			}
			if o.PlanArgs != nil {
				ho.Cmd = "tpsim " + ShellJoin(o.PlanArgs)
				if a := o.PredictArgs(); a != nil {
					ho.Cmd += "\ntpsim " + ShellJoin(a)
				}
			}
			d.Objectives = append(d.Objectives, ho)
		}
		data.Cells = append(data.Cells, d)
	}
	for mi, m := range st.Models {
		data.Frontier = append(data.Frontier, htmlFrontier{Model: m.Name, Text: rep.frontierText(mi)})
	}
	for _, f := range figs {
		// The SVG is gonum/plot's own output, drawn from numbers, never from user text that
		// could close the element: the labels are model and hardware names, which the SVG
		// writer escapes.
		data.Figures = append(data.Figures, htmlFigure{ID: f.ID, Caption: f.Caption, SVG: template.HTML(f.SVG)})
	}
	var b bytes.Buffer
	if err := page.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	return b.Bytes(), nil
}

// fitText says what the smallest GPU count that fits is and how it was found.
func fitText(r Row) string {
	if r.FitHow == "swept" {
		if r.SmallestFit == 0 {
			return "no swept GPU count fits"
		}
		return "smallest swept GPU count that fits: " + strconv.Itoa(r.SmallestFit)
	}
	s := "smallest GPU count that fits: " + strconv.Itoa(r.SmallestFit) + " (" + r.FitHow
	if r.FitArgs != nil {
		s += "; `tpsim " + ShellJoin(r.FitArgs) + "`"
	}
	return s + ")"
}

// short cuts a reason to its first sentence (the cell's details have all of it).
func short(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	if r := []rune(s); len(r) > 140 {
		s = string(r[:139]) + "…"
	}
	return s
}

func cellVerdict(r Row) string {
	if r.Status == StatusOK {
		return r.Label + ", " + humanDays(r.TimeToTrain)
	}
	return r.Status
}
