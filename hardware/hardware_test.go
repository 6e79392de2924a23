package hardware

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/units"
)

func mustPreset(t testing.TB, name string) *Hardware {
	t.Helper()
	h, err := Preset(name)
	if err != nil {
		t.Fatalf("Preset(%q): %v", name, err)
	}
	return h
}

func TestNames(t *testing.T) {
	want := []string{"a100-80g", "b200", "b300", "gb200-nvl72", "gb300-nvl72", "h100-96g", "h100-sxm", "h200", "mi300x", "mi325x", "mi355x"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

func TestPresetsValidate(t *testing.T) {
	for _, name := range Names() {
		h := mustPreset(t, name)
		if err := h.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if h.Name != name {
			t.Errorf("preset file %s.json has name %q; they must agree", name, h.Name)
		}
	}
}

// numericPaths lists the JSON path of every number in h, levels keyed by name, as the keys of
// Hardware.Sources are.
func numericPaths(h *Hardware) []string {
	var out []string
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Float64, reflect.Int:
			out = append(out, prefix)
		case reflect.Struct:
			for i := range v.NumField() {
				tag, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
				if strings.Contains(opts, "omitempty") && v.Field(i).IsZero() {
					continue // not in the file, so no number to cite
				}
				p := tag
				if prefix != "" {
					p = prefix + "." + tag
				}
				walk(p, v.Field(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(prefix+"."+k.String(), v.MapIndex(k))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Float64 {
				for i := range v.Len() {
					out = append(out, fmt.Sprintf("%s.%d", prefix, i))
				}
				return
			}
			for i := range v.Len() {
				e := v.Index(i)
				walk(prefix+"."+e.FieldByName("Name").String(), e)
			}
		}
	}
	walk("", reflect.ValueOf(*h))
	sort.Strings(out)
	return out
}

// uncited lists what is wrong with h's citations: a number with no source, a source that names
// no number, or a missing source or notes text.
func uncited(h *Hardware) []string {
	var out []string
	paths := numericPaths(h)
	for _, p := range paths {
		if strings.TrimSpace(h.Sources[p]) == "" {
			out = append(out, "no source for "+p)
		}
	}
	for _, k := range sortedKeys(h.Sources) {
		if !slices.Contains(paths, k) {
			out = append(out, fmt.Sprintf("sources has %q, which names no number (known: %v)", k, paths))
		}
	}
	if h.Source == "" || h.Notes == "" {
		out = append(out, "source and notes must be filled")
	}
	return out
}

// TestPresetsCiteEveryNumber checks that each preset's sources map names a source for every
// number in it, and nothing else.
func TestPresetsCiteEveryNumber(t *testing.T) {
	for _, name := range Names() {
		for _, p := range uncited(mustPreset(t, name)) {
			t.Errorf("%s: %s", name, p)
		}
	}
}

// TestUncitedCatchesMissingSources checks that the check above fails on a preset number without
// a source: a source removed, a source left blank, and a number added (the power) with none.
func TestUncitedCatchesMissingSources(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *Hardware)
		want   string
	}{
		{"removed", func(h *Hardware) { delete(h.Sources, "device.peak_flops.fp4") }, "no source for device.peak_flops.fp4"},
		{"blank", func(h *Hardware) { h.Sources["levels.nvlink.devices"] = "  " }, "no source for levels.nvlink.devices"},
		{"new number", func(h *Hardware) { h.Device.Peak["fp64"] = 40e12 }, "no source for device.peak_flops.fp64"},
		{"stray source", func(h *Hardware) { h.Sources["device.peak_flops.int8"] = "x" }, `sources has "device.peak_flops.int8"`},
	}
	for _, c := range cases {
		h := mustPreset(t, "gb200-nvl72")
		if p := uncited(h); len(p) != 0 {
			t.Fatalf("gb200-nvl72 before the change: %v", p)
		}
		c.change(h)
		got := strings.Join(uncited(h), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: uncited = %q, want it to contain %q", c.name, got, c.want)
		}
	}
}

// validationFile reads a file of the validation data the repository ships (validate/data, a copy
// of the project's shared validation folder with its README of sources).
func validationFile(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile("../validate/data/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestPresetsMatchHardwareJSON checks the device figures against validate/data/hardware.json.
func TestPresetsMatchHardwareJSON(t *testing.T) {
	var doc struct {
		GPUs []map[string]any `json:"gpus"`
	}
	validationFile(t, "hardware.json", &doc)
	gpu := func(id string) map[string]any {
		for _, g := range doc.GPUs {
			if g["id"] == id {
				return g
			}
		}
		t.Fatalf("hardware.json has no gpu %q", id)
		return nil
	}
	num := func(g map[string]any, key string) (float64, bool) {
		v, ok := g[key].(float64)
		return v, ok
	}
	cases := []struct {
		preset, id string
		tf32From   string // the record whose tf32 applies, where the preset's own has none
	}{
		{"a100-80g", "A100-SXM4-80GB", "A100-SXM4-80GB"},
		{"h100-sxm", "H100-SXM5-80GB", "H100-SXM5-80GB"},
		{"h200", "H200-SXM-141GB", "H100-SXM5-80GB"}, // same die as H100 (hardware.json notes)
	}
	for _, c := range cases {
		h := mustPreset(t, c.preset)
		g := gpu(c.id)
		// check compares got with the record's key, given in units of scale (TFLOP/s: 1e12).
		check := func(what string, got float64, key string, scale float64) {
			t.Helper()
			want, ok := num(g, key)
			if !ok {
				t.Errorf("%s: hardware.json %s has no %s", c.preset, c.id, key)
				return
			}
			if math.Abs(got-want*scale) > 1e-9*want*scale {
				t.Errorf("%s: %s = %g, hardware.json %s %s = %g (x %g)", c.preset, what, got, c.id, key, want, scale)
			}
		}
		for _, dt := range []string{"bf16", "fp16"} {
			check("peak "+dt, float64(h.Device.Peak[dt]), "bf16_fp16_tensor_dense_tflops", 1e12)
		}
		check("peak fp32", float64(h.Device.Peak["fp32"]), "fp32_tflops", 1e12)
		check("memory_bytes", float64(h.Device.Memory), "hbm_gb", 1e9)
		check("mem_bandwidth", float64(h.Device.MemBandwidth), "hbm_bandwidth_GBps", 1e9)
		check("nvlink bandwidth", float64(h.Levels[0].Bandwidth), "nvlink_GBps_per_direction", 1e9)
		if tf, ok := num(gpu(c.tf32From), "tf32_tensor_dense_tflops"); !ok || float64(h.Device.Peak["tf32"]) != tf*1e12 {
			t.Errorf("%s: peak tf32 = %g, want %s's %g TFLOP/s", c.preset, float64(h.Device.Peak["tf32"]), c.tf32From, tf)
		}
	}
}

// TestPresetTopology checks the node and network figures, which hardware.json gives in prose.
func TestPresetTopology(t *testing.T) {
	cases := []struct {
		preset string
		ibGBps float64 // per GPU per direction
	}{
		// DGX-A100: 8x 200 Gb/s HDR per 8-GPU node -> 200e9/8 bytes/s per GPU (Narayanan SC21 Sec. 5).
		{"a100-80g", 200e9 / 8 / 1e9},
		// DGX/HGX H100: 400 Gb/s NDR per GPU -> 400e9/8 bytes/s (Llama 3 paper Sec. 3.3.1).
		{"h100-sxm", 400e9 / 8 / 1e9},
		{"h200", 400e9 / 8 / 1e9},
	}
	for _, c := range cases {
		h := mustPreset(t, c.preset)
		if len(h.Levels) != 2 || h.Levels[0].Name != "nvlink" || h.Levels[1].Name != "ib" {
			t.Fatalf("%s: levels = %+v, want nvlink then ib", c.preset, h.Levels)
		}
		if h.Levels[0].Size != 8 || h.Levels[1].Size != 0 {
			t.Errorf("%s: sizes %d, %d; want 8 GPUs per node, then unbounded", c.preset, h.Levels[0].Size, h.Levels[1].Size)
		}
		if got := float64(h.Levels[1].Bandwidth) / 1e9; got != c.ibGBps {
			t.Errorf("%s: ib bandwidth %g GB/s, want %g", c.preset, got, c.ibGBps)
		}
	}
}

// TestLinkEfficienciesMatchCollectives checks each level's efficiency x line rate against the
// nccl-tests bus bandwidth of the collectives.json record its source cites.
func TestLinkEfficienciesMatchCollectives(t *testing.T) {
	var doc struct {
		Measurements []map[string]any `json:"measurements"`
	}
	validationFile(t, "collectives.json", &doc)
	record := func(id string) map[string]any {
		for _, m := range doc.Measurements {
			if m["id"] == id {
				return m
			}
		}
		t.Fatalf("collectives.json has no measurement %q", id)
		return nil
	}
	busbw := func(id string) float64 {
		m := record(id)
		if v, ok := m["busbw_GBps"].(float64); ok {
			return v
		}
		if r, ok := m["busbw_GBps_per_nic"].([]any); ok && len(r) == 2 {
			return (r[0].(float64) + r[1].(float64)) / 2 // midpoint of the stated range
		}
		t.Fatalf("collectives.json %s has no busbw", id)
		return 0
	}
	cases := []struct {
		preset, level, id string
		perGPU            float64 // divides the record's busbw to get the per-GPU figure
	}{
		{"a100-80g", "nvlink", "a100_8gpu_nvlink_allreduce_expected", 1},
		{"a100-80g", "ib", "dgx_a100_multinode_allreduce_192", 8}, // 192 GB/s per node of 8 NICs
		{"h100-sxm", "nvlink", "h100_8gpu_ring_or_nonallreduce_expected", 1},
		{"h100-sxm", "ib", "ndr400_per_nic_expected", 1},
		{"h200", "nvlink", "h100_8gpu_ring_or_nonallreduce_expected", 1}, // no H200 record; same NVLink4
		{"h200", "ib", "ndr400_per_nic_expected", 1},
	}
	for _, c := range cases {
		h := mustPreset(t, c.preset)
		i := slices.IndexFunc(h.Levels, func(l Level) bool { return l.Name == c.level })
		l := h.Levels[i]
		got := l.Efficiency * float64(l.Bandwidth) / 1e9
		want := busbw(c.id) / c.perGPU
		if math.Abs(got-want) > 0.5 { // efficiencies are rounded to 3 digits
			t.Errorf("%s %s: efficiency %g x %g GB/s = %.1f GB/s, record %s gives %.1f", c.preset, c.level, l.Efficiency, float64(l.Bandwidth)/1e9, got, c.id, want)
		}
		if !strings.Contains(h.Sources["levels."+c.level+".efficiency"], c.id) {
			t.Errorf("%s %s: efficiency source does not cite %s", c.preset, c.level, c.id)
		}
	}
}

// TestGEMMCurveMatchesXLATable checks the h100-sxm GEMM efficiency curve against the measured
// sm_90 bf16 GEMMs in testdata (copied from XLA's default matmul performance table). The fit
// gives a median error of 6.5% and a 90th percentile of 23% (worst: skinny GEMMs whose shape, not
// size, limits them); the bounds leave room for rounding only.
func TestGEMMCurveMatchesXLATable(t *testing.T) {
	h := mustPreset(t, "h100-sxm")
	// XLA's table times each product alone: the ceiling's curve, without the achieved fraction
	// of training steps (0 means 1).
	h.Efficiency.GEMMAchieved = 0
	peak, err := h.PeakFor("bf16")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/xla_sm90_bf16_matmul.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rel []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var v [5]float64
		fields := strings.Fields(line)
		if len(fields) != 5 {
			t.Fatalf("bad line %q", line)
		}
		for i, s := range fields {
			if v[i], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
		}
		flops := units.FLOPs(2 * v[0] * v[1] * v[2] * v[3])
		measured := v[4] * 1e12
		predicted := h.GEMMEfficiency(flops) * float64(peak)
		rel = append(rel, math.Abs(predicted/measured-1))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rel) < 100 {
		t.Fatalf("only %d points read", len(rel))
	}
	sort.Float64s(rel)
	median, p90 := rel[len(rel)/2], rel[len(rel)*9/10]
	if median > 0.08 || p90 > 0.25 {
		t.Errorf("GEMM curve vs XLA sm_90 table: median error %.3f (want <= 0.08), p90 %.3f (want <= 0.25)", median, p90)
	}
}

func TestGEMMEfficiency(t *testing.T) {
	h := &Hardware{Efficiency: Efficiency{GEMMMax: 0.8, GEMMHalfFLOPs: 1e9, MemMax: 0.9}}
	cases := []struct {
		f    units.FLOPs
		want float64
	}{
		{0, 0},
		{-5, 0},
		{units.FLOPs(math.NaN()), 0},
		{1e9, 0.4},                          // f = half point: half of GEMMMax
		{3e9, 0.6},                          // 0.8 * 3/4
		{units.FLOPs(math.Inf(1)), 0.8},     // the limit
		{1e15, 0.8 * 1e15 / (1e15 + 1e9)},   // nearly GEMMMax
		{1e6, 0.8 * 1e6 / (1e6 + 1e9)},      // tiny GEMMs are overhead-bound
		{units.FLOPs(math.MaxFloat64), 0.8}, // no overflow to NaN
	}
	for _, c := range cases {
		if got := h.GEMMEfficiency(c.f); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("GEMMEfficiency(%g) = %g, want %g", float64(c.f), got, c.want)
		}
	}
}

func TestLevelFor(t *testing.T) {
	h := &Hardware{Levels: []Level{{Name: "nvlink", Size: 8}, {Name: "rack", Size: 32}, {Name: "ib", Size: 0}}}
	cases := []struct{ span, want int }{
		{1, 0}, {2, 0}, {8, 0}, // inside one node
		{9, 1}, {32, 1}, // inside one rack of 4 nodes
		{33, 2}, {1 << 20, 2}, // across racks
	}
	for _, c := range cases {
		if got := h.LevelFor(c.span); got != c.want {
			t.Errorf("LevelFor(%d) = %d, want %d", c.span, got, c.want)
		}
	}
}

func TestLevelOf(t *testing.T) {
	h := &Hardware{Levels: []Level{{Name: "nvlink", Size: 8}, {Name: "rack", Size: 32}, {Name: "ib", Size: 0}}}
	cases := []struct{ first, last, want int }{
		{0, 0, 0}, {0, 7, 0}, {8, 15, 0},
		{6, 9, 1},   // 4 devices, but straddling two nodes
		{30, 33, 2}, // straddling two racks
		{32, 63, 1},
	}
	for _, c := range cases {
		if got := h.LevelOf(c.first, c.last); got != c.want {
			t.Errorf("LevelOf(%d, %d) = %d, want %d", c.first, c.last, got, c.want)
		}
	}
}

func TestLevelForPanics(t *testing.T) {
	h := mustPreset(t, "h100-sxm")
	for _, f := range []func(){
		func() { h.LevelFor(0) },
		func() { h.LevelOf(-1, 3) },
		func() { h.LevelOf(5, 4) },
		func() { (&Hardware{}).LevelFor(1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Error("no panic")
				} else if !strings.HasPrefix(r.(string), "hardware: ") {
					t.Errorf("panic %q lacks the package prefix", r)
				}
			}()
			f()
		}()
	}
}

