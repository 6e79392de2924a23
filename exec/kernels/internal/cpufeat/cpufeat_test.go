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
	if err != nil || runtime.GOARCH != "amd64" || purego {
		t.Skip("needs Linux on amd64 and a build without the purego tag (purego reports no features)")
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
	if want := has("avx2") && has("fma"); AVX2FMA != want {
		t.Errorf("AVX2FMA = %v, /proc/cpuinfo says avx2 && fma = %v", AVX2FMA, want)
	}
	if want := has("avx2") && has("fma") && has("avx512f"); AVX512F != want {
		t.Errorf("AVX512F = %v, /proc/cpuinfo says avx2 && fma && avx512f = %v", AVX512F, want)
	}
}

// TestCachesAgreeWithSysfs checks L1DWays and L2Bytes against the caches Linux describes.
func TestCachesAgreeWithSysfs(t *testing.T) {
	if runtime.GOARCH != "amd64" || purego {
		t.Skip("CPUID only on amd64, and not in purego builds (they report no cache geometry)")
	}
	read := func(dir, name string) string {
		b, _ := os.ReadFile(dir + name)
		return strings.TrimSpace(string(b))
	}
	checked := 0
	for i := 0; ; i++ {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/", i)
		level := read(dir, "level")
		if level == "" {
			break
		}
		switch typ := read(dir, "type"); {
		case level == "1" && typ == "Data":
			if want := read(dir, "ways_of_associativity"); fmt.Sprint(L1DWays) != want {
				t.Errorf("L1DWays = %d, sysfs says %s", L1DWays, want)
			}
			checked++
		case level == "2" && typ == "Unified":
			if want := read(dir, "size"); fmt.Sprintf("%dK", L2Bytes>>10) != want {
				t.Errorf("L2Bytes = %d (%dK), sysfs says %s", L2Bytes, L2Bytes>>10, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Skip("sysfs describes no level-1 data or level-2 cache")
	}
}
