package gemm

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time the calling OS thread has used (getrusage RUSAGE_THREAD, Linux 2.6.26+).
// On a machine shared with other processes it counts only the time this thread ran, so GFLOP per
// CPU-second measures the kernel rather than its share of the cores.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
