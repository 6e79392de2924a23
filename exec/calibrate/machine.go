package calibrate

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// FormatVersion is the version of the calibration: what is measured and how it is fitted. A
// cached profile of another version is stale. Bump it whenever a change to this package would
// change the numbers it produces.
// Version 2: per-kernel rates, the BLAS parallelism rule and the slowdown of ranks that meet at
// collectives, measured with exec recycling its buffers.
// Version 3: the vocabulary-parallel cross-entropy's kernels (statistics, combine, shard backward).
// Version 4: the kernels it measures run on tpsim's own AVX2/FMA GEMM (exec/kernels/gemm), the
// float32 elementwise kernels and the ring that adds from the peer's buffer: every rate changed.
// Version 5: two-pass exp kernels (GELU, SiLU, softmax), the two-rank all-reduce in one pass, and
// ranks that poll their mailbox before they block: kernel rates and collective latency changed.
// Version 7: the GEMM packs full panels in assembly, and ranks poll their mailbox 16 times as long
// before they block: matrix-product rates and meeting overheads changed.
const FormatVersion = 7

// Machine identifies the machine and build a profile was measured on: its fingerprint. A cached
// profile whose fingerprint differs from the current one is stale.
type Machine struct {
	Format     int    `json:"format"`
	CPU        string `json:"cpu"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
}

// Fingerprint returns the fingerprint of this machine and build: the CPU model from /proc/cpuinfo
// (or "unknown GOARCH CPU" where that file is not readable), runtime.NumCPU, GOMAXPROCS (a large
// product splits over that many goroutines), GOOS, GOARCH, runtime.Version and FormatVersion.
func Fingerprint() Machine {
	return Machine{
		Format:     FormatVersion,
		CPU:        cpuModel(),
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		GoVersion:  runtime.Version(),
	}
}

// String is "AMD EPYC, 2 cores (GOMAXPROCS 2), linux/amd64, go1.26.8".
func (f Machine) String() string {
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s/%s, %s", f.CPU, f.NumCPU, f.GOMAXPROCS, f.GOOS, f.GOARCH, f.GoVersion)
}

// changes lists, one item each, what differs from f in now: `CPU "x" -> "y"`.
func (f Machine) changes(now Machine) []string {
	var out []string
	add := func(what string, was, is any) {
		if was != is {
			out = append(out, fmt.Sprintf("%s %v -> %v", what, was, is))
		}
	}
	add("calibration format", f.Format, now.Format)
	add("CPU", fmt.Sprintf("%q", f.CPU), fmt.Sprintf("%q", now.CPU))
	add("cores", f.NumCPU, now.NumCPU)
	add("GOMAXPROCS", f.GOMAXPROCS, now.GOMAXPROCS)
	add("GOOS", f.GOOS, now.GOOS)
	add("GOARCH", f.GOARCH, now.GOARCH)
	add("Go", f.GoVersion, now.GoVersion)
	return out
}

// cpuModel reads the processor model from /proc/cpuinfo: the first "model name" (x86), or
// "Model"/"Hardware"/"cpu model" line (ARM, MIPS and others).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		found := map[string]string{}
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if ok && v != "" {
				if _, seen := found[k]; !seen {
					found[k] = v
				}
			}
		}
		for _, k := range []string{"model name", "Model", "Hardware", "cpu model"} {
			if v := found[k]; v != "" {
				return v
			}
		}
	}
	return "unknown " + runtime.GOARCH + " CPU"
}

// fallbackMemory is the device memory assumed where the physical RAM cannot be read: 16 GiB,
// said so in the profile's sources and notes.
const fallbackMemory = 16 << 30
