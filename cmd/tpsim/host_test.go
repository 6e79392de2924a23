package main

import (
	"os"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
)

// cacheHostProfile points the calibration cache at a fresh directory and caches the fixture
// profile testdata/host.json there, as `tpsim calibrate` would.
func cacheHostProfile(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("HOME", dir)
	data, err := os.ReadFile("testdata/host.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := hardware.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := calibrate.SaveCache(h, &calibrate.Report{OtherCPU: -1}); err != nil || !s.Written {
		t.Fatalf("caching the fixture: %+v, %v", s, err)
	}
}

// The issue: "--hardware host is documented everywhere but accepted only by compare". Every
// command that takes --hardware (or a hardware name) accepts it, reading the cached profile; with
// none cached each says to run tpsim calibrate.
func TestHardwareHostEverywhere(t *testing.T) {
	cmds := [][]string{
		{"predict", "--model", "gpt-tiny", "--strategy", "tp=2", "--hardware", "host"},
		{"sim", "--model", "gpt-tiny", "--strategy", "tp=2", "--hardware", "host"},
		{"hardware", "host"},
	}
	t.Run("cached", func(t *testing.T) {
		cacheHostProfile(t)
		for _, args := range cmds {
			if _, errs, code := runArgs(t, args...); code != cli.ExitOK {
				t.Errorf("%v: exit %d: %s", args, code, errs)
			}
		}
		// The preset list names host and says what is cached.
		if out, _, code := runArgs(t, "hardware"); code != cli.ExitOK || !strings.Contains(out, "host  ") || !strings.Contains(out, "full; how loaded") {
			t.Errorf("tpsim hardware does not list the cached host profile:\n%s", out)
		}
		// plan reads the profile too; its search prices with costmodel.Estimate, which refuses
		// a calibrated profile's per-kernel rates (a limit of the planner, said in its error).
		_, errs, _ := runArgs(t, "plan", "--model", "seed-mlp", "--gpus", "2", "--hardware", "host")
		if strings.Contains(errs, "unknown hardware") {
			t.Errorf("plan --hardware host: %s", errs)
		}
	})
	t.Run("not cached", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", dir)
		t.Setenv("HOME", dir)
		for _, args := range cmds {
			_, errs, code := runArgs(t, args...)
			if code != cli.ExitFailure {
				t.Errorf("%v with no cached profile: exit %d, want %d", args, code, cli.ExitFailure)
			}
			wantAll(t, "stderr", errs, []string{"tpsim calibrate"})
		}
	})
}
