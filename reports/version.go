package reports

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version is what tpsim version prints for the build information bi (nil: none embedded): the
// module path and version, the VCS revision and its time, the Go version and platform.
func Version(bi *debug.BuildInfo) string {
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

// VersionLine is Version's first two lines as one: the module version and the VCS revision, for
// the header of a file tpsim writes.
func VersionLine(bi *debug.BuildInfo) string {
	lines := strings.Split(strings.TrimSpace(Version(bi)), "\n")
	if len(lines) > 2 {
		lines = lines[:2]
	}
	return strings.TrimPrefix(strings.Join(lines, "; "), "tpsim ")
}
