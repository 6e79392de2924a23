package cpufeat

import (
	"fmt"
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

// TestL1DWaysAgreesWithSysfs checks L1DWays against the level-1 data cache Linux describes.
func TestL1DWaysAgreesWithSysfs(t *testing.T) {
	if runtime.GOARCH != "amd64" || strings.Contains(os.Getenv("GOFLAGS"), "purego") {
		t.Skip("CPUID only on amd64")
	}
	for i := 0; ; i++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", i)
		level, err := os.ReadFile(dir + "level")
		if err != nil {
			t.Skip("no level-1 data cache in sysfs")
		}
		typ, _ := os.ReadFile(dir + "type")
		if strings.TrimSpace(string(level)) != "1" || strings.TrimSpace(string(typ)) != "Data" {
			continue
		}
		ways, err := os.ReadFile(dir + "ways_of_associativity")
		if err != nil {
			t.Skip("sysfs gives no associativity")
		}
		if want := strings.TrimSpace(string(ways)); fmt.Sprint(L1DWays) != want {
			t.Errorf("L1DWays = %d, sysfs says %s", L1DWays, want)
		}
		return
	}
}