func TestPeakFor(t *testing.T) {
	h := mustPreset(t, "a100-80g")
	if p, err := h.PeakFor("bf16"); err != nil || p != 312e12 {
		t.Errorf("PeakFor(bf16) = %v, %v; want 312 TFLOP/s", p, err)
	}
	_, err := h.PeakFor("fp8")
	want := `hardware: a100-80g has no peak FLOP/s for dtype "fp8"; it has bf16, fp16, fp32, tf32 (add it under device.peak_flops)`
	if err == nil || err.Error() != want {
		t.Errorf("PeakFor(fp8) error = %v, want %q", err, want)
	}
}

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(h *Hardware)
		substr []string
	}{
		{"no name", func(h *Hardware) { h.Name = " " }, []string{`hardware: name is empty`}},
		{"no device name", func(h *Hardware) { h.Device.Name = "" }, []string{"hardware: device.name is empty"}},
		{"no peaks", func(h *Hardware) { h.Device.Peak = nil }, []string{"device.peak_flops is empty"}},
		{"unknown dtype", func(h *Hardware) { h.Device.Peak["bf_16"] = 1 }, []string{`unknown dtype "bf_16"; use one of bf16, fp16, fp32, fp4, fp6, fp64, fp8, tf32`}},
		{"negative peak", func(h *Hardware) { h.Device.Peak["bf16"] = -1 }, []string{"device.peak_flops.bf16 = -1 must be a positive"}},
		{"NaN peak", func(h *Hardware) { h.Device.Peak["fp32"] = units.FLOPsPerSecond(math.NaN()) }, []string{"device.peak_flops.fp32 = NaN"}},
		{"zero memory", func(h *Hardware) { h.Device.Memory = 0 }, []string{"device.memory_bytes = 0 must be positive"}},
		{"negative power", func(h *Hardware) { h.Device.Power = -700 }, []string{"device.power_w = -700 must be positive, or 0"}},
		{"NaN power", func(h *Hardware) { h.Device.Power = math.NaN() }, []string{"device.power_w = NaN must be positive"}},
		{"power in mW", func(h *Hardware) { h.Device.Power = 700e3 }, []string{"device.power_w = 700000 is outside [1, 100000] W"}},
		{"inf bandwidth", func(h *Hardware) { h.Device.MemBandwidth = units.BytesPerSecond(math.Inf(1)) }, []string{"device.mem_bandwidth_bytes_per_s = +Inf"}},
		{"no levels", func(h *Hardware) { h.Levels = nil }, []string{"levels is empty"}},
		{"bad measured product", func(h *Hardware) {
			h.Efficiency.GEMMTimes = []GEMMTime{{M: 2, K: 0, N: 4, Seconds: 1e-6}, {M: 2, K: 3, N: 4, Seconds: units.Seconds(math.NaN())}}
		}, []string{"efficiency.gemm_times[0] = 2x0x4 in 1e-06 s: sizes and time must be positive", "efficiency.gemm_times[1] = 2x3x4 in NaN s"}},
		{"unnamed level", func(h *Hardware) { h.Levels[0].Name = "" }, []string{"levels[0].name is empty"}},
		{"duplicate level", func(h *Hardware) { h.Levels[1].Name = "nvlink" }, []string{`levels[1] (nvlink).name repeats levels[0].name "nvlink"`}},
		{"inner unbounded", func(h *Hardware) { h.Levels[0].Size = 0 }, []string{"levels[0] (nvlink).devices = 0 means unbounded, which only the last level may be"}},
		{"negative size", func(h *Hardware) { h.Levels[0].Size = -8 }, []string{"levels[0] (nvlink).devices = -8 must be at least 2"}},
		{"size one", func(h *Hardware) { h.Levels[0].Size = 1 }, []string{"levels[0] (nvlink).devices = 1 joins no devices"}},
		{"bounded top", func(h *Hardware) { h.Levels[1].Size = 64 }, []string{"levels[1] (ib).devices = 64 must be 0: the last level joins every device"}},
		{"shrinking", func(h *Hardware) {
			h.Levels = slices.Insert(h.Levels, 1, Level{Name: "rack", Size: 4, Bandwidth: 1, Latency: 1, Efficiency: 1})
		}, []string{"levels[1] (rack).devices = 4 must be larger than levels[0].devices = 8"}},
		{"not nesting", func(h *Hardware) {
			h.Levels = slices.Insert(h.Levels, 1, Level{Name: "rack", Size: 12, Bandwidth: 1, Latency: 1, Efficiency: 1})
		}, []string{"levels[1] (rack).devices = 12 must be a multiple of levels[0].devices = 8"}},
		{"zero link bandwidth", func(h *Hardware) { h.Levels[1].Bandwidth = 0 }, []string{"levels[1] (ib).bandwidth_bytes_per_s = 0 must be positive"}},
		{"zero latency", func(h *Hardware) { h.Levels[0].Latency = 0 }, []string{"levels[0] (nvlink).latency_s = 0 must be positive"}},
		{"efficiency above 1", func(h *Hardware) { h.Levels[0].Efficiency = 1.2 }, []string{"levels[0] (nvlink).efficiency = 1.2 must be in (0, 1]"}},
		{"zero efficiency", func(h *Hardware) { h.Levels[1].Efficiency = 0 }, []string{"levels[1] (ib).efficiency = 0 must be in (0, 1]"}},
		{"gemm max", func(h *Hardware) { h.Efficiency.GEMMMax = 80 }, []string{"efficiency.gemm_max_fraction = 80 must be in (0, 1]"}},
		{"gemm half", func(h *Hardware) { h.Efficiency.GEMMHalfFLOPs = -1 }, []string{"efficiency.gemm_half_flops = -1 must be positive"}},
		{"mem max", func(h *Hardware) { h.Efficiency.MemMax = 0 }, []string{"efficiency.mem_max_fraction = 0 must be in (0, 1]"}},
		{"several at once", func(h *Hardware) { h.Name = ""; h.Efficiency.MemMax = 2 }, []string{"hardware: name is empty", "\nhardware: efficiency.mem_max_fraction = 2"}},
		{"unknown kernel", func(h *Hardware) { h.Efficiency.KernelRates = map[Kernel]float64{"gleu": 1e9} }, []string{"efficiency.kernel_elems_per_s.gleu is not a kernel tpsim prices; use one of relu, gelu,"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := mustPreset(t, "h100-sxm")
			c.edit(h)
			err := h.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, s := range c.substr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate() = %q\nwant it to contain %q", err, s)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "hardware: ") {
					t.Errorf("error line %q lacks the prefix", line)
				}
			}
		})
	}
}

