package gemm

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time the calling OS thread has used (clock_gettime CLOCK_THREAD_CPUTIME_ID,
// exact; getrusage's per-thread figures are rescaled from ticks and lag over short runs). On a
// machine shared with other processes it counts only the time this thread ran, so GFLOP per
// CPU-second measures the kernel rather than its share of the cores.
func threadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
