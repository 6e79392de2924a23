package study

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime/debug"
	"sync"
)

// BuildVersion identifies the running tpsim build: the module version (or "devel") and the
// SHA-256 of the executable, so that any change to the code that prices a cell, committed or
// not, gives new job keys, while the same build (go run of the same source is the same binary)
// resumes every cell. It is computed once.
var BuildVersion = sync.OnceValue(func() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	exe, err := os.Executable()
	if err != nil {
		return v
	}
	f, err := os.Open(exe)
	if err != nil {
		return v
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return v
	}
	return v + "+" + hex.EncodeToString(h.Sum(nil))[:16]
})
