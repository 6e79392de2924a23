package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/atomicfile"
)

// CacheFile is the name of the cached profile under the tpsim directory of the user's cache
// directory (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS).
const CacheFile = "host.json"

// ErrNoCache is the cause (errors.Is) of Cached's error when no profile is cached; it also
// matches fs.ErrNotExist.
var ErrNoCache = errors.New("calibrate: no cached host profile")

// StaleError is Cached's error when the cached profile was measured on another machine or build,
// or by another version of the calibration.
type StaleError struct {
	Path    string
	Changes []string // what changed, e.g. `cores 4 -> 2`
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("calibrate: the cached host profile %s is stale (%s); run `tpsim calibrate` to measure this machine again",
		e.Path, strings.Join(e.Changes, ", "))
}

// cacheEntry is the cache file: the fingerprint it was measured under, how it was measured, and
// the profile.
type cacheEntry struct {
	Fingerprint Machine `json:"fingerprint"`
	Saved       string  `json:"saved"`
	// Quick and OtherCPU say how the profile was measured: with --quick, and with what share of
	// the CPU other processes used meanwhile (-1 unknown). Absent in caches written before they
	// existed, which were full profiles.
	Quick    bool            `json:"quick,omitempty"`
	OtherCPU *float64        `json:"other_cpu_share,omitempty"`
	Hardware json.RawMessage `json:"hardware"`
}

// CacheInfo says where a cached profile lives and how it was measured.
type CacheInfo struct {
	Path  string
	Saved string // RFC 3339, UTC
	// Quick: measured with --quick; OtherCPU: the share of the CPU other processes used while it
	// was measured (-1 unknown, as for caches older than this field).
	Quick    bool
	OtherCPU float64
}

// Full reports whether the cached profile is a full calibration taken on a quiet machine: not
// --quick and not under load (OtherCPU at most BusyShare).
func (c CacheInfo) Full() bool { return !c.Quick && c.OtherCPU <= BusyShare }

// Describe is "quick, other processes used 35% of the CPU" or "full".
func (c CacheInfo) Describe() string {
	var parts []string
	if c.Quick {
		parts = append(parts, "quick (coarse)")
	}
	if c.OtherCPU > BusyShare {
		parts = append(parts, fmt.Sprintf("measured while other processes used %.0f%% of the CPU", 100*c.OtherCPU))
	}
	if len(parts) == 0 {
		if c.OtherCPU < 0 {
			return "full; how loaded the machine was while it was measured is unknown"
		}
		return fmt.Sprintf("full, measured on a quiet machine (other processes used %.0f%% of the CPU)", 100*c.OtherCPU)
	}
	return strings.Join(parts, ", ")
}

// Saved is what SaveCache did.
type Saved struct {
	Path string
	// Written is false when the cache was left as it was; Reason then says why.
	Written bool
	Reason  string
}

// CachePath returns where the profile is cached: os.UserCacheDir()/tpsim/host.json.
func CachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("calibrate: no cache directory for the host profile (%v); set XDG_CACHE_HOME or HOME, or keep the profile with `tpsim calibrate --out FILE`", err)
	}
	return filepath.Join(dir, "tpsim", CacheFile), nil
}

// Cached returns the cached host profile if it was measured on this machine and build. Its error
// wraps ErrNoCache when there is none, is a *StaleError when the fingerprint differs from
// Fingerprint(), and otherwise says the file is unreadable; each names the file and says to run
// `tpsim calibrate`.
func Cached() (*hardware.Hardware, error) {
	h, _, err := CachedInfo()
	return h, err
}

// CachedInfo is Cached with how the profile was measured.
func CachedInfo() (*hardware.Hardware, CacheInfo, error) {
	path, err := CachePath()
	if err != nil {
		return nil, CacheInfo{}, err
	}
	return readCache(path, Fingerprint())
}

// SaveCache caches h, the profile r describes, at CachePath() with the current fingerprint
// (atomically: a reader never sees half a file). A quick profile, or one measured under load
// (r.Loaded), never replaces a full profile of this machine that is still valid: it is cached
// only where there is none (or only a stale, unreadable, quick or loaded one), marked as what it
// is; Saved says which happened.
func SaveCache(h *hardware.Hardware, r *Report) (Saved, error) {
	path, err := CachePath()
	if err != nil {
		return Saved{}, err
	}
	return saveCache(path, h, r, Fingerprint())
}

func saveCache(path string, h *hardware.Hardware, r *Report, fp Machine) (Saved, error) {
	out := Saved{Path: path}
	full := !r.Quick && !r.Loaded()
	if !full {
		if _, old, err := readCache(path, fp); err == nil && old.Full() {
			why := "it is a quick calibration"
			if r.Loaded() {
				why = fmt.Sprintf("other processes used %.0f%% of the CPU while it was measured", 100*r.OtherCPU)
				if r.Quick {
					why = "it is a quick calibration and " + why
				}
			}
			out.Reason = fmt.Sprintf("kept the full profile cached in %s (saved %s): %s; run `tpsim calibrate` on a quiet machine to replace it", path, old.Saved, why)
			return out, nil
		}
	}
	if err := writeCache(path, h, fp, r.Quick, r.OtherCPU); err != nil {
		return out, err
	}
	out.Written = true
	return out, nil
}

func writeCache(path string, h *hardware.Hardware, fp Machine, quick bool, otherCPU float64) error {
	if err := h.Validate(); err != nil {
		return fmt.Errorf("calibrate: refusing to cache an invalid profile: %w", err)
	}
	var hw bytes.Buffer
	if err := h.Save(&hw); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cacheEntry{Fingerprint: fp, Saved: time.Now().UTC().Format(time.RFC3339), Quick: quick, OtherCPU: &otherCPU,
		Hardware: hw.Bytes()}, "", "  ")
	if err != nil {
		return fmt.Errorf("calibrate: %v", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	fail := func(err error) error {
		return fmt.Errorf("calibrate: cannot write the host profile cache %s: %v; make %s writable or set XDG_CACHE_HOME, or keep the profile with `tpsim calibrate --out FILE`", path, err, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fail(err)
	}
	return nil
}

func readCache(path string, now Machine) (*hardware.Hardware, CacheInfo, error) {
	info := CacheInfo{Path: path, OtherCPU: -1}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, info, fmt.Errorf("%w at %s; run `tpsim calibrate` to measure this machine (about 20 s on a quiet machine, longer under load): %w", ErrNoCache, path, fs.ErrNotExist)
	}
	bad := func(why string) error {
		return fmt.Errorf("calibrate: the cached host profile %s is unreadable (%s); run `tpsim calibrate` to measure this machine again", path, why)
	}
	if err != nil {
		return nil, info, bad(err.Error())
	}
	var e cacheEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, info, bad(err.Error())
	}
	info.Saved, info.Quick, info.OtherCPU = e.Saved, e.Quick, -1
	if e.OtherCPU != nil {
		info.OtherCPU = *e.OtherCPU
	}
	if ch := e.Fingerprint.changes(now); len(ch) > 0 {
		return nil, info, &StaleError{Path: path, Changes: ch}
	}
	h, err := hardware.Parse(e.Hardware)
	if err != nil {
		return nil, info, bad(err.Error())
	}
	return h, info, nil
}
