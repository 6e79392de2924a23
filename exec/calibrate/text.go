package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// textWriter collects a report's text, printed whole once it is complete.
type textWriter struct{ bytes.Buffer }

func (t *textWriter) Printf(format string, a ...any) { fmt.Fprintf(t, format, a...) }

// WriteText prints what was measured, how well the fits match, and the profile hw (tpsim
// calibrate), whole or not at all.
func (r *Report) WriteText(w io.Writer, hw *hardware.Hardware) error {
	ew := &textWriter{}
	mode := ""
	if r.Quick {
		mode = ", quick"
	}
	ew.Printf("host: %s\n", r.Machine)
	ew.Printf("calibrated %s in %.1f s%s", r.Date, float64(r.Duration), mode)
	if r.OtherCPU >= 0 {
		ew.Printf("; other processes used %.0f%% of the CPU meanwhile", 100*r.OtherCPU)
	}
	ew.Printf("\n")

	g := r.GEMMFit
	ew.Printf("\nMatrix multiply (kernels.MatMul, fp32, median time per call)\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  SHAPE MxKxN\tWHERE\tTIME\tGFLOP/S\tFIT\n")
	for _, p := range r.GEMM {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%.3g\t%+.0f%%\n", p.Shape, p.What, p.Time, p.Rate/1e9, 100*p.RelErr)
	}
	tw.Flush()
	ew.Printf("  fit: time = f / %v + %v; %s\n", g.Rate, g.Intercept, fitSummary(g.Fit))

	e, b := r.ElemFit, r.Bookkeeping
	ew.Printf("\nElementwise ops (bytes as the cost model counts them; as exec = with output allocation and bookkeeping;\n  fit = the profile's price against as exec)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  KERNEL\tBUFFER\tBYTES\tALONE\tGB/S\tAS EXEC\tGB/S\tFIT\n")
	for _, p := range r.Elementwise {
		fmt.Fprintf(tw, "  %s\t%v\t%v\t%v\t%.3g\t%v\t%.3g\t%+.0f%%\n", p.Kernel, units.Bytes(4*p.Elems), p.Bytes, p.KernelTime,
			float64(p.Bytes)/float64(p.KernelTime)/1e9, p.AsExec, float64(p.Bytes)/float64(p.AsExec)/1e9, 100*p.RelErr)
	}
	tw.Flush()
	ew.Printf("  profile (add as exec): time = %v per op + bytes / %v; %s\n", e.Overhead, e.Bandwidth, fitSummary(e.Fit))
	ew.Printf("  add alone: %v per call + bytes / %v; %s\n", e.KernelOverhead, e.KernelBW, fitSummary(e.KernelFit))
	for _, k := range e.ByKernel {
		if k.Kernel == "add" {
			continue // the profile's line above
		}
		ew.Printf("  %s as exec, fitted alone: %v per op + bytes / %v; %s\n", k.Kernel, k.Overhead, k.Bandwidth, fitSummary(k.Fit))
	}
	ew.Printf("  exec's bookkeeping per op (maps, allocator, clock, trace event): %v; make: %v + zeroing at %v\n",
		b.Fixed, b.AllocFixed, b.AllocBandwidth)

	if len(r.Checks) > 0 {
		ew.Printf("\nOther kernels at gpt-tiny sizes, against the profile's price (roofline + per-op overhead)\n")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  KERNEL\tWHAT\tTIME\tPRICED\tRATIO\n")
		for _, c := range r.Checks {
			fmt.Fprintf(tw, "  %s\t%s\t%v\t%v\t%.2f\n", c.Name, c.What, c.Time, c.Priced, c.Ratio)
		}
		tw.Flush()
	}

	c := r.CollFit
	ew.Printf("\nCollectives (exec/comm ring on goroutine ranks; time of the slowest rank per call)\n")
	var sizes []units.Bytes
	seen := map[units.Bytes]bool{}
	for _, p := range r.Collectives {
		if !seen[p.Bytes] {
			seen[p.Bytes] = true
			sizes = append(sizes, p.Bytes)
		}
	}
	slices.Sort(sizes)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  KIND\tRANKS")
	for _, s := range sizes {
		fmt.Fprintf(tw, "\t%v", s)
	}
	fmt.Fprintf(tw, "\tFIT RMS\tMAX\n")
	for _, f := range c.ByKindP {
		fmt.Fprintf(tw, "  %s\t%d", f.Kind, f.P)
		for _, s := range sizes {
			cell := "-"
			for _, p := range r.Collectives {
				if p.Kind == f.Kind && p.P == f.P && p.Bytes == s {
					cell = p.Time.String()
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintf(tw, "\t%.0f%%\t%+.0f%%\n", 100*f.RMSRelErr, 100*f.MaxRelErr)
	}
	tw.Flush()
	ew.Printf("  fit, one level: time = steps x %v + fraction x bytes / %v; %s\n", c.Latency, c.Bandwidth, fitSummary(c.Fit))
	ew.Printf("  fitted to each kind alone:\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    KIND\tLATENCY/STEP\tBANDWIDTH\tFIT RMS\n")
	for _, f := range c.ByKind {
		fmt.Fprintf(tw, "    %s\t%v\t%v\t%.0f%%\n", f.Kind, f.Latency, f.Bandwidth, 100*f.RMSRelErr)
	}
	tw.Flush()
	ew.Printf("  fitted to each group size alone:\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    RANKS\tLATENCY/STEP\tBANDWIDTH\tFIT RMS\n")
	for _, f := range c.ByP {
		fmt.Fprintf(tw, "    %d\t%v\t%v\t%.0f%%\n", f.P, f.Latency, f.Bandwidth, 100*f.RMSRelErr)
	}
	tw.Flush()

	ew.Printf("\nContention (k goroutines doing the same work at once: wall time over one alone)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  K\tMIX SYNCED (PROFILE)\tMIX\tGEMM ONLY\tADD ONLY\n")
	cell := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, p := range r.Contention {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", p.K, cell(p.Synced), cell(p.Mix), cell(p.GEMM), cell(p.Elementwise))
	}
	tw.Flush()
	ew.Printf("  mix: one 256x256x256 GEMM, then %d adds of 65,536 floats (about as long alone); synced: the ranks meet in an all-reduce after each mix, as exec's ranks meet at collectives\n", r.ContentionAdds)

	ef := hw.Efficiency
	l := hw.Levels[0]
	ew.Printf("\nProfile %q (every figure's source is in the JSON: --json or --out)\n", hw.Name)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  device\t%s\n", hw.Device.Name)
	fmt.Fprintf(tw, "  peak fp32 = bf16\t%v\n", hw.Device.Peak["fp32"])
	fmt.Fprintf(tw, "  GEMM efficiency\t%.3g x f/(f + %v)\n", ef.GEMMMax, ef.GEMMHalfFLOPs)
	fmt.Fprintf(tw, "  memory bandwidth\t%v (x %.3g)\n", hw.Device.MemBandwidth, ef.MemMax)
	fmt.Fprintf(tw, "  per-op overhead\t%v\n", ef.OpOverhead)
	fmt.Fprintf(tw, "  memory\t%s\n", hardware.MemoryString(hw.Device.Memory))
	fmt.Fprintf(tw, "  level %s\tall ranks, %v per ring step, %v (efficiency %.3g)\n", l.Name, l.Latency, l.Bandwidth, l.Efficiency)
	fmt.Fprintf(tw, "  cores\t%d\n", hw.Cores)
	sl := make([]string, len(hw.Slowdown))
	for i, v := range hw.Slowdown {
		sl[i] = fmt.Sprintf("%.2f", v)
	}
	fmt.Fprintf(tw, "  slowdown k=1..%d\t%s\n", len(sl), strings.Join(sl, " "))
	tw.Flush()
	if len(r.Notes) > 0 {
		ew.Printf("\nNotes\n")
		for _, n := range r.Notes {
			ew.Printf("  - %s\n", n)
		}
	}
	_, err := w.Write(ew.Bytes())
	return err
}

// fitSummary is "relative error rms 12%, max +30% over 24 points".
func fitSummary(f Fit) string {
	return fmt.Sprintf("relative error rms %.0f%%, max %+.0f%% over %d points", 100*f.RMSRelErr, 100*f.MaxRelErr, f.Points)
}
