package gemm

import "github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"

// useAsm selects the assembly kernels (amd64 with AVX2 and FMA); tests clear it to run the Go ones.
// Unlike the elementwise kernels they stay on under -race, as gonum's assembly does: the Go
// micro-kernel under the detector is some 100x slower, too slow for the calibration tests. The
// detector still sees every read of A and B (packing runs in Go under it, see asmPacking) and the
// writes of C's edge tiles; the synchronisation of a product's goroutines is checked under -race
// by TestSgemmConcurrent with the Go kernel.
var useAsm = cpufeat.AVX2FMA

// useAVX512 selects, within the assembly, the AVX-512 micro-kernel (kernel6x16z) over the AVX2 one
// where the CPU has AVX-512F: the same packed panels and tile, at twice the FMA width. Tests and
// BenchmarkSgemm clear it to run the AVX2 kernel.
var useAVX512 = cpufeat.AVX512F

// goPacking makes the amd64 build pack in Go, as under the race detector; BenchmarkPacking sets
// it to time the assembly packing against Go's.
var goPacking bool

// noPanelPrefetch turns off the L2 prefetch of the next B panel (prefetchNext);
// BenchmarkPanelPrefetch sets it to time the product without it.
var noPanelPrefetch bool

// noStageC turns off the staging of C at a padded stride (stageC); BenchmarkStageC sets it.
var noStageC bool

// stageOnThisCPU is whether stageC may stage C here: where the L1d has at most 8 ways (or CPUID
// does not say). Staging is for the 8-way L1d of the project's AMD Zen 3 VM, where the rows of a
// C tile at a stride of a multiple of 4 KiB evict the B panel from their one set (stageC). On a
// 12-way L1d (the Intel Xeon VM of family 6 model 207, 48 KiB) the set holds them beside the
// panel, and the copy is the whole difference: the staged shapes of BenchmarkStageC (11 paired
// runs each, two runs on 2026-12-04) were 0.91-0.99x as fast staged with the AVX-512 kernel and
// 0.90-1.00x with the AVX2 one. BenchmarkStageC sets it, to time staging on any CPU.
var stageOnThisCPU = cpufeat.L1DWays <= 8

// stageAccumulate stages C (stageC) for products with beta != 0 too; BenchmarkStageCAccumulate
// sets it.
var stageAccumulate bool

// noPanels4 packs an untransposed B panel by panel instead of four panels a pass
// (packBPanels4); BenchmarkPanels4 sets it.
var noPanels4 bool

// noTallTiles makes the AVX-512 path compute 6-row tiles (kernel6x32z pairs, macro's loop order)
// instead of 24-row ones (macroTall); BenchmarkTallTiles and a test set it.
var noTallTiles bool

// noWideTiles makes the AVX-512 path compute one 6×16 tile a kernel call instead of pairs
// (kernel6x32z); BenchmarkWideTiles and a test set it.
var noWideTiles bool
