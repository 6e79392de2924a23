package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/hardware"
)

func TestHardwareList(t *testing.T) {
	out, errs, code := runArgs(t, "hardware")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// Dense BF16 peaks 312 / 989 / 989 TFLOP/s (validate/data/hardware.json).
	for _, s := range []string{"NAME", "a100-80g", "h100-sxm", "h200", "312 TFLOP/s", "989 TFLOP/s", "80 GB (74.5 GiB)", "nvlink 8 x", "ib all x"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestHardwareShow(t *testing.T) {
	out, errs, code := runArgs(t, "hardware", "a100-80g")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"NVIDIA A100-SXM4-80GB", "peak bf16", "312 TFLOP/s", "nvlink", "ib", "GEMM", "Sources", "device.peak_flops.bf16"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// TestHardwareNVL72 checks that tpsim hardware gb200-nvl72 prints its 72-GPU NVLink level and
// names the figures taken by the stated rule, and that the list marks the presets with assumed
// figures (GB200 NVL72: 72 GPUs on NVLink 5 at 1.8 TB/s per GPU, 900 GB/s per direction).
func TestHardwareNVL72(t *testing.T) {
	out, errs, code := runArgs(t, "hardware", "gb200-nvl72")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^\s+nvlink\s+72\s+900 GB/s`).MatchString(out) {
		t.Errorf("no 72-GPU NVLink level at 900 GB/s:\n%s", out)
	}
	for _, s := range []string{"peak fp4", "10 PFLOP/s", "Assumed (", "efficiency.gemm_achieved_fraction", "power"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	list, errs, code := runArgs(t, "hardware")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("list: exit %d: %s", code, errs)
	}
	for _, s := range []string{"b200", "b300", "gb200-nvl72", "gb300-nvl72", "mi300x", "mi325x", "mi355x", "nvlink 72 x 900 GB/s", "xgmi 8 x", "marked assumed"} {
		if !strings.Contains(list, s) {
			t.Errorf("list lacks %q:\n%s", s, list)
		}
	}
	if strings.Contains(list, "h100-sxm (") {
		t.Errorf("list marks h100-sxm, fitted on its own rows, as assumed:\n%s", list)
	}
}

// hardware NAME --json writes a file that Load reads back to the same hardware, so a user can
// copy a preset, edit it and pass it to predict.
func TestHardwareJSONRoundTrip(t *testing.T) {
	out, errs, code := runArgs(t, "hardware", "h100-sxm", "--json")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	path := filepath.Join(t.TempDir(), "my-h100.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := hardware.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("round trip changed the hardware:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	// The file works as predict's --hardware.
	a := predictJSON(t, "--hardware", path, "--model", "gpt-tiny", "--strategy", "dp=2")
	b := predictJSON(t, "--hardware", "h100-sxm", "--model", "gpt-tiny", "--strategy", "dp=2")
	if a.Time != b.Time {
		t.Errorf("saved file predicts %+v, preset %+v", a.Time, b.Time)
	}
	// Showing the file works too.
	if _, errs, code := runArgs(t, "hardware", path); code != cli.ExitOK {
		t.Errorf("hardware %s: exit %d: %s", path, code, errs)
	}
}

func TestHardwareListJSON(t *testing.T) {
	out, _, code := runArgs(t, "hardware", "--json")
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	var all []hardware.Hardware
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(hardware.Names()) {
		t.Errorf("%d presets, want %d", len(all), len(hardware.Names()))
	}
}

func TestHardwareErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name": "x", "device": {"name": "y"}, "levels": [], "bogus": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		has  []string
	}{
		{[]string{"hardware", "tpu9"}, []string{`"tpu9"`, "a100-80g", "h100-sxm", "h200"}},
		{[]string{"hardware", bad}, []string{"bad.json", "hardware:"}},
	}
	for _, c := range cases {
		out, errs, code := runArgs(t, c.args...)
		if code != cli.ExitFailure || out != "" {
			t.Errorf("%q: exit %d, stdout %q", c.args, code, out)
		}
		for _, s := range c.has {
			if !strings.Contains(errs, s) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, s, errs)
			}
		}
	}
}
