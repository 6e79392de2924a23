package hardware

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestNewPresetDatasheets checks a few key numbers of each preset added for the hardware of
// 2025-2026 against the vendor figures written here, each with its citation. Peaks are dense
// (without 2:4 sparsity) in TFLOP/s, memory in GB (1e9 bytes), bandwidths in GB/s, power in W.
func TestNewPresetDatasheets(t *testing.T) {
	type figures struct {
		bf16, fp8, fp4   float64 // dense TFLOP/s; fp4 0 where the device has none
		memGB, memBWGBps float64
		powerW           float64
		domain           int     // devices of the first (scale-up) level
		linkGBps         float64 // first level, per device per direction
		netGbps          float64 // scale-out per device, Gb/s
	}
	cases := []struct {
		preset string
		want   figures
		cite   string
	}{
		// NVIDIA DGX B200 datasheet: 72 PFLOPS FP8 and 144 PFLOPS FP4 for 8 GPUs with sparsity
		// (dense: /8/2 = 4.5 and 9 PFLOP/s), BF16 dense 2.25 PFLOP/s (stas00/ml-engineering
		// TFLOPS table), 1,440 GB (180 GB per GPU), 64 TB/s (8 TB/s per GPU), 1,000 W; NVLink 5
		// 1.8 TB/s per GPU (900 GB/s per direction); HGX AI Factory RA "2-8-9-400": 400 Gb/s per GPU.
		{"b200", figures{2250, 4500, 9000, 180, 8000, 1000, 8, 900, 400}, "DGX B200 datasheet; NVIDIA HGX AI Factory RA"},
		// DGX B300 datasheet via stas00/ml-engineering: BF16 2250, FP8 4500, FP4 12600 dense;
		// 288 GB, 8 TB/s; one ConnectX-8 (800 Gb/s) per GPU; verda.com: 1.1 kW.
		{"b300", figures{2250, 4500, 12600, 288, 8000, 1100, 8, 900, 800}, "DGX B300 datasheet; HGX B300 ConnectX-8"},
		// GB200 NVL72: 360 PFLOPS BF16, 720 PFLOPS FP8, 1,440 PFLOPS FP4 per rack with sparsity
		// (/72/2: 2.5, 5, 10 PFLOP/s dense per GPU), 13.4 TB (186 GB per GPU), 576 TB/s (8 TB/s),
		// 130 TB/s NVLink (1.8 TB/s per GPU); 72 GPUs per NVLink domain; ConnectX-7 400 Gb/s.
		{"gb200-nvl72", figures{2500, 5000, 10000, 186, 8000, 1200, 72, 900, 400}, "NVIDIA GB200 NVL72 specifications"},
		// GB300 NVL72: 1,080 PFLOPS FP4 dense per rack (15 per GPU), FP8 and BF16 as GB200;
		// 288 GB, 8 TB/s, 1.4 kW per GPU; 72-GPU NVLink domain; ConnectX-8 800 Gb/s per GPU
		// (NVIDIA NVL72 Enterprise RA: 4 ConnectX-8 per 4-GPU tray).
		{"gb300-nvl72", figures{2500, 5000, 15000, 288, 8000, 1400, 72, 900, 800}, "NVIDIA GB300 NVL72 specifications, NVL72 Enterprise RA"},
		// AMD Instinct MI300X: 1307.4 TFLOP/s BF16 and 2614.9 FP8 dense, 192 GB HBM3 at
		// 5.3 TB/s, 750 W; 7 Infinity Fabric links of 128 GB/s (64 per direction): 448 GB/s.
		{"mi300x", figures{1307.4, 2614.9, 0, 192, 5300, 750, 8, 448, 400}, "AMD Instinct MI300X data sheet"},
		// AMD Instinct MI325X: MI300X's compute, 256 GB HBM3E at 6 TB/s, 1,000 W, the same links.
		{"mi325x", figures{1307.4, 2614.9, 0, 256, 6000, 1000, 8, 448, 400}, "AMD Instinct MI325X specifications"},
		// AMD Instinct MI355X: 2.5 PFLOP/s BF16, 5.0 FP8, 10.1 MXFP4 dense, 288 GB HBM3E at
		// 8 TB/s, 1,400 W; 7 links of 153.6 GB/s (76.8 per direction): 537.6 GB/s.
		{"mi355x", figures{2500, 5000, 10100, 288, 8000, 1400, 8, 537.6, 400}, "AMD Instinct MI355X specifications"},
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	for _, c := range cases {
		h := mustPreset(t, c.preset)
		w := c.want
		check := func(what string, got, want float64) {
			t.Helper()
			if !near(got, want) {
				t.Errorf("%s %s = %g, want %g (%s)", c.preset, what, got, want, c.cite)
			}
		}
		check("peak bf16 TFLOP/s", float64(h.Device.Peak["bf16"])/1e12, w.bf16)
		check("peak fp8 TFLOP/s", float64(h.Device.Peak["fp8"])/1e12, w.fp8)
		if p, ok := h.Device.Peak["fp4"]; ok || w.fp4 != 0 {
			check("peak fp4 TFLOP/s", float64(p)/1e12, w.fp4)
		}
		check("memory GB", float64(h.Device.Memory)/1e9, w.memGB)
		check("memory bandwidth GB/s", float64(h.Device.MemBandwidth)/1e9, w.memBWGBps)
		check("power W", h.Device.Power, w.powerW)
		if len(h.Levels) != 2 || h.Levels[1].Size != 0 {
			t.Fatalf("%s: levels %+v, want a scale-up level then the unbounded network", c.preset, h.Levels)
		}
		if h.Levels[0].Size != w.domain {
			t.Errorf("%s: first level joins %d devices, want %d (%s)", c.preset, h.Levels[0].Size, w.domain, c.cite)
		}
		check("scale-up GB/s per direction", float64(h.Levels[0].Bandwidth)/1e9, w.linkGBps)
		check("scale-out Gb/s", float64(h.Levels[1].Bandwidth)*8/1e9, w.netGbps)
	}
}

// TestGB200ScaleOutIsConnectX7: NVIDIA's GB200 NVL72 pairs each GPU with a 400 Gb/s NIC, GB300
// with an 800 Gb/s ConnectX-8 (NVL72 Enterprise RA); a GB200 preset at 800 Gb/s is the NIC
// generation mistake ai-dynamo/aisimulate PR 192 made.
func TestGB200ScaleOutIsConnectX7(t *testing.T) {
	gb200, gb300 := mustPreset(t, "gb200-nvl72"), mustPreset(t, "gb300-nvl72")
	if got, want := float64(gb300.Levels[1].Bandwidth)/float64(gb200.Levels[1].Bandwidth), 2.0; got != want {
		t.Errorf("gb300/gb200 scale-out = %g, want %g (800 vs 400 Gb/s per GPU)", got, want)
	}
	if s := gb200.Sources["levels.ib.bandwidth_bytes_per_s"]; !strings.Contains(s, "ConnectX-7") {
		t.Errorf("gb200-nvl72 scale-out source does not name ConnectX-7: %q", s)
	}
	if s := gb300.Sources["levels.ib.bandwidth_bytes_per_s"]; !strings.Contains(s, "ConnectX-8") {
		t.Errorf("gb300-nvl72 scale-out source does not name ConnectX-8: %q", s)
	}
}

// TestNVL72Levels checks that a 72-GPU NVLink domain prices groups inside the rack on NVLink
// and groups that cross racks on the network, and that a 36-GPU domain (NVL36) validates too.
func TestNVL72Levels(t *testing.T) {
	h := mustPreset(t, "gb200-nvl72")
	for _, c := range []struct{ span, level int }{{2, 0}, {8, 0}, {65, 0}, {72, 0}, {73, 1}, {144, 1}} {
		if got := h.LevelFor(c.span); got != c.level {
			t.Errorf("LevelFor(%d) = %d, want %d", c.span, got, c.level)
		}
	}
	// Devices 70 and 73 sit in racks 0 and 1.
	if got := h.LevelOf(70, 73); got != 1 {
		t.Errorf("LevelOf(70, 73) = %d, want 1 (two racks)", got)
	}
	nvl36 := mustPreset(t, "gb200-nvl72")
	nvl36.Levels[0].Size = 36
	if err := nvl36.Validate(); err != nil {
		t.Errorf("an NVL36 level does not validate: %v", err)
	}
}

// The efficiency fields a preset with no training measurement takes by the stated rule
// (presets' notes): h100-sxm's value, scaled by gemm_max_fraction / 0.803 for fractions of a
// peak, not scaled for the fraction of the ceiling.
func TestAssumedFractionsFollowTheRule(t *testing.T) {
	h100 := mustPreset(t, "h100-sxm").Efficiency
	for _, name := range []string{"b200", "b300", "gb200-nvl72", "gb300-nvl72", "mi300x", "mi325x", "mi355x"} {
		h := mustPreset(t, name)
		e := h.Efficiency
		r := e.GEMMMax / h100.GEMMMax
		round3 := func(v float64) float64 { return math.Round(v*1000) / 1000 }
		for _, c := range []struct {
			field     string
			got, want float64
		}{
			{"gemm_achieved_fraction", e.GEMMAchieved, h100.GEMMAchieved},
			{"fp8_gemm_fraction", e.FP8GEMM, round3(h100.FP8GEMM * r)},
			{"flash_attention_fraction", e.FlashMax, round3(h100.FlashMax * r)},
			{"mem_max_fraction", e.MemMax, h100.MemMax},
			{"overlap_compute_slowdown", e.OverlapSlowdown, h100.OverlapSlowdown},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %g, want %g by the rule (h100-sxm's, r = %.3f); refit h100-sxm? regenerate this preset", name, c.field, c.got, c.want, r)
			}
			if !slices.Contains(h.Assumed(), "efficiency."+c.field) {
				t.Errorf("%s: efficiency.%s is taken by the rule but not marked assumed", name, c.field)
			}
		}
		if slices.Contains(h.Assumed(), "device.peak_flops.bf16") || slices.Contains(h.Assumed(), "device.memory_bytes") {
			t.Errorf("%s: datasheet figures marked assumed: %v", name, h.Assumed())
		}
	}
	// The presets with training rows (tpsim fit) assume nothing this way.
	for _, name := range []string{"a100-80g", "h100-sxm", "h100-96g"} {
		if a := mustPreset(t, name).Assumed(); len(a) != 0 {
			t.Errorf("%s: Assumed() = %v, want none", name, a)
		}
	}
}

func TestAssumed(t *testing.T) {
	h := &Hardware{Sources: map[string]string{
		"b": "assumed: from another chip", "a": "  assumed: leading space", "c": "datasheet", "d": "not assumed: measured",
	}}
	if got, want := h.Assumed(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Assumed() = %v, want %v", got, want)
	}
}
