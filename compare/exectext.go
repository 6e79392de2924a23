package compare

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/units"
)

// WriteExec prints exec's measurement (tpsim exec): the losses against single-device training,
// the collectives the Program inserted, the bytes each rank sent, memory per rank by category and
// the step time.
func WriteExec(w io.Writer, rep *exec.Report, res *exec.Result) error {
	ew := &reports.ErrWriter{W: w}
	st := res.Program.Strategy
	ew.Printf("%s on %s (%d ranks), plan %s, %d steps, batch %d (microbatch %d per dp rank), seed %d, %s\n",
		rep.Model, st.Mesh, rep.Devices, rep.Plan, rep.Steps, st.GBS, st.MBS, rep.Seed, rep.Optimizer)
	ew.Printf("\nloss        ")
	for _, l := range rep.Loss {
		ew.Printf(" %.6g", l)
	}
	ew.Printf("\nsingle dev. ")
	for _, l := range rep.SingleDevice {
		ew.Printf(" %.6g", l)
	}
	verdict := "matches"
	if d := float64(rep.MaxRelDiff); !(d <= exec.MatchTolerance) {
		verdict = "DOES NOT match"
	}
	ew.Printf("\nmax_rel_diff_vs_single %.3g at %s: %s single-device training (tolerance %g)\n", float64(rep.MaxRelDiff), rep.MaxRelDiffAt, verdict, exec.MatchTolerance)
	ew.Printf("closest parameter %s: %.3g beyond its rounding floor, %.2g of the floor used\n", rep.WorstParam.Name, rep.WorstParam.Diff, rep.WorstParam.FloorUse)

	ew.Printf("\nCollectives and pipeline sends the Program inserted (per microbatch; optimizer ones once per step)\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  stage\tphase\tkind\tdim\tmodule\tshape\tbytes sent per rank\n")
	for _, c := range rep.Collectives {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%v\t%s\n", c.Stage, c.Phase, c.Kind, c.Dim, c.Module, c.Shape, reports.Commas(c.SentBytes))
	}
	if len(rep.Collectives) == 0 {
		fmt.Fprintf(tw, "  none\n")
	}
	tw.Flush()

	ew.Printf("\nMeasured bytes sent per rank per step\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	sorted := rep.CommKinds()
	fmt.Fprintf(tw, "  rank\tcoords")
	for _, k := range sorted {
		fmt.Fprintf(tw, "\t%s", k)
	}
	fmt.Fprintf(tw, "\ttotal\n")
	for _, r := range rep.Ranks {
		fmt.Fprintf(tw, "  %d\tpp=%d,dp=%d,tp=%d", r.Rank, r.Coords["pp"], r.Coords["dp"], r.Coords["tp"])
		var total int64
		for _, k := range sorted {
			fmt.Fprintf(tw, "\t%s", reports.Commas(r.CommByKind[k]))
			total += r.CommByKind[k]
		}
		fmt.Fprintf(tw, "\t%s\n", reports.Commas(total))
	}
	tw.Flush()

	ew.Printf("\nMemory per rank (peak live bytes by category, counted from the slices exec's allocator hands out)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  rank")
	cats := append(append([]string{}, exec.Categories...), "peak")
	for _, c := range cats {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Ranks {
		fmt.Fprintf(tw, "  %d", r.Rank)
		for _, c := range cats {
			fmt.Fprintf(tw, "\t%v", units.Bytes(r.PeakBytes[c]))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	ew.Printf("  at the end: the allocators hold %v, the Go heap %v live (the rest is the Program, the batch, the timeline, messages); %v allocated in all\n",
		units.Bytes(rep.TrackedBytes), units.Bytes(rep.GoHeapLiveBytes), units.Bytes(rep.GoTotalAlloc))
	ew.Printf("  after the warm-up the Go heap allocated %v per step outside the allocators (message copies, the timeline)\n", units.Bytes(rep.UntrackedPerStep))
	for _, e := range rep.MemoryErrors {
		ew.Printf("  MEMORY ERROR: %s\n", e)
	}

	ew.Printf("\nStep time (slowest rank, median of %d steps after warm-up): %v\n", len(rep.StepTimes)-min(1, len(rep.StepTimes)-1), units.Seconds(rep.Time.Step))
	ew.Printf("  compute %v, communication %v, pipeline wait %v, optimizer %v (slowest rank of the median step)\n",
		units.Seconds(rep.Time.Compute), units.Seconds(rep.Time.CommExposed), units.Seconds(rep.Time.Bubble), units.Seconds(rep.Time.Optimizer))
	if pp := st.Mesh.PP; pp > 1 {
		m := res.Program.Microbatches
		ew.Printf("  pipeline bubble %.1f%% of the step on the wall clock, %.1f%% on the ranks' device clocks (%s; each pp rank's waits for its inputs, averaged; %s, %d stages, %d microbatches: (p-1)/(m+p-1) = %.1f%% without interleaving)\n",
			100*rep.BubbleFraction, 100*rep.DeviceBubbleFraction, rep.DeviceClock, st.Schedule, pp, m, 100*float64(pp-1)/float64(m+pp-1))
	}
	ew.Printf("  %.4g samples or tokens per second\n", rep.TokensPerS)
	return ew.Err
}

// WriteFinished prints the losses of the steps that finished before exec was interrupted (res nil
// or without a finished step: nothing).
func WriteFinished(w io.Writer, res *exec.Result) error {
	if res == nil || len(res.Losses) == 0 {
		return nil
	}
	ew := &reports.ErrWriter{W: w}
	ew.Printf("loss (%d steps finished)", len(res.Losses))
	for _, l := range res.Losses {
		ew.Printf(" %.6g", l)
	}
	ew.Printf("\n")
	return ew.Err
}
