package hardware

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/units"
)

// The first hour: a hardware JSON with a memory bandwidth of 1e-300 made predict print
// "Time per step: NaN s" and exit 0; peaks and memories of 1e308 printed absurd figures; a key
// given twice silently won; overlap_compute_slowdown 5 and levels[0].devices 3 were accepted.
// Each is now refused by Parse with a message that names the field, and where it is a range,
// the range and why.
func TestParseRefusesOutOfRangeFigures(t *testing.T) {
	good := string(presetBytes(t, "h100-sxm"))
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("the h100-sxm preset has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, c := range []struct {
		name, in string
		want     string
	}{
		{"tiny memory bandwidth", edit(`"mem_bandwidth_bytes_per_s": 3350e9`, `"mem_bandwidth_bytes_per_s": 1e-300`),
			"device.mem_bandwidth_bytes_per_s = 1e-300 is outside [1e+06, 1e+17] bytes/s: device memory moves at most about 8e12 B/s"},
		{"huge peak", edit(`"bf16": 989.4e12`, `"bf16": 1e308`),
			"device.peak_flops.bf16 = 1e+308 is outside [1e+06, 1e+19] FLOP/s: no accelerator reaches more than about 9e15 dense"},
		{"huge memory", edit(`"memory_bytes": 80e9`, `"memory_bytes": 1e308`),
			"device.memory_bytes = 1e+308 is outside [1e+06, 1e+15] bytes: no accelerator holds more than 288 GB"},
		{"overlap slowdown as a multiple", edit(`"overlap_compute_slowdown": 0.189`, `"overlap_compute_slowdown": 5`),
			"efficiency.overlap_compute_slowdown = 5 is outside [0, 1]: overlapped compute was measured 18.9% slower on average and 40% at most"},
		{"odd node", edit(`"devices": 8`, `"devices": 3`),
			"levels[0] (nvlink).devices = 3 is odd: a group of 2 ranks (tp=2) would straddle two units"},
		{"latency in microseconds", edit(`"latency_s": 0.6e-6`, `"latency_s": 0.6e3`),
			"levels[0] (nvlink).latency_s = 600 is outside [0, 1] s"},
		{"link in bits", edit(`"bandwidth_bytes_per_s": 450e9`, `"bandwidth_bytes_per_s": 3.6e15`),
			"levels[0] (nvlink).bandwidth_bytes_per_s = 3.6e+15 is outside [1e+06, 1e+14] bytes/s"},
		{"fraction as a hundredth", edit(`"gemm_max_fraction": 0.803`, `"gemm_max_fraction": 0.000803`),
			"efficiency.gemm_max_fraction = 0.000803 is outside [0.001, 1]"},
		{"huge half size", edit(`"gemm_half_flops": 5.5e9`, `"gemm_half_flops": 1e300`),
			"efficiency.gemm_half_flops = 1e+300 is outside [0, 1e+15] FLOPs"},
		{"duplicate peak", edit(`"bf16": 989.4e12,`, `"bf16": 989.4e12, "bf16": 1,`),
			"line 6, column 30: device.peak_flops.bf16 is given twice; keep one"},
		{"duplicate top-level key", edit(`"name": "h100-sxm",`, `"name": "h100-sxm", "name": "h200",`),
			"line 2, column 28: name is given twice"},
		{"duplicate in a level", edit(`"devices": 8,`, `"devices": 8, "devices": 16,`),
			"levels[0].devices is given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v\nwant an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "NaN") {
				t.Errorf("error prints NaN: %v", err)
			}
		})
	}
}

// Every limit admits every preset and a calibrated host profile, the figures they are set
// against: the presets parse (TestRoundTrip), and so does the host profile of cmd/tpsim's tests.
func TestLimitsAdmitHostProfile(t *testing.T) {
	data, err := os.ReadFile("../cmd/tpsim/testdata/host.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err != nil {
		t.Fatalf("a calibrated host profile is refused: %v", err)
	}
}

// The shared-core fields: a slowdown beyond 10x the ranks, cores beyond any machine, a meeting
// overhead of a second, a non-finite overlap.
func TestSharedCoreLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(h *Hardware)
		want string
	}{
		{"slowdown of 2 ranks at 250", func(h *Hardware) { h.Slowdown = []float64{1, 250} }, "slowdown[1] = 250 is more than 200: 2 ranks sharing the cores evenly take at most 2 times as long"},
		{"slowdown_unmet Inf", func(h *Hardware) { h.Slowdown = []float64{1, 2}; h.UnmetSlowdown = []float64{1, math.Inf(1)} }, "slowdown_unmet[1] = +Inf must be at least 1"},
		{"cores", func(h *Hardware) { h.Cores = 1 << 20 }, "cores = 1048576 is more than 65536"},
		{"meeting", func(h *Hardware) { h.MeetOverhead = []units.Seconds{0, 2} }, "meet_overhead_s[1] = 2 is outside [0, 1] s"},
		{"overlap NaN", func(h *Hardware) { h.Efficiency.OverlapSlowdown = math.NaN() }, "efficiency.overlap_compute_slowdown = NaN must be zero or positive"},
		{"kernel rate", func(h *Hardware) { h.Efficiency.KernelRates = map[Kernel]float64{"gelu": 1e-3} }, "efficiency.kernel_elems_per_s.gelu = 0.001 is outside [1000, 1e+15] elements/s"},
		{"huge product", func(h *Hardware) {
			h.Efficiency.GEMMTimes = []GEMMTime{{M: 1 << 30, K: 1 << 30, N: 1 << 30, Seconds: 1}}
		}, "efficiency.gemm_times[0] = 1073741824x1073741824x1073741824: each side must be at most 1048576"},
		{"too many devices", func(h *Hardware) {
			h.Levels = append([]Level{{Name: "x", Size: 2, Bandwidth: 1e9, Latency: 1e-6, Efficiency: 1}}, h.Levels...)
			h.Levels[1].Size = 1 << 26
		}, "levels[1] (nvlink).devices = 67108864 is more than 16777216"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := mustPreset(t, "h100-sxm")
			c.edit(h)
			err := h.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}
