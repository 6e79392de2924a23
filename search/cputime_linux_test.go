package search

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system (the garbage collector's
// threads included): on a machine shared with other processes it counts only this one's work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
