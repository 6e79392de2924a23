package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new content"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "new content" {
		t.Fatalf("content %q", got)
	}
	if es := entries(t, dir); len(es) != 1 || es[0] != "a.json" {
		t.Fatalf("directory holds %v, want only a.json", es)
	}
	st, _ := os.Stat(p)
	if want := os.FileMode(0o644) &^ umask(); st.Mode().Perm() != want {
		t.Errorf("mode %v, want %v", st.Mode().Perm(), want)
	}
}

// An aborted writer (the work failed half way) leaves the old file whole and no temporary.
func TestAbortKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fig.png")
	if err := os.WriteFile(p, []byte("whole old figure"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort() // twice is harmless
	got, _ := os.ReadFile(p)
	if string(got) != "whole old figure" {
		t.Fatalf("old file changed to %q", got)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("directory holds %v after Abort", es)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
}

// A target that is a directory fails at the rename: the error names the target, not the
// temporary, and nothing is left behind.
func TestCommitFailureCleansUp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(target, []byte("data"), 0o644)
	if err == nil {
		t.Fatal("writing over a non-empty directory succeeded")
	}
	if !strings.Contains(err.Error(), target) || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("error %q should name %s and not the temporary", err, target)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Fatalf("directory holds %v", es)
	}
}

func TestCheckDirAndFile(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := CheckDir(sub); err != nil {
		t.Fatal(err)
	}
	if es := entries(t, sub); len(es) != 0 {
		t.Fatalf("CheckDir left %v", es)
	}
	if err := CheckFile(filepath.Join(dir, "missing", "x.json")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("CheckFile in a missing directory: %v", err)
	}
	if err := CheckFile(sub); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("CheckFile of a directory: %v", err)
	}
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Log("read-only directories are writable here (root or Windows); the read-only cases are not checked")
		return
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(ro); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("CheckDir of a read-only directory: %v", err)
	}
	if err := CheckFile(filepath.Join(ro, "x.json")); err == nil {
		t.Error("CheckFile in a read-only directory succeeded")
	}
	err := WriteFile(filepath.Join(ro, "x.json"), []byte("x"), 0o644)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		t.Errorf("WriteFile into a read-only directory: %v, want a permission error", err)
	}
}
