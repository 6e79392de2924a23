// Command tpsim plans how to split a model across devices: it prices data, tensor, pipeline and
// hybrid parallelism with an analytical cost model. Run "tpsim --help" for the commands.
package main

import (
	"os"

	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
)

// hosts reads every command's --hardware: a preset, a hardware JSON file, or "host", the profile
// `tpsim calibrate` cached.
var hosts = hardware.Loader{Host: calibrate.Cached}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
