package gemm

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// peakGFLOPSPerCore is this machine's fp32 FMA peak per core: AMD Zen 3 issues two 256-bit FMAs a
// cycle (AMD, "Software Optimization Guide for AMD EPYC 7003 Processors", pub. 56665, section
// 2.11: two FMA pipes), 2×8×2 = 32 flops a cycle, at the ~3.1 GHz this VM's cores run
// (99.5 GFLOP/s as measured and quoted in issue 15).
const peakGFLOPSPerCore = 99.5

// benchShapes are the squares of the acceptance criterion and the products of one training step of
// the 1024-4096-1024 MLP at batch 512: forward x·W1ᵀ (512×1024 by 4096×1024ᵀ), backward-input
// dy·W (512×4096×1024), weight gradient dyᵀ·x (4096×1024 from k=512).
var benchShapes = []benchShape{
	{"sq256", 256, 256, 256, false, false},
	{"sq512", 512, 512, 512, false, false},
	{"sq1024", 1024, 1024, 1024, false, false},
	{"sq2048", 2048, 2048, 2048, false, false},
	{"mlp_fwd_512x4096x1024_NT", 512, 4096, 1024, false, true},
	{"mlp_dx_512x1024x4096_NN", 512, 1024, 4096, false, false},
	{"mlp_dw_4096x1024x512_TN", 4096, 1024, 512, true, false},
}

type benchShape struct {
	name    string
	m, n, k int
	tA, tB  bool
}

// operands allocates the matrices of s, A and B filled with small integers and C with row stride
// n+pad, and returns them with the row strides of A and B.
func (s benchShape) operands(pad int) (a, bb, c []float32, lda, ldb int) {
	a, bb, c = make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*(s.n+pad))
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range bb {
		bb[i] = float32(i%5) - 2
	}
	lda, ldb = s.k, s.n
	if s.tA {
		lda = s.m
	}
	if s.tB {
		ldb = s.k
	}
	return a, bb, c, lda, ldb
}

// medianRatio runs first and then second in each iteration of b, so that both see the same load
// on a shared machine, and returns the median over iterations of second's time over first's.
func medianRatio(b *testing.B, first, second func()) float64 {
	var ratios []float64
	for b.Loop() {
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		ratios = append(ratios, time.Since(t1).Seconds()/t1.Sub(t0).Seconds())
	}
	slices.Sort(ratios)
	return ratios[len(ratios)/2]
}

// BenchmarkSgemm runs this package and gonum's Sgemm side by side on each shape, on one thread
// (threads=1; gonum pinned with GOMAXPROCS=1, since it splits over GOMAXPROCS workers) and on all
// cores, and reports GFLOP/s and the fraction of the per-core peak times the threads (wall time);
// on one thread also frac_peak_cpu, the same over the thread's CPU time, which other processes
// on a shared machine do not inflate. Where the CPU has AVX-512, gemm is its AVX-512 kernel and
// gemm_avx2 the AVX2 one. frac_peak is over peakGFLOPSPerCore, the AVX2 machine (an
// AVX-512 kernel can pass 1); frac_peak_measured is over the peak of the kernel's own instruction
// set measured on this machine at the start of the run (measuredPeakGFLOPS: on another CPU, or
// at another clock, the datasheet figure misleads):
//
//	go test -run '^$' -bench Sgemm -benchtime 3x ./exec/kernels/gemm
func BenchmarkSgemm(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	impls := []string{"gemm", "gonum"}
	if useAVX512 {
		impls = []string{"gemm", "gemm_avx2", "gonum"}
	}
	ymm, zmm := measuredPeakGFLOPS(false), measuredPeakGFLOPS(true)
	b.Logf("measured fp32 FMA peak per core: %.1f GFLOP/s AVX2, %.1f AVX-512 (0: not on this CPU)", ymm, zmm)
	peaks := map[string]float64{"gemm": ymm, "gemm_avx2": ymm}
	if useAVX512 {
		peaks["gemm"] = zmm
	}
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(0)
		for _, impl := range impls {
			for _, threads := range []int{1, procs} {
				if threads == 1 && procs == 1 && impl == "gonum" {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/threads=%d", s.name, impl, threads), func(b *testing.B) {
					defer SetThreads(SetThreads(threads))
					switch impl {
					case "gonum":
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
					case "gemm_avx2":
						useAVX512 = false
						defer func() { useAVX512 = true }()
					}
					// On one thread, also time the OS thread's CPU (see threadCPU).
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					cpu0 := threadCPU()
					for b.Loop() {
						if impl == "gonum" {
							ref.Sgemm(tr(s.tA), tr(s.tB), s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
						} else {
							Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
						}
					}
					cpu := threadCPU() - cpu0
					flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
					gf := flops / b.Elapsed().Seconds() / 1e9
					b.ReportMetric(gf, "GFLOP/s")
					b.ReportMetric(gf/(peakGFLOPSPerCore*float64(threads)), "frac_peak")
					if peak := peaks[impl]; peak > 0 {
						b.ReportMetric(gf/(peak*float64(threads)), "frac_peak_measured")
					}
					if impl != "gonum" && threads == 1 && cpu > 0 { // gonum runs workers on other threads
						b.ReportMetric(flops/cpu.Seconds()/1e9/peakGFLOPSPerCore, "frac_peak_cpu")
					}
				})
			}
		}
	}
}

