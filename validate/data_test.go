package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The issue: `validate --data` with only unreadable records printed "0 compared" and exited 0.
// Now a file none of whose records can be read is an error naming the file, each record and its
// field; a directory is an error saying --data takes files.
func TestLoadOnlyUnreadable(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"id": "a", "model": {"layers": "x"}}, {"id": "b", "hardware": {"count": 1.5}}]`), 0o644)
	_, _, _, err := Load([]string{bad})
	if err == nil {
		t.Fatal("a file of unreadable records loaded")
	}
	for _, s := range []string{"none of the 2 records of " + bad + " could be read", "a: field model.layers", "b: field hardware.count", "fix the fields named"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	// Beside a readable file, the unreadable one still fails: it is named, not lost in a sum.
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`[{"id": "g"}]`), 0o644)
	if _, _, _, err := Load([]string{good, bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a readable and an unreadable file: %v; want the unreadable one named", err)
	}
	// A readable record beside unreadable ones is validated, the others skipped with reasons.
	os.WriteFile(bad, []byte(`[{"id": "g"}, {"id": "a", "model": {"layers": "x"}}]`), 0o644)
	if recs, skips, _, err := Load([]string{bad}); err != nil || len(recs) != 1 || len(skips) != 1 {
		t.Errorf("one readable of two: %d records, %d skips, %v", len(recs), len(skips), err)
	}
	// Seven unreadable records: the first five listed, then how many more.
	var rs []string
	for i := range 7 {
		rs = append(rs, fmt.Sprintf(`{"id": "r%d", "model": {"heads": "h"}}`, i))
	}
	os.WriteFile(bad, []byte("["+strings.Join(rs, ",")+"]"), 0o644)
	if _, _, _, err := Load([]string{bad}); err == nil || !strings.Contains(err.Error(), "r4: field model.heads") || strings.Contains(err.Error(), "r5:") || !strings.Contains(err.Error(), "and 2 more") {
		t.Errorf("seven unreadable: %v", err)
	}
	if _, _, _, err := Load([]string{dir}); err == nil || !strings.Contains(err.Error(), dir+" is a directory") || !strings.Contains(err.Error(), filepath.Join(dir, "runs.json")) {
		t.Errorf("a directory: %v", err)
	}
}
