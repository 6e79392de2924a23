package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tpsim/tpsim/hardware"
)

// quick runs the Quick calibration once for every test that needs a measured profile.
var quick struct {
	once sync.Once
	hw   *hardware.Hardware
	rep  *Report
	log  string
	err  error
}

func quickRun(t *testing.T) (*hardware.Hardware, *Report) {
	t.Helper()
	quick.once.Do(func() {
		var log bytes.Buffer
		quick.hw, quick.rep, quick.err = Run(context.Background(), Options{Quick: true, Progress: &log})
		quick.log = log.String()
	})
	if quick.err != nil {
		t.Fatal(quick.err)
	}
	return quick.hw, quick.rep
}

// The fitted profile validates, names this machine and cites every number. No assertion is about
// speed: the machine may be shared.
func TestRunQuickProfile(t *testing.T) {
	h, r := quickRun(t)
	if err := h.Validate(); err != nil {
		t.Fatalf("profile does not validate: %v", err)
	}
	if h.Name != "host" || h.Cores != runtime.NumCPU() || len(h.Levels) != 1 || h.Levels[0].Name != "host" || h.Levels[0].Size != 0 {
		t.Errorf("profile shape: name %q, cores %d, levels %+v", h.Name, h.Cores, h.Levels)
	}
	if h.Device.Peak["fp32"] <= 0 || h.Device.Peak["bf16"] != h.Device.Peak["fp32"] {
		t.Errorf("peaks %v: want fp32 > 0 and bf16 = fp32", h.Device.Peak)
	}
	if h.Efficiency.MemMax != 1 || h.Levels[0].Efficiency != 1 || h.Efficiency.OpOverhead < 0 {
		t.Errorf("efficiency %+v, level efficiency %g", h.Efficiency, h.Levels[0].Efficiency)
	}
	if len(h.Slowdown) != 8 || h.Slowdown[0] != 1 {
		t.Errorf("slowdown %v: want 8 entries starting at 1", h.Slowdown)
	}
	for i, s := range h.Slowdown {
		if s < 1 {
			t.Errorf("slowdown[%d] = %g < 1", i, s)
		}
	}
	fp := Fingerprint()
	if !strings.Contains(h.Source, fp.CPU) || !strings.Contains(h.Source, fp.GoVersion) || !strings.Contains(h.Device.Name, fp.CPU) {
		t.Errorf("source %q / device %q should name %s", h.Source, h.Device.Name, fp)
	}
	for _, k := range []string{"device.peak_flops.fp32", "device.peak_flops.bf16", "device.memory_bytes", "device.mem_bandwidth_bytes_per_s",
		"efficiency.gemm_max_fraction", "efficiency.gemm_half_flops", "efficiency.mem_max_fraction", "efficiency.op_overhead_s",
		"levels.host.devices", "levels.host.bandwidth_bytes_per_s", "levels.host.latency_s", "levels.host.efficiency", "cores", "slowdown"} {
		if h.Sources[k] == "" {
			t.Errorf("no source for %s", k)
		}
	}
	// Fits are sane: positive figures, errors bounded loosely (a shared machine is noisy; a
	// unit mistake would be off by orders of magnitude).
	const loose = 3
	for name, f := range map[string]Fit{"gemm": r.GEMMFit.Fit, "elementwise": r.ElemFit.Fit, "collectives": r.CollFit.Fit} {
		if f.Points < 2 || !(f.RMSRelErr < loose) {
			t.Errorf("%s fit %+v: want at least 2 points and rms < %g", name, f, float64(loose))
		}
	}
	if r.GEMMFit.Rate <= 0 || r.ElemFit.Bandwidth <= 0 || r.CollFit.Latency <= 0 || r.CollFit.Bandwidth <= 0 || r.Bookkeeping.Fixed <= 0 {
		t.Errorf("non-positive figures: gemm %+v, elementwise %+v, collectives %v %v, bookkeeping %+v",
			r.GEMMFit, r.ElemFit, r.CollFit.Latency, r.CollFit.Bandwidth, r.Bookkeeping)
	}
	for _, p := range r.GEMM {
		if p.Time <= 0 || p.Model <= 0 {
			t.Errorf("gemm %s: time %v, model %v", p.Shape, p.Time, p.Model)
		}
	}
	for _, c := range r.Checks {
		if c.Time <= 0 || c.Priced <= 0 || c.Ratio <= 0 {
			t.Errorf("check %s: %+v", c.Name, c)
		}
	}
	if len(r.CollFit.ByKindP) != 9 || r.Memory <= 0 || len(r.Notes) == 0 || !r.Quick || r.Duration <= 0 {
		t.Errorf("report: %d kind x ranks fits, memory %v, %d notes, quick %v, duration %v", len(r.CollFit.ByKindP), r.Memory, len(r.Notes), r.Quick, r.Duration)
	}
	if !strings.Contains(quick.log, "calibrate: matrix multiply") || !strings.Contains(quick.log, "calibrate: done in") {
		t.Errorf("progress lacks the phases:\n%s", quick.log)
	}
}