// BenchmarkPacking times each of benchShapes on one thread with full panels packed in assembly and
// in Go (goPacking), alternately within each iteration so that both see the same load, and
// reports asm_speedup, the median over iterations of Go's time over the assembly's (packing in
// Go took 14% of a 1024³ product in a CPU profile):
//
//	go test -run '^$' -bench Packing -benchtime 15x ./exec/kernels/gemm
func BenchmarkPacking(b *testing.B) { flagSpeedup(b, &goPacking, "asm_speedup") }

// flagSpeedup runs each of benchShapes on one thread with *flag false and true, alternately within
// each iteration so that both see the same load, and reports metric, the median over iterations
// of the time with the flag over the time without; the flag is false again afterwards.
func flagSpeedup(b *testing.B, flag *bool, metric string) { flagSpeedupBeta(b, flag, metric, 0) }

// flagSpeedupBeta is flagSpeedup with products C = op(A)·op(B) + beta·C.
func flagSpeedupBeta(b *testing.B, flag *bool, metric string, beta float32) {
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(0)
		b.Run(s.name, func(b *testing.B) {
			defer SetThreads(SetThreads(1))
			defer func() { *flag = false }()
			run := func(on bool) func() {
				return func() {
					*flag = on
					Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, beta, c, s.n)
				}
			}
			b.ReportMetric(medianRatio(b, run(false), run(true)), metric)
		})
	}
}

// BenchmarkPanelPrefetch times each of benchShapes on one thread with and without the L2 prefetch
// of the next B panel (noPanelPrefetch), alternately within each iteration, and reports
// prefetch_speedup, the median over iterations of the time without over the time with:
//
//	go test -run '^$' -bench PanelPrefetch -benchtime 11x ./exec/kernels/gemm
func BenchmarkPanelPrefetch(b *testing.B) { flagSpeedup(b, &noPanelPrefetch, "prefetch_speedup") }

// BenchmarkStageC times each of benchShapes on one thread with C staged at a padded stride where
// its own is a multiple of 4 KiB (stageC) and without (noStageC), alternately within each
// iteration, and reports stage_speedup, the median over iterations of the time without over the
// time with (1 where stageC does not apply), with each micro-kernel the CPU has. It stages on any
// CPU (stageOnThisCPU), to show whether this one gains:
//
//	go test -run '^$' -bench StageC -benchtime 11x ./exec/kernels/gemm
func BenchmarkStageC(b *testing.B) {
	defer stagingOn()()
	forKernels(b, func(b *testing.B) { flagSpeedup(b, &noStageC, "stage_speedup") })
}

// stagingOn lets stageC stage on this CPU and returns the function that restores the setting.
func stagingOn() func() {
	was := stageOnThisCPU
	stageOnThisCPU = true
	return func() { stageOnThisCPU = was }
}

// forKernels runs f as sub-benchmarks avx512 and avx2 where the CPU has the AVX-512 kernel, else
// as b itself.
func forKernels(b *testing.B, f func(b *testing.B)) {
	if !useAsm || !useAVX512 {
		f(b)
		return
	}
	b.Run("avx512", f)
	b.Run("avx2", func(b *testing.B) {
		useAVX512 = false
		defer func() { useAVX512 = true }()
		f(b)
	})
}

// BenchmarkStageCAccumulate is BenchmarkStageC for products that accumulate into C (beta = 1, as
// the weight gradients of a training step): it times each of benchShapes staged (stageAccumulate)
// and not, and reports unstaged_speedup, the median over iterations of the staged time over the
// unstaged:
//
//	go test -run '^$' -bench StageCAccumulate -benchtime 11x ./exec/kernels/gemm
func BenchmarkStageCAccumulate(b *testing.B) {
	defer stagingOn()()
	flagSpeedupBeta(b, &stageAccumulate, "unstaged_speedup", 1)
}

