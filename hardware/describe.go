package hardware

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/units"
)

// MemoryString prints a device memory both as the datasheet's decimal GB and in GiB:
// "80 GB (74.5 GiB)".
func MemoryString(b units.Bytes) string {
	return fmt.Sprintf("%.4g GB (%.1f GiB)", float64(b)/1e9, b.GiB())
}

// Devices is how many devices the level joins: its Size, or "all" for the outermost (Size 0).
func (l Level) Devices() string {
	if l.Size == 0 {
		return "all"
	}
	return fmt.Sprint(l.Size)
}

// LevelsString summarises network levels: "nvlink 8 x 300 GB/s, ib all x 25 GB/s".
func LevelsString(levels []Level) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = fmt.Sprintf("%s %s x %v", l.Name, l.Devices(), l.Bandwidth)
	}
	return strings.Join(parts, ", ")
}
