package main

import (
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
)

func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tpsim/tpsim", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5d5f6a9"}, {Key: "vcs.time", Value: "2026-12-01T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}}}
	want := "tpsim github.com/tpsim/tpsim v0.3.0\nrevision 5d5f6a9 (2026-12-01T09:00:00Z, modified)\ngo1.26.8 linux/amd64\n"
	if got := reports.Version(bi); got != want {
		t.Errorf("reports.Version =\n%s\nwant\n%s", got, want)
	}
	bi.Main.Version, bi.Settings = "", nil
	if got := reports.Version(bi); !strings.Contains(got, "(devel)") || !strings.Contains(got, "revision unknown") {
		t.Errorf("devel build without VCS: %q", got)
	}
	// The real command: the module path of this build.
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, code := runArgs(t, args...)
		if code != cli.ExitOK || !strings.Contains(out, "github.com/tpsim/tpsim") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errs)
		}
	}
}

// The issue: no "did you mean" for `tpsim comapre` or the tutorial's ColumnwiseParallel.
func TestDidYouMean(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"comapre"}, cli.ExitUsage, `unknown command "comapre" (did you mean "compare"?)`},
		{[]string{"predict", "--modle", "gpt-tiny"}, cli.ExitUsage, "unknown flag: --modle (did you mean --model?)"},
		{[]string{"predict", "--model", "gpt-tiy"}, cli.ExitFailure, `unknown model "gpt-tiy" (did you mean "gpt-tiny"?)`},
		{[]string{"predict", "--model", "gpt-tiny", "--hardware", "a100"}, cli.ExitFailure, `unknown hardware "a100" (did you mean "a100-80g"?)`},
		{[]string{"exec", "--model", "seed-mlp", "--mesh", "tp=2", "--plan", "0=ColumnwiseParallel,2=rowwise"}, cli.ExitFailure, `unknown style "ColumnwiseParallel" (did you mean "colwise"?)`},
		{[]string{"compare", "--strategies", "hybird"}, cli.ExitUsage, `unknown strategy "hybird" (did you mean "hybrid"?)`},
		{[]string{"completion", "tcsh"}, cli.ExitUsage, `unknown shell "tcsh"`},
	}
	for _, c := range cases {
		_, errs, code := runArgs(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// Each script names every command and the flags each command really parses; bash's is checked
// by bash itself where it is installed.
func TestCompletion(t *testing.T) {
	flags := commandFlags()
	for _, want := range []string{"model", "meshes", "rounds", "foreign-hardware"} {
		if !slices.Contains(flags["compare"], want) {
			t.Errorf("compare's flags %v lack %s", flags["compare"], want)
		}
	}
	if !slices.Contains(flags["plan"], "gpus") || !slices.Contains(flags["predict"], "strategy") {
		t.Errorf("flags read from the commands' help: %v", flags)
	}
	for _, sh := range shells {
		out, errs, code := runArgs(t, "completion", sh)
		if code != cli.ExitOK {
			t.Fatalf("%s: exit %d: %s", sh, code, errs)
		}
		for _, c := range commands {
			if !strings.Contains(out, c.name) {
				t.Errorf("%s script lacks command %s", sh, c.name)
			}
		}
		for _, w := range []string{"--foreign-hardware", "gpt-tiny", "host"} {
			if sh == "fish" {
				w = strings.TrimPrefix(w, "--")
			}
			if !strings.Contains(out, w) {
				t.Errorf("%s script lacks %s", sh, w)
			}
		}
		if sh == "bash" {
			if bash, err := exec.LookPath("bash"); err == nil {
				cmd := exec.Command(bash, "-n")
				cmd.Stdin = strings.NewReader(out)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("bash -n rejects the script: %v\n%s", err, b)
				}
			}
		}
	}
	if _, errs, code := runArgs(t, "completion"); code != cli.ExitUsage || !strings.Contains(errs, "name a shell") {
		t.Errorf("completion without a shell: exit %d, %q", code, errs)
	}
}
