//go:build unix

package atomicfile

import (
	"io/fs"
	"syscall"
)

// umaskVal is the process's umask, read once while the package initializes (reading it means
// setting it, which is not safe to repeat while other goroutines create files).
var umaskVal = func() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}()

func umask() fs.FileMode { return umaskVal }
