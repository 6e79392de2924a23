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

// cacheEntry is the cache file: the fingerprint it was measured under, and the profile.
type cacheEntry struct {
	Fingerprint Machine         `json:"fingerprint"`
	Saved       string          `json:"saved"`
	Hardware    json.RawMessage `json:"hardware"`
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
	path, err := CachePath()
	if err != nil {
		return nil, err
	}
	return readCache(path, Fingerprint())
}

// SaveCache writes h to CachePath() with the current fingerprint (through a temporary file and a
// rename, so a reader never sees half a file) and returns the path.
func SaveCache(h *hardware.Hardware) (string, error) {
	path, err := CachePath()
	if err != nil {
		return "", err
	}
	return path, writeCache(path, h, Fingerprint())
}

func writeCache(path string, h *hardware.Hardware, fp Machine) error {
	if err := h.Validate(); err != nil {
		return fmt.Errorf("calibrate: refusing to cache an invalid profile: %w", err)
	}
	var hw bytes.Buffer
	if err := h.Save(&hw); err != nil {
		return err
	}
	data, err := json.MarshalIndent(cacheEntry{Fingerprint: fp, Saved: time.Now().UTC().Format(time.RFC3339), Hardware: hw.Bytes()}, "", "  ")
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
	tmp, err := os.CreateTemp(dir, ".host-*.json")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}

func readCache(path string, now Machine) (*hardware.Hardware, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s; run `tpsim calibrate` to measure this machine (about 15 s): %w", ErrNoCache, path, fs.ErrNotExist)
	}
	bad := func(why string) error {
		return fmt.Errorf("calibrate: the cached host profile %s is unreadable (%s); run `tpsim calibrate` to measure this machine again", path, why)
	}
	if err != nil {
		return nil, bad(err.Error())
	}
	var e cacheEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, bad(err.Error())
	}
	if ch := e.Fingerprint.changes(now); len(ch) > 0 {
		return nil, &StaleError{Path: path, Changes: ch}
	}
	h, err := hardware.Parse(e.Hardware)
	if err != nil {
		return nil, bad(err.Error())
	}
	return h, nil
}
