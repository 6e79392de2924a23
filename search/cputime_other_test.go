//go:build !linux

package search

import "time"

// cpuTime is not measured off Linux.
func cpuTime() time.Duration { return 0 }
