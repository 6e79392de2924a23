package hardware

import (
	"testing"

	"github.com/tpsim/tpsim/units"
)

func TestDescribe(t *testing.T) {
	// 80 GB = 80e9 bytes = 74.5 GiB (80e9 / 2^30 = 74.51).
	if got := MemoryString(units.Bytes(80e9)); got != "80 GB (74.5 GiB)" {
		t.Errorf("MemoryString(80e9) = %q", got)
	}
	levels := []Level{{Name: "nvlink", Size: 8, Bandwidth: 300e9}, {Name: "ib", Bandwidth: 25e9}}
	if got, want := LevelsString(levels), "nvlink 8 x "+units.BytesPerSecond(300e9).String()+", ib all x "+units.BytesPerSecond(25e9).String(); got != want {
		t.Errorf("LevelsString = %q, want %q", got, want)
	}
	if levels[0].Devices() != "8" || levels[1].Devices() != "all" {
		t.Errorf("Devices: %q, %q", levels[0].Devices(), levels[1].Devices())
	}
}
