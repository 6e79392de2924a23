package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkElementwise runs each activation kernel beside a plain copy of the same bytes, at a size
// that fits in this machine's L2/L3 (1 Mi floats = 4 MiB per stream) and one that does not
// (16 Mi floats = 64 MiB per stream), and reports the bandwidth (bytes read plus written per
// second) and its fraction of copy's, measured just before in the same run:
//
//	go test -run '^$' -bench Elementwise -benchtime 20x ./exec/kernels
func BenchmarkElementwise(b *testing.B) {
	for _, n := range []int{1 << 20, 1 << 24} {
		x, dy, out := make([]float32, n), make([]float32, n), make([]float32, n)
		rng := NewRand(1)
		FillUniform(x, rng, -4, 4)
		FillUniform(dy, rng, -1, 1)
		copy(out, dy) // fault the pages in before copy's first timed run
		var copyBW float64
		kernels := []struct {
			name    string
			streams int // arrays read plus written
			run     func()
		}{
			{"copy", 2, func() { copy(out, x) }},
			{"relu", 2, func() { ReLU(out, x) }},
			{"relu_backward", 3, func() { ReLUBackward(out, dy, x) }},
			{"gelu", 2, func() { GELU(out, x) }},
			{"gelu_backward", 3, func() { GELUBackward(out, dy, x) }},
			{"silu", 2, func() { SiLU(out, x) }},
			{"silu_backward", 3, func() { SiLUBackward(out, dy, x) }},
			{"softmax_1024", 2, func() { Softmax(out, x, n/1024, 1024) }},
			{"add_in_place", 3, func() { AddInPlace(out, x) }},
		}
		for _, k := range kernels {
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				bytes := int64(4 * n * k.streams)
				b.SetBytes(bytes)
				for b.Loop() {
					k.run()
				}
				bw := float64(bytes) * float64(b.N) / b.Elapsed().Seconds() / 1e9
				b.ReportMetric(bw, "GB/s")
				if k.name == "copy" {
					copyBW = bw
				} else if copyBW > 0 {
					b.ReportMetric(bw/copyBW, "frac_copy")
				}
			})
		}
	}
}
