package main

import (
	"fmt"
	"io"

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

var runHardware = subcommand("hardware", hardwareHelp, parseHardware)

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

func (o *hardwareOptions) run(w, _ io.Writer) error {
	if o.Name != "" {
		hw, err := hosts.Load(o.Name)
		if err != nil {
			return err
		}
		if o.JSON {
			return hw.Save(w)
		}
		return costmodel.WriteHardware(w, hw)
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
	host := "this machine, as measured by 'tpsim calibrate': no profile cached yet"
	if h, info, err := calibrate.CachedInfo(); err == nil {
		host = fmt.Sprintf("this machine, as measured by 'tpsim calibrate' (%s, %s): 'tpsim hardware host' shows it", h.Device.Name, info.Describe())
	}
	return costmodel.WriteHardwareList(w, all, host)
}
