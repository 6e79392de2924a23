//go:build !unix

package atomicfile

import "io/fs"

func umask() fs.FileMode { return 0 }
