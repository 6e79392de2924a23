package cpufeat

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestAgreesWithProcCPUInfo checks the CPUID result against the flags Linux reports.
func TestAgreesWithProcCPUInfo(t *testing.T) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skip("needs Linux on amd64")
	}
	var flags []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "flags") {
			flags = strings.Fields(line)
			break
		}
	}
	has := func(f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	if want := has("avx2") && has("fma"); AVX2FMA != want && !strings.Contains(os.Getenv("GOFLAGS"), "purego") {
		t.Errorf("AVX2FMA = %v, /proc/cpuinfo says avx2 && fma = %v", AVX2FMA, want)
	}
	if want := has("avx2") && has("fma") && has("avx512f"); AVX512F != want && !strings.Contains(os.Getenv("GOFLAGS"), "purego") {
		t.Errorf("AVX512F = %v, /proc/cpuinfo says avx2 && fma && avx512f = %v", AVX512F, want)
	}
}
