package main

import (
	"io"
	"runtime/debug"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
)

const versionHelp = `Usage: tpsim version (or tpsim --version)

Print the module path and version tpsim was built from, the VCS revision and its time (with
"modified" when the working tree had uncommitted changes), and the Go version: what to quote in a
bug report. 'go install github.com/tpsim/tpsim/cmd/tpsim@VERSION' gives a module version; a build
from a clone gives "(devel)" and the revision.
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlagSet("version")
	err := cli.ParseFlags(fs, args, 0)
	if err == nil {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			bi = nil
		}
		_, err = io.WriteString(stdout, reports.Version(bi))
	}
	return cli.Finish("version", fs, versionHelp, err, stdout, stderr)
}