// TestGEMMThreads: a product splits over the cores a rank has from GEMMParallelMACs on, and never
// on a profile of devices of their own.
func TestGEMMThreads(t *testing.T) {
	h := &Hardware{Cores: 4, GEMMParallelMACs: 1 << 25}
	for _, c := range []struct {
		macs  int64
		ranks int
		want  int
	}{{1 << 24, 1, 1}, {1 << 25, 1, 4}, {1 << 25, 2, 2}, {1 << 25, 3, 1}, {1 << 25, 8, 1}} {
		if got := h.GEMMThreads(c.macs, c.ranks); got != c.want {
			t.Errorf("GEMMThreads(%d, %d) = %d, want %d", c.macs, c.ranks, got, c.want)
		}
	}
	if got := (&Hardware{}).GEMMThreads(1<<30, 1); got != 1 {
		t.Errorf("a GPU profile splits a product over %d cores", got)
	}
}

// TestMeasuredProducts: a product is found by its sizes, layout and accumulation only.
func TestMeasuredProducts(t *testing.T) {
	e := Efficiency{GEMMTimes: []GEMMTime{{M: 2, K: 3, N: 4, TransB: true, Seconds: 5e-6}}}
	if s, ok := e.Measured(GEMMTime{M: 2, K: 3, N: 4, TransB: true}); !ok || s != 5e-6 {
		t.Errorf("Measured = %v, %v; want 5 µs", s, ok)
	}
	for _, g := range []GEMMTime{{M: 2, K: 3, N: 4}, {M: 2, K: 3, N: 4, TransB: true, Accumulate: true}, {M: 3, K: 2, N: 4, TransB: true}} {
		if _, ok := e.Measured(g); ok {
			t.Errorf("%+v found as the 2x3x4 A·Bᵀ product", g)
		}
	}
}

// TestMeeting: the meeting overhead of k ranks is entry k-1, the last one past the end, nothing
// without a table.
func TestMeeting(t *testing.T) {
	h := &Hardware{MeetOverhead: []units.Seconds{0, 3e-6, 35e-6}}
	for k, want := range map[int]units.Seconds{1: 0, 2: 3e-6, 3: 35e-6, 8: 35e-6} {
		if got := h.Meeting(k); got != want {
			t.Errorf("Meeting(%d) = %v, want %v", k, got, want)
		}
	}
	if got := (&Hardware{}).Meeting(4); got != 0 {
		t.Errorf("no table: Meeting(4) = %v", got)
	}
}
