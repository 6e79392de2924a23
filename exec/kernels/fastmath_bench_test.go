package kernels

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkElementwise runs each activation kernel (and the optimizers' updates, LayerNorm over
// rows of 64 and the losses: cross-entropy over rows of a 1024-word vocabulary, forward and with
// its gradient) beside a plain copy of the same bytes, at a size that fits in this machine's L2
// (4 Ki floats = 16 KiB per stream, the four buffers a little more than the 32 KiB L1: mostly the
// kernels' arithmetic, reported as ns_per_8, the best time for each 8 floats, one AVX2 vector),
// one that fits in its L3 (1 Mi floats = 4 MiB per stream) and one that does not (16 Mi floats = 64 MiB per stream), and reports the bandwidth (bytes read plus written
// per second) and its fraction of copy's. Each iteration times one copy and then one run of the
// kernel, so that both see the same load on a shared machine: frac_copy is the median over
// iterations of the kernel's bandwidth over the copy's just before it, and frac_copy_best the
// kernel's best bandwidth over copy's best (each one's least disturbed run):
//
//	go test -run '^$' -bench Elementwise -benchtime 20x ./exec/kernels
func BenchmarkElementwise(b *testing.B) {
	for _, n := range []int{1 << 12, 1 << 20, 1 << 24} {
		x, dy, out, cp := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		rng := NewRand(1)
		FillUniform(x, rng, -4, 4)
		FillUniform(dy, rng, -1, 1)
		copy(out, dy) // fault the pages in before the first timed run
		copy(cp, dy)
		m, v := make([]float32, n), make([]float32, n) // Adam's moments
		copy(m, dy)
		copy(v, x)
		// LayerNorm over rows of 64 (gpt-tiny's hidden size).
		lw, lb, ldw, ldb := make([]float32, 64), make([]float32, 64), make([]float32, 64), make([]float32, 64)
		FillUniform(lw, rng, 0.5, 1.5)
		mean, rstd := make([]float32, n/64), make([]float32, n/64)
		targets := make([]int32, n/1024) // cross-entropy over rows of a 1024-word vocabulary
		for i := range targets {
			targets[i] = int32(rng.Uint64() % 1024)
		}
		kernels := []struct {
			name    string
			streams int // arrays read plus written
			run     func()
		}{
			{"relu", 2, func() { ReLU(out, x) }},
			{"relu_backward", 3, func() { ReLUBackward(out, dy, x) }},
			{"gelu", 2, func() { GELU(out, x) }},
			{"gelu_backward", 3, func() { GELUBackward(out, dy, x) }},
			{"silu", 2, func() { SiLU(out, x) }},
			{"silu_backward", 3, func() { SiLUBackward(out, dy, x) }},
			{"softmax_1024", 2, func() { Softmax(out, x, n/1024, 1024) }},
			{"softmax_1024_backward", 3, func() { SoftmaxBackward(out, dy, m, n/1024, 1024) }},
			{"add_in_place", 3, func() { AddInPlace(out, x) }},
			{"sgd", 3, func() { SGD{LR: 1e-3}.Step(out, dy, nil) }},
			{"adam", 7, func() { NewAdam(1e-3).Step(out, dy, m, v, 1) }},
			{"mse", 2, func() { MSE(nil, x, dy) }},
			{"layernorm_64", 2, func() { LayerNorm(out, mean, rstd, x, lw, lb, n/64, 64, DefaultEps) }},
			{"layernorm_64_backward", 3, func() { LayerNormBackward(out, ldw, ldb, dy, x, lw, mean, rstd, n/64, 64) }},
			{"cross_entropy_1024", 1, func() { CrossEntropy(nil, x, targets, n/1024, 1024) }},
			{"cross_entropy_1024_backward", 2, func() { CrossEntropy(out, x, targets, n/1024, 1024) }},
			{"mse_backward", 3, func() { MSE(out, x, dy) }},
		}
		for _, k := range kernels {
			b.Run(fmt.Sprintf("n=%d/%s", n, k.name), func(b *testing.B) {
				bytes := float64(4 * n * k.streams)
				copyBytes := float64(4 * n * 2)
				b.SetBytes(int64(bytes))
				var fracs []float64
				bestK, bestC := time.Duration(1<<62), time.Duration(1<<62)
				var total time.Duration
				for b.Loop() {
					t0 := time.Now()
					copy(cp, x)
					t1 := time.Now()
					k.run()
					t2 := time.Now()
					tc, tk := t1.Sub(t0), t2.Sub(t1)
					total += tk
					bestK, bestC = min(bestK, tk), min(bestC, tc)
					fracs = append(fracs, (bytes/tk.Seconds())/(copyBytes/tc.Seconds()))
				}
				slices.Sort(fracs)
				b.ReportMetric(bytes*float64(len(fracs))/total.Seconds()/1e9, "GB/s")
				b.ReportMetric(copyBytes/bestC.Seconds()/1e9, "copy_best_GB/s")
				b.ReportMetric(fracs[len(fracs)/2], "frac_copy")
				b.ReportMetric((bytes/bestK.Seconds())/(copyBytes/bestC.Seconds()), "frac_copy_best")
				b.ReportMetric(float64(bestK.Nanoseconds())/float64(n/8), "ns_per_8")
			})
		}
	}
}

// BenchmarkAVX512 times the exponential kernels with their AVX-512 versions against the AVX2 ones
// alone (useAVX512 cleared), alternately within each iteration so that both see the same load, on
// 16 Ki floats (64 KiB a stream, in L2: the kernels' arithmetic), and reports zmm_speedup, the
// median over iterations of the AVX2 time over the AVX-512 one:
//
//	go test -run '^$' -bench AVX512 -benchtime 200x ./exec/kernels
func BenchmarkAVX512(b *testing.B) {
	if !useAVX512 {
		b.Skip("no AVX-512 kernels on this CPU (or portable code, or -race)")
	}
	const n = 1 << 14
	x, dy, out := make([]float32, n), make([]float32, n), make([]float32, n)
	rng := NewRand(1)
	FillUniform(x, rng, -4, 4)
	FillUniform(dy, rng, -1, 1)
	for _, k := range []struct {
		name string
		run  func()
	}{
		{"gelu", func() { GELU(out, x) }},
		{"gelu_backward", func() { GELUBackward(out, dy, x) }},
		{"silu", func() { SiLU(out, x) }},
		{"silu_backward", func() { SiLUBackward(out, dy, x) }},
		{"softmax_1024", func() { Softmax(out, x, n/1024, 1024) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			defer func() { useAVX512 = true }()
			var ratios []float64
			for b.Loop() {
				useAVX512 = false
				t0 := time.Now()
				k.run()
				useAVX512 = true
				t1 := time.Now()
				k.run()
				ratios = append(ratios, float64(t1.Sub(t0))/float64(time.Since(t1)))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "zmm_speedup")
		})
	}
}