// BenchmarkPaddedStride times each of benchShapes on one thread with C's row stride n and n+16,
// alternately within each iteration, and reports padded_speedup, the median over iterations of the
// first's time over the second's: with a stride of a multiple of 4 KiB, the six rows of a C tile
// fall in one set of the 8-way L1 beside the B panel's lines; large products avoid it by staging
// C at a padded stride (stageC, BenchmarkStageC), so this compares the staged product with one
// whose own stride is padded:
//
//	go test -run '^$' -bench PaddedStride -benchtime 11x ./exec/kernels/gemm
func BenchmarkPaddedStride(b *testing.B) {
	defer stagingOn()()
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(16)
		b.Run(s.name, func(b *testing.B) {
			defer SetThreads(SetThreads(1))
			run := func(ldc int) func() {
				return func() { Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, ldc) }
			}
			// second over first: the padded stride's time over the unpadded's, inverted.
			b.ReportMetric(1/medianRatio(b, run(s.n), run(s.n+16)), "padded_speedup")
		})
	}
}

// BenchmarkPanels4 times each of benchShapes on one thread with an untransposed B packed four
// panels a pass and panel by panel (noPanels4), alternately, and reports panels4_speedup, the
// median over iterations of the second's time over the first's (only the NN products pack B
// this way):
//
//	go test -run '^$' -bench Panels4 -benchtime 11x ./exec/kernels/gemm
func BenchmarkPanels4(b *testing.B) { flagSpeedup(b, &noPanels4, "panels4_speedup") }

// BenchmarkWideTiles times each of benchShapes on one thread with the AVX-512 kernel computing
// pairs of tiles (kernel6x32z) and one tile a call (noWideTiles), alternately within each
// iteration, and reports wide_speedup, the median over iterations of the time with single tiles
// over the time with pairs:
//
//	go test -run '^$' -bench WideTiles -benchtime 11x ./exec/kernels/gemm
func BenchmarkWideTiles(b *testing.B) {
	if !wideTiles() {
		b.Skip("no AVX-512 kernels here")
	}
	flagSpeedup(b, &noWideTiles, "wide_speedup")
}

// BenchmarkTallTiles times each of benchShapes with the AVX-512 kernel in 24×16 tiles (macroTall)
// and in pairs of 6×16 tiles (noTallTiles), alternately within each iteration, on one thread and
// on all cores, and reports tall_speedup, the median over iterations of the time with pairs over
// the time with tall tiles:
//
//	go test -run '^$' -bench TallTiles -benchtime 11x ./exec/kernels/gemm
func BenchmarkTallTiles(b *testing.B) {
	if !tallTiles() {
		b.Skip("no AVX-512 kernels here")
	}
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(0)
		for _, threads := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				defer SetThreads(SetThreads(threads))
				defer func() { noTallTiles = false }()
				run := func(pairs bool) func() {
					return func() {
						noTallTiles = pairs
						Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
					}
				}
				b.ReportMetric(medianRatio(b, run(false), run(true)), "tall_speedup")
			})
		}
	}
}

// BenchmarkAVX512 times each of benchShapes on one thread with the AVX-512 path this CPU runs (the
// 24×16 tiles) and with the AVX2 6×16 kernel alone (useAVX512 cleared), alternately within each
// iteration, and reports zmm_speedup, the median over iterations of the AVX2 time over the
// AVX-512 one. Where a core runs a 512-bit operation on 256-bit units in two cycles (AMD Zen 4)
// both have the same FMA peak, so this is what the tile and its loop order gain by themselves:
//
//	go test -run '^$' -bench 'AVX512$' -benchtime 15x ./exec/kernels/gemm
func BenchmarkAVX512(b *testing.B) {
	if !useAsm || !useAVX512 {
		b.Skip("no AVX-512 kernels here")
	}
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(0)
		b.Run(s.name, func(b *testing.B) {
			defer SetThreads(SetThreads(1))
			defer func() { useAVX512 = true }()
			run := func(zmm bool) func() {
				return func() {
					useAVX512 = zmm
					Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
				}
			}
			b.ReportMetric(medianRatio(b, run(true), run(false)), "zmm_speedup")
		})
	}
}
