//go:build !linux

package calibrate

// physicalMemory cannot read the RAM size outside Linux; the caller falls back to
// fallbackMemory and says so.
func physicalMemory() (uint64, string, bool) { return 0, "", false }

// cpuSample is not read outside Linux.
type cpuSample struct{}

func sampleCPU() cpuSample { return cpuSample{} }

// otherLoad is unknown (-1) outside Linux.
func otherLoad(a, b cpuSample) float64 { return -1 }
