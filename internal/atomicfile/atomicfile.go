// Package atomicfile writes files so that a reader never sees half of one: the bytes go to a
// temporary file in the same directory, which is synced, closed and renamed over the target only
// when everything was written. A failed or interrupted write leaves the previous file (or none)
// and no temporary behind.
//
// Every file tpsim writes goes through this package (docs/architecture.md: "every file tpsim writes is
// written atomically").
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with permission perm (before the umask), like
// os.WriteFile but never leaving a truncated file: on any error the old content of path, if any,
// is untouched.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is a file being written atomically: write to it, then Commit to publish it under its
// name, or Abort to drop it. Until Commit the target path is unchanged.
type File struct {
	*os.File
	path string
	perm fs.FileMode
	done bool
}

// Create starts writing path atomically: a temporary file is made beside it (same directory, so
// the rename cannot cross file systems). The caller must call Commit or Abort; deferring Abort
// after Create is safe (it does nothing once committed).
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return &File{File: tmp, path: path, perm: perm}, nil
}

// Name returns the target path (not the temporary file's).
func (f *File) Name() string { return f.path }

// Commit flushes the file to disk, closes it, gives it its permission and renames it over the
// target. On error nothing is published and the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("atomicfile: %s already committed or aborted", f.path)
	}
	f.done = true
	tmp := f.File.Name()
	fail := func(err error) error {
		f.File.Close()
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", f.path, unwrapPath(err))
	}
	if err := f.File.Sync(); err != nil {
		return fail(err)
	}
	if err := f.File.Chmod(f.perm &^ umask()); err != nil {
		return fail(err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", f.path, unwrapPath(err))
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write %s: %w", f.path, unwrapPath(err))
	}
	return nil
}

// Abort drops the temporary file; the target is unchanged. It does nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// CheckDir makes dir (and its parents) if needed and proves it writable by creating and removing
// a temporary file in it, so that a command can refuse an unwritable output before spending
// minutes on the work whose results go there.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the output directory %s: %w", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".tpsim-write-check-*")
	if err != nil {
		return fmt.Errorf("the output directory %s is not writable: %w", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// CheckFile proves that path can be written atomically: its directory exists and accepts a new
// file, and path is not a directory.
func CheckFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; give a file name", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("directory %s does not exist; create it or choose another path", dir)
	}
	f, err := os.CreateTemp(dir, ".tpsim-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the temporary file's name from an *fs.PathError or *os.LinkError, which
// would only confuse.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
