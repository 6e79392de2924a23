//go:build !linux

package exec

import "time"

// threadCPU has no per-thread CPU clock to read outside Linux: the device clock falls back to
// the wall clock (rank.devClock).
func threadCPU() (time.Duration, bool) { return 0, false }
