package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
)

func TestCalibrateFlags(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		code      int
		stdoutHas []string
		stderrHas []string
	}{
		{"help", []string{"--help"}, cli.ExitOK, []string{"Usage: tpsim calibrate", "--out", "--quick", "--json", "host.json"}, nil},
		{"help via tpsim help", nil, cli.ExitOK, []string{"Usage: tpsim calibrate"}, nil},
		{"unknown flag", []string{"--bogus"}, cli.ExitUsage, nil, []string{"unknown flag: --bogus", "tpsim calibrate --help"}},
		{"argument", []string{"host"}, cli.ExitUsage, nil, []string{`unexpected argument "host"`}},
		{"empty --out", []string{"--out", ""}, cli.ExitUsage, nil, []string{"--out needs a file name"}},
		{"bad bool", []string{"--quick=maybe"}, cli.ExitUsage, nil, []string{"quick"}},
		{"--out into a missing directory fails before measuring", []string{"--out", "/nonexistent-dir/host.json"}, cli.ExitFailure, nil,
			[]string{"directory /nonexistent-dir does not exist; create it or choose another path"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"calibrate"}, c.args...)
			if c.args == nil {
				args = []string{"help", "calibrate"}
			}
			out, errs, code := runArgs(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errs)
			}
			wantAll(t, "stdout", out, c.stdoutHas)
			wantAll(t, "stderr", errs, c.stderrHas)
		})
	}
}

func TestParseCalibrate(t *testing.T) {
	o, _, err := parseCalibrate([]string{"--out", "h.json", "--quick", "--json"})
	if err != nil || *o != (calibrateOptions{Out: "h.json", Quick: true, JSON: true}) {
		t.Errorf("parseCalibrate = %+v, %v", o, err)
	}
}

// One quick calibration: --json prints a hardware file, --out writes the same, the cache holds it
// and predict can use the file.
func TestCalibrateQuick(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("HOME", dir)
	out := filepath.Join(dir, "host.json")
	stdout, stderr, code := runArgs(t, "calibrate", "--quick", "--json", "--out", out)
	if code != cli.ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	wantAll(t, "stderr", stderr, []string{"calibrate: matrix multiply", "calibrate: collectives", "wrote " + out, "cached "})
	hw, err := hardware.Parse([]byte(stdout))
	if err != nil {
		t.Fatalf("--json output is not a hardware file: %v\n%s", err, stdout)
	}
	file, err := os.ReadFile(out)
	if err != nil || string(file) != stdout {
		t.Errorf("--out file differs from --json output (%v)", err)
	}
	cached, err := calibrate.Cached()
	if err != nil || !reflect.DeepEqual(cached, hw) {
		t.Errorf("cache after calibrate: %v; or it differs from the --json output", err)
	}
	if _, errs, code := runArgs(t, "predict", "--hardware", out, "--model", "gpt-tiny", "--strategy", "tp=2", "--json"); code != cli.ExitOK {
		t.Errorf("predict --hardware on the calibrated profile: exit %d: %s", code, errs)
	}
}

// The table names each part of the calibration and the profile.
func TestWriteCalibration(t *testing.T) {
	hw, rep, err := calibrate.Run(t.Context(), calibrate.Options{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b, hw); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"host: ", "Matrix multiply", "seed-mlp 0 forward", "GFLOP/S", "Elementwise ops", "bookkeeping per op",
		"Collectives", "all_reduce", "fit, one level", "Contention", "Profile \"host\"", "per-op overhead", "slowdown k=1..8", "Notes"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

// The issue: `calibrate --quick` replaced the cached full profile with a coarse one. It leaves a
// full profile in place and says so.
func TestCalibrateQuickKeepsFullCache(t *testing.T) {
	cacheHostProfile(t) // a full profile of this machine, as `tpsim calibrate` leaves
	before, err := calibrate.Cached()
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runArgs(t, "calibrate", "--quick", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	wantAll(t, "stderr", stderr, []string{"kept the full profile cached in", "quick calibration"})
	after, info, err := calibrate.CachedInfo()
	if err != nil || !reflect.DeepEqual(after, before) || !info.Full() {
		t.Errorf("the cache changed after calibrate --quick (%v, %+v)", err, info)
	}
}
