package search

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// WriteText prints the plan in its human form (tpsim plan).
func (pr *Planned) WriteText(w io.Writer) error {
	out := pr.Out
	ew := &reports.ErrWriter{W: w}
	ew.Printf("%s on %d x %s, global batch %d, sequence %d, objective %s", out.Model, out.GPUs, out.Hardware, out.GlobalBatch, out.Seq, out.Objective)
	if out.Fix != "" {
		ew.Printf(", fixed %s", out.Fix)
	}
	ew.Printf("\nsearched %s combinations: %s feasible", reports.Commas(int64(out.Searched)), reports.Commas(int64(out.Feasible)))
	if len(out.Rejected) > 0 {
		var parts []string
		for _, k := range strategies.SortedReasons(out.Rejected) {
			parts = append(parts, fmt.Sprintf("%s %s", k, reports.Commas(int64(out.Rejected[k]))))
		}
		ew.Printf("; rejected: %s", strings.Join(parts, ", "))
	}
	ew.Printf("\n\n")
	if len(out.Top) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "#\tstrategy\tclosed form\ttokens/s\tMFU\tpeak/device\tpp bytes\tdp bytes\tcp bytes\ttp bytes\tsimulated\t\n")
		for _, e := range out.Top {
			st, _ := strategies.Parse(e.Strategy)
			sim := "-"
			if e.SimStep != nil {
				sim = units.Seconds(*e.SimStep).String()
			}
			fmt.Fprintf(tw, "%d\t%s\t%v\t%s\t%.1f%%\t%.1f GiB\t%v\t%v\t%v\t%v\t%s\t\n", e.Rank, Label(st), e.Time.Step,
				reports.Commas(int64(e.TokensPerS+0.5)), 100*e.MFU, e.Memory.Peak.GiB(),
				e.CommBytes["pp"], e.CommBytes["dp"], e.CommBytes["cp"], e.CommBytes["tp"], sim)
		}
		tw.Flush()
		ew.Printf("ranked by step time from the %s\n\n", out.TimeSource)
	}
	ew.Printf("Why\n")
	for _, l := range strings.Split(out.Explanation, "\n") {
		ew.Printf("  - %s\n", l)
	}
	return ew.Err
}
