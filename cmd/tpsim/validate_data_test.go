package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
)

// The issue: validate with nothing it could compare printed "0 compared" and exited 0. Records
// that read but lack what a prediction needs still print the report (its skipped list says why)
// and then fail; a file of unreadable records fails naming the file.
func TestValidateNothingComparedFails(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.json")
	os.WriteFile(inc, []byte(`[{"id": "c", "model": {"layers": 2}}]`), 0o644)
	out, errs, code := runArgs(t, "validate", "--data", inc)
	if code != cli.ExitFailure || !strings.Contains(errs, "none of the 1 records of "+inc+" could be compared") {
		t.Errorf("nothing comparable: exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "c: no measured step time") {
		t.Errorf("the report's skipped list is not printed:\n%s", out)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"id": "a", "model": {"layers": "x"}}]`), 0o644)
	out, errs, code = runArgs(t, "validate", "--data", bad)
	if code != cli.ExitFailure || !strings.Contains(errs, "none of the 1 records of "+bad+" could be read: a: field model.layers") || strings.Contains(out, "0 compared") {
		t.Errorf("only unreadable: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
