package units

import (
	"fmt"
	"math"
)

// Bytes is an amount of memory or data, in bytes.
type Bytes float64

// Seconds is a duration, in seconds.
type Seconds float64

// FLOPs is a count of floating-point operations (a multiply-add counts as 2).
type FLOPs float64

// FLOPsPerSecond is a compute rate.
type FLOPsPerSecond float64

// BytesPerSecond is a bandwidth.
type BytesPerSecond float64

// Common sizes.
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40

	GB BytesPerSecond = 1e9 // 1 GB/s, decimal as in link datasheets

	TFLOPs FLOPsPerSecond = 1e12
)

func scaled(v float64, base float64, units []string, suffix string) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%g %s%s", v, units[0], suffix)
	}
	i := 0
	a := math.Abs(v)
	for i < len(units)-1 && a >= base {
		a /= base
		v /= base
		i++
	}
	return fmt.Sprintf("%.3g %s%s", v, units[i], suffix)
}

// String prints b with a binary prefix, e.g. "1.5 GiB".
func (b Bytes) String() string {
	return scaled(float64(b), 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, "")
}

// GiB returns b in gibibytes.
func (b Bytes) GiB() float64 { return float64(b) / float64(GiB) }

// String prints s with the largest unit that keeps it at or above 1, e.g. "12.3 ms".
func (s Seconds) String() string {
	v := float64(s)
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0 s"
	case a < 1e-6:
		return fmt.Sprintf("%.3g ns", v*1e9)
	case a < 1e-3:
		return fmt.Sprintf("%.3g µs", v*1e6)
	case a < 1:
		return fmt.Sprintf("%.3g ms", v*1e3)
	default:
		return fmt.Sprintf("%.3g s", v)
	}
}

// String prints f with a decimal prefix, e.g. "3.1 PFLOP".
func (f FLOPs) String() string {
	return scaled(float64(f), 1000, []string{"", "K", "M", "G", "T", "P", "E", "Z"}, "FLOP")
}

// String prints r with a decimal prefix, e.g. "312 TFLOP/s".
func (r FLOPsPerSecond) String() string {
	return scaled(float64(r), 1000, []string{"", "K", "M", "G", "T", "P", "E"}, "FLOP/s")
}

// String prints r with a decimal prefix, e.g. "300 GB/s".
func (r BytesPerSecond) String() string {
	return scaled(float64(r), 1000, []string{"B", "KB", "MB", "GB", "TB", "PB"}, "/s")
}
