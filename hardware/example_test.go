package hardware_test

import (
	"fmt"
	"log"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

func ExamplePreset() {
	h, err := hardware.Preset("h100-sxm")
	if err != nil {
		log.Fatal(err)
	}
	peak, err := h.PeakFor("bf16")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.Device.Name, peak, h.Device.MemBandwidth)
	// Tensor parallel over 8 GPUs stays on NVLink; 16 ranks span two nodes and use InfiniBand.
	for _, span := range []int{8, 16} {
		l := h.Levels[h.LevelFor(span)]
		fmt.Printf("%2d GPUs: %s, %v per direction, %.0f%% achieved\n", span, l.Name, l.Bandwidth, 100*l.Efficiency)
	}
	// A 4096^3 GEMM (137 GFLOP) reaches about 49% of peak in training (the ceiling's 0.77 times
	// the achieved fraction tpsim fit found); a 512^3 one (268 MFLOP) about 2%.
	for _, n := range []float64{4096, 512} {
		fmt.Printf("GEMM %4.0f^3: %.2f of peak\n", n, h.GEMMEfficiency(units.FLOPs(2*n*n*n)))
	}
	// Output:
	// NVIDIA H100-SXM5-80GB 989 TFLOP/s 3.35 TB/s
	//  8 GPUs: nvlink, 450 GB/s per direction, 82% achieved
	// 16 GPUs: ib, 50 GB/s per direction, 94% achieved
	// GEMM 4096^3: 0.49 of peak
	// GEMM  512^3: 0.02 of peak
}
