package costmodel

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tpsim/tpsim/hardware"
)

// textWriter collects a text, printed whole once it is complete.
type textWriter struct{ bytes.Buffer }

func (t *textWriter) Printf(format string, a ...any) { fmt.Fprintf(t, format, a...) }

// WriteHardware prints one hardware description with every figure and its source, and the
// fractions of peak the cost model prices its kernels at (tpsim hardware NAME).
func WriteHardware(w io.Writer, hw *hardware.Hardware) error {
	ew := &textWriter{}
	ew.Printf("%s: %s\n", hw.Name, hw.Device.Name)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	dtypes := make([]string, 0, len(hw.Device.Peak))
	for d := range hw.Device.Peak {
		dtypes = append(dtypes, d)
	}
	sort.Strings(dtypes)
	for _, d := range dtypes {
		fmt.Fprintf(tw, "  peak %s\t%v (dense)\n", d, hw.Device.Peak[d])
	}
	fmt.Fprintf(tw, "  memory\t%s\n", hardware.MemoryString(hw.Device.Memory))
	fmt.Fprintf(tw, "  memory bandwidth\t%v\n", hw.Device.MemBandwidth)
	if hw.Device.Power > 0 {
		fmt.Fprintf(tw, "  power\t%g W\n", hw.Device.Power)
	}
	tw.Flush()

	ew.Printf("\nNetwork levels (innermost first; bandwidth per device per direction)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  LEVEL\tDEVICES\tBANDWIDTH\tLATENCY/STEP\tEFFICIENCY\n")
	for _, l := range hw.Levels {
		fmt.Fprintf(tw, "  %s\t%s\t%v\t%v\t%.3g\n", l.Name, l.Devices(), l.Bandwidth, l.Latency, l.Efficiency)
	}
	tw.Flush()

	e := hw.Efficiency
	ew.Printf("\nEfficiency\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  GEMM\t%.3g x f/(f + %v) of peak\n", e.GEMMMax, e.GEMMHalfFLOPs)
	fmt.Fprintf(tw, "  elementwise\t%.3g of memory bandwidth\n", e.MemMax)
	for _, k := range FlashKernels {
		if f := k.Fraction(e); f > 0 {
			fmt.Fprintf(tw, "  %s\t%.3g of peak (attn=%s)\n", k.Name, f, k.Attn)
		} else {
			fmt.Fprintf(tw, "  %s\tnone (attn=%s refused)\n", k.Name, k.Attn)
		}
	}
	tw.Flush()

	if hw.Source != "" {
		ew.Printf("\nSource: %s\n", hw.Source)
	}
	if hw.Notes != "" {
		ew.Printf("\nNotes: %s\n", hw.Notes)
	}
	if a := hw.Assumed(); len(a) > 0 {
		ew.Printf("\nAssumed (taken from another device by the rule their sources state; nothing measured on this one backs them):\n  %s\n", strings.Join(a, ", "))
	}
	if len(hw.Sources) > 0 {
		ew.Printf("\nSources\n")
		keys := make([]string, 0, len(hw.Sources))
		for k := range hw.Sources {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ew.Printf("  %s: %s\n", k, hw.Sources[k])
		}
	}
	_, err := w.Write(ew.Bytes())
	return err
}

// WriteHardwareList prints one line per hardware profile (tpsim hardware): device, dense BF16
// peak, memory, memory bandwidth and network levels, then a line for the host profile that says
// host.
func WriteHardwareList(w io.Writer, all []*hardware.Hardware, host string) error {
	ew := &textWriter{}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tDEVICE\tPEAK BF16\tMEMORY\tMEM BANDWIDTH\tLEVELS\n")
	for _, hw := range all {
		bf16 := "-"
		if p, ok := hw.Device.Peak["bf16"]; ok {
			bf16 = p.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", hw.Name, hw.Device.Name, bf16, hardware.MemoryString(hw.Device.Memory),
			hw.Device.MemBandwidth, hardware.LevelsString(hw.Levels))
	}
	fmt.Fprintf(tw, "%s\t%s\n", hardware.HostName, host)
	tw.Flush()
	var assumed []string
	for _, hw := range all {
		if a := hw.Assumed(); len(a) > 0 {
			assumed = append(assumed, fmt.Sprintf("%s (%d)", hw.Name, len(a)))
		}
	}
	if len(assumed) > 0 {
		ew.Printf("\nFigures marked assumed, with no measurement of the device behind them ('tpsim hardware NAME' names them): %s\n", strings.Join(assumed, ", "))
	}
	_, err := w.Write(ew.Bytes())
	return err
}