// Save and Parse round-trip the profile, as `tpsim calibrate --out` and `--hardware FILE` do.
func TestProfileRoundTrip(t *testing.T) {
	h, _ := quickRun(t)
	var buf bytes.Buffer
	if err := h.Save(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := hardware.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("Parse(Save(profile)): %v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(back, h) {
		t.Errorf("round trip changed the profile:\n got %+v\nwant %+v", back, h)
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, _, err := Run(ctx, Options{Quick: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run on a canceled context: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("canceled Run took %v", d)
	}
}

// useCacheDir points os.UserCacheDir at a fresh directory and returns the cache file's path.
func useCacheDir(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir) // Linux and other Unix
	t.Setenv("HOME", dir)           // macOS: ~/Library/Caches
	path, err := CachePath()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCache(t *testing.T) {
	path := useCacheDir(t)
	h, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	h.Name = "host"

	_, err = Cached()
	if !errors.Is(err, ErrNoCache) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "run `tpsim calibrate`") {
		t.Fatalf("empty cache: %v; want ErrNoCache saying to run tpsim calibrate", err)
	}

	got, err := SaveCache(h, &Report{OtherCPU: -1})
	if err != nil || got.Path != path || !got.Written {
		t.Fatalf("SaveCache = %+v, %v; want written to %q", got, err, path)
	}
	back, err := Cached()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, h) {
		t.Errorf("cache round trip changed the profile")
	}

	// A profile measured elsewhere is stale, and the error says what changed.
	other := Fingerprint()
	other.NumCPU += 2
	other.GoVersion = "go1.0"
	if err := writeCache(path, h, other, false, 0); err != nil {
		t.Fatal(err)
	}
	_, err = Cached()
	var stale *StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "cores") || !strings.Contains(err.Error(), "go1.0 -> ") ||
		!strings.Contains(err.Error(), "run `tpsim calibrate`") || stale.Path != path {
		t.Errorf("changed fingerprint: %v; want a StaleError naming cores and Go", err)
	}
	other = Fingerprint()
	other.Format--
	if err := writeCache(path, h, other, false, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Cached(); !errors.As(err, &stale) || !strings.Contains(err.Error(), "calibration format") {
		t.Errorf("older format: %v; want a StaleError naming the format", err)
	}

	// A damaged file says so and how to fix it.
	for _, bad := range []string{"{", `{"fingerprint": {}, "hardware": {}, "extra": 1}`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Cached(); err == nil || !strings.Contains(err.Error(), "unreadable") || !strings.Contains(err.Error(), "tpsim calibrate") {
			t.Errorf("damaged cache %q: %v", bad, err)
		}
	}
	// A cached profile that does not validate is refused when read.
	e := Fingerprint()
	if err := os.WriteFile(path, []byte(`{"fingerprint": `+mustJSON(t, e)+`, "saved": "", "hardware": {"name": "host"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Cached(); err == nil || !strings.Contains(err.Error(), "unreadable") || !strings.Contains(err.Error(), "hardware:") {
		t.Errorf("invalid cached profile: %v", err)
	}
	// No stray temporary files are left.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("cache directory holds %d entries, want host.json only", len(entries))
	}
}

func TestSaveCacheRefusesInvalid(t *testing.T) {
	useCacheDir(t)
	if _, err := SaveCache(&hardware.Hardware{Name: "host"}, &Report{}); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Errorf("SaveCache of an invalid profile: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	f := Fingerprint()
	if f.Format != FormatVersion || f.NumCPU != runtime.NumCPU() || f.GOARCH != runtime.GOARCH || f.GoVersion != runtime.Version() || f.CPU == "" {
		t.Errorf("Fingerprint() = %+v", f)
	}
	if ch := f.changes(f); len(ch) != 0 {
		t.Errorf("a fingerprint differs from itself: %v", ch)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The defect: `calibrate --quick` (or a calibration while other processes used the CPU)
// replaced the cached full profile with a coarse one. Neither may; each is cached only where no
// valid full profile is, and marked as what it is.
func TestSaveCacheKeepsFullProfile(t *testing.T) {
	path := useCacheDir(t)
	full, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	full.Name = "host"
	coarse := *full
	coarse.Notes = "coarse"

	// Nothing cached: a quick profile is better than none, and is marked quick.
	s, err := SaveCache(&coarse, &Report{Quick: true, OtherCPU: 0.02})
	if err != nil || !s.Written {
		t.Fatalf("quick into an empty cache: %+v, %v", s, err)
	}
	_, info, err := CachedInfo()
	if err != nil || !info.Quick || info.Full() || !strings.Contains(info.Describe(), "quick") {
		t.Fatalf("cached quick profile reads back as %+v (%v)", info, err)
	}
	// A full one replaces it.
	if s, err := SaveCache(full, &Report{OtherCPU: 0.01}); err != nil || !s.Written {
		t.Fatalf("full over quick: %+v, %v", s, err)
	}
	for _, r := range []*Report{{Quick: true, OtherCPU: 0.01}, {OtherCPU: 0.45}, {Quick: true, OtherCPU: 0.45}} {
		s, err := SaveCache(&coarse, r)
		if err != nil || s.Written || !strings.Contains(s.Reason, "kept the full profile") {
			t.Errorf("%+v over a full profile: %+v, %v; want it kept", r, s, err)
		}
		if r.Loaded() && !strings.Contains(s.Reason, "45%") {
			t.Errorf("reason %q does not say the machine was loaded", s.Reason)
		}
		h, info, err := CachedInfo()
		if err != nil || !reflect.DeepEqual(h, full) || !info.Full() {
			t.Fatalf("after %+v the cache holds %+v (%v), want the full profile", r, info, err)
		}
	}
	// A loaded full calibration over a stale profile is written and marked loaded.
	other := Fingerprint()
	other.NumCPU++
	if err := writeCache(path, full, other, false, 0); err != nil {
		t.Fatal(err)
	}
	if s, err := SaveCache(&coarse, &Report{OtherCPU: 0.45}); err != nil || !s.Written {
		t.Fatalf("loaded over stale: %+v, %v", s, err)
	}
	if _, info, err := CachedInfo(); err != nil || info.Full() || !strings.Contains(info.Describe(), "45%") {
		t.Errorf("loaded profile reads back as %+v (%v)", info, err)
	}
}

// OtherCPUShare of two samples a second apart is a share in [0, 1] where /proc is readable.
func TestOtherCPUShare(t *testing.T) {
	a := SampleCPU()
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	b := SampleCPU()
	got := OtherCPUShare(a, b)
	if runtime.GOOS != "linux" {
		if got != -1 {
			t.Errorf("OtherCPUShare off Linux = %v, want -1", got)
		}
		return
	}
	if got != -1 && (got < 0 || got > 1) {
		t.Errorf("OtherCPUShare = %v, want -1 or a share in [0, 1]", got)
	}
	if OtherCPUShare(b, a) != -1 {
		t.Errorf("samples in the wrong order give %v, want -1", OtherCPUShare(b, a))
	}
}

// TestTimeGEMMsAsExecRunsThem: products are timed as exec runs them, accumulating exactly the
// backward-weight (Aᵀ·B) ones; another combination is refused rather than timed as something
// exec never runs.
func TestTimeGEMMsAsExecRunsThem(t *testing.T) {
	got, err := TimeGEMMs(context.Background(), []hardware.GEMMTime{{M: 8, K: 4, N: 16, TransB: true}, {M: 16, K: 8, N: 4, TransA: true, Accumulate: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !(got[0].Seconds > 0) || !got[1].Accumulate || !got[1].Same(hardware.GEMMTime{M: 16, K: 8, N: 4, TransA: true, Accumulate: true}) {
		t.Errorf("timed %+v", got)
	}
	if _, err := TimeGEMMs(context.Background(), []hardware.GEMMTime{{M: 8, K: 4, N: 16, Accumulate: true}}); err == nil || !strings.Contains(err.Error(), "backward weight") {
		t.Errorf("an accumulated A·B product: %v", err)
	}
}
