package calibrate

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// physicalMemory returns the total RAM in bytes and how it was read.
func physicalMemory() (uint64, string, bool) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 0, "", false
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	return uint64(si.Totalram) * unit, "sysinfo(2) totalram x mem_unit", true
}

// CPUSample is the machine's and this process's CPU time so far (SampleCPU; two of them give
// OtherCPUShare, the share of the machine that other processes used in between), in clock ticks (USER_HZ):
// all is every state of every CPU (idle included), busy the non-idle states (user, nice,
// system, irq, softirq, steal: time another virtual machine took counts as busy), self this
// process's user and system time.
type CPUSample struct {
	all, busy, self float64
	ok              bool
}

// SampleCPU reads /proc/stat and /proc/self/stat; a sample that could not be read makes
// OtherCPUShare -1.
func SampleCPU() CPUSample {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUSample{}
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return CPUSample{}
	}
	var s CPUSample
	for i, v := range f[1:] {
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return CPUSample{}
		}
		s.all += x
		if i != 3 && i != 4 { // idle, iowait
			s.busy += x
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return CPUSample{}
	}
	// The command name (field 2) may hold spaces; the fields after its ")" start at state (3).
	rest := string(self)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	g := strings.Fields(rest)
	if len(g) < 13 {
		return CPUSample{}
	}
	utime, err1 := strconv.ParseFloat(g[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(g[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return CPUSample{}
	}
	s.self = utime + stime
	s.ok = true
	return s
}

// OtherCPUShare is the share of the machine's CPU time between a and b that other processes used
// (0..1 of all cores, steal time of a virtual machine included), or -1 when it could not be read
// or no clock tick passed in between.
func OtherCPUShare(a, b CPUSample) float64 {
	if !a.ok || !b.ok || b.all <= a.all {
		return -1
	}
	return max(0, (b.busy-a.busy)-(b.self-a.self)) / (b.all - a.all)
}
