//go:build !linux

package gemm

import "time"

// threadCPU is not measured off Linux.
func threadCPU() time.Duration { return 0 }
