package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
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
		_, err = io.WriteString(stdout, versionText(bi))
	}
	return cli.Finish("version", fs, versionHelp, err, stdout, stderr)
}

// versionText is what tpsim version prints for the build information bi (nil: none embedded).
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		return "tpsim: no build information embedded (built without module support)\n"
	}
	path, version := bi.Main.Path, bi.Main.Version
	if path == "" {
		path = bi.Path // a test binary has no main module path of its own
	}
	if version == "" {
		version = "(devel)"
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tpsim %s %s\n", path, version)
	if rev := set["vcs.revision"]; rev != "" {
		extra := []string{}
		if t := set["vcs.time"]; t != "" {
			extra = append(extra, t)
		}
		if set["vcs.modified"] == "true" {
			extra = append(extra, "modified")
		}
		fmt.Fprintf(&b, "revision %s", rev)
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(extra, ", "))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("revision unknown (not built from a VCS checkout, or with -buildvcs=false)\n")
	}
	goos, goarch := set["GOOS"], set["GOARCH"]
	fmt.Fprintf(&b, "%s %s/%s\n", bi.GoVersion, goos, goarch)
	return b.String()
}
