package calibrate

import (
	"os"
	"path/filepath"
	"testing"
)

// The calibration cache is a file on disk that anything may have damaged: reading it never
// panics, and a profile it accepts is valid.
func FuzzReadCache(f *testing.F) {
	f.Add([]byte(`{"fingerprint": {}, "saved": "", "hardware": {"name": "host"}}`))
	f.Add([]byte(`{"fingerprint": {"format": 3}, "quick": true, "other_cpu_share": 0.4, "hardware": {}}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	dir := f.TempDir()
	path := filepath.Join(dir, CacheFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h, _, err := readCache(path, Fingerprint())
		if err != nil {
			return
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("accepted an invalid profile: %v", err)
		}
	})
}
