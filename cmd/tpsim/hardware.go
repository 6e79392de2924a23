package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/reports"
)

const hardwareHelp = `Usage: tpsim hardware [NAME|FILE] [flags]

Without an argument, list the hardware presets: device, dense BF16 peak, memory, memory
bandwidth and the network levels. With a preset name or a hardware JSON file, show every figure
with its source. 'tpsim hardware a100-80g --json > my.json' writes a preset to edit; give the
file to 'tpsim predict --hardware my.json'.
`

// hardwareOptions are the flags and argument of tpsim hardware.
type hardwareOptions struct {
	Name string // preset name or JSON path; "" lists the presets
	JSON bool
}

func runHardware(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseHardware(args)
	if err == nil {
		err = o.run(stdout)
	}
	return cli.Finish("hardware", fs, hardwareHelp, err, stdout, stderr)
}

func parseHardware(args []string) (*hardwareOptions, *pflag.FlagSet, error) {
	o := &hardwareOptions{}
	fs := cli.NewFlagSet("hardware")
	fs.BoolVar(&o.JSON, "json", false, "print JSON: one hardware file (as Load reads it back), or an array of all presets")
	if err := cli.ParseFlags(fs, args, 1); err != nil {
		return o, fs, err
	}
	o.Name = fs.Arg(0)
	return o, fs, nil
}

func (o *hardwareOptions) run(w io.Writer) error {
	if o.Name != "" {
		hw, err := hosts.Load(o.Name)
		if err != nil {
			return err
		}
		if o.JSON {
			return hw.Save(w)
		}
		return writeHardware(w, hw)
	}
	var all []*hardware.Hardware
	for _, name := range hardware.Names() {
		hw, err := hardware.Preset(name)
		if err != nil {
			return err
		}
		all = append(all, hw)
	}
	if o.JSON {
		return reports.WriteJSON(w, all)
	}
	ew := &reports.ErrWriter{W: w}
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
	host := "this machine, as measured by 'tpsim calibrate': no profile cached yet"
	if h, info, err := calibrate.CachedInfo(); err == nil {
		host = fmt.Sprintf("this machine, as measured by 'tpsim calibrate' (%s, %s): 'tpsim hardware host' shows it", h.Device.Name, info.Describe())
	}
	fmt.Fprintf(tw, "%s\t%s\n", hardware.HostName, host)
	tw.Flush()
	return ew.Err
}

// writeHardware prints one hardware description with every figure and its source.
func writeHardware(w io.Writer, hw *hardware.Hardware) error {
	ew := &reports.ErrWriter{W: w}
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
	for _, k := range costmodel.FlashKernels {
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
	return ew.Err
}
