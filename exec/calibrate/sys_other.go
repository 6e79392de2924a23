//go:build !linux

package calibrate

// physicalMemory cannot read the RAM size outside Linux; the caller falls back to
// fallbackMemory and says so.
func physicalMemory() (uint64, string, bool) { return 0, "", false }

// CPUSample is not read outside Linux: OtherCPUShare is always -1 (unknown).
type CPUSample struct{}

func SampleCPU() CPUSample { return CPUSample{} }

// SampleCPU is an empty sample outside Linux.

// OtherCPUShare is unknown (-1) outside Linux.
func OtherCPUShare(a, b CPUSample) float64 { return -1 }
