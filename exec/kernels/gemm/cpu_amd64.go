//go:build amd64 && !purego

package gemm

import (
	"time"

	"github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"
)

// kernel6x16 computes the 6×16 tile t = Σ_p a[p*6+r] b[p*16+j] over k steps of the packed panels
// a and b, then stores c[r*ldc+j] = alpha*t (accumulate == 0) or alpha*t + beta*c[r*ldc+j]
// (accumulate != 0). ldc is in elements.
//
//go:noescape
func kernel6x16(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)

// fmaPeak runs iters rounds of twelve independent 8-wide FMAs (192 flops a round) and nothing
// else, fmaPeakZ the same with 16-wide ones (384 flops); iters >= 1. Only BenchmarkSgemm calls
// them (see measuredPeakGFLOPS).
//
//go:noescape
func fmaPeak(iters int)

//go:noescape
func fmaPeakZ(iters int)

// measuredPeakGFLOPS times the FMA loop of a micro-kernel's instruction set (AVX-512 if zmm, else
// AVX2) on the calling goroutine, best of three runs of 10-20 ms, and
// returns the GFLOP/s this core reaches; 0 where the CPU lacks the instruction set.
func measuredPeakGFLOPS(zmm bool) float64 {
	if !useAsm || zmm && !cpufeat.AVX512F {
		return 0
	}
	const iters = 10_000_000
	loop, flops := fmaPeak, 192.0
	if zmm {
		loop, flops = fmaPeakZ, 384
	}
	best := 0.0
	for range 3 {
		t0 := time.Now()
		loop(iters)
		best = max(best, flops*iters/time.Since(t0).Seconds()/1e9)
	}
	return best
}

// kernel6x16z is kernel6x16 on AVX-512 (a zmm a tile row; see kernel_amd64.s).
//
//go:noescape
func kernel6x16z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)

// kernel6x32z computes two adjacent 6×16 tiles, c[r*ldc+j] for j < 32, from one packed A panel
// and the packed B panels b[:16k] and b[16k:32k], with kernel6x16's store rule (AVX-512).
//
//go:noescape
func kernel6x32z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)

// kernel24x16z computes the 24×16 tile of C at c (row stride ldc) from the four 6-row A panels
// at a (a[q*6k:] is panel q, in the packed block's layout) and the packed B panel b[:16k], with
// kernel6x16's store rule (AVX-512).
//
//go:noescape
func kernel24x16z(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)

// tallTiles is whether macro computes 24×16 tiles (kernel24x16z) with the A panels in L1 and a
// block of B panels in L2 (macroTall).
func tallTiles() bool { return useAsm && useAVX512 && !noTallTiles }

// microKernel24 is microKernel over the 24×16 tile of the four 6-row A panels a[:24k] (panel q at
// a[q*6k:]) and the B panel b[:16k], into c[r*ldc : r*ldc+nr] for r < 24. Only where tallTiles.
func microKernel24(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	_ = a[mrTall*k-1]
	_ = b[nr*k-1]
	_ = c[(mrTall-1)*ldc+nr-1]
	kernel24x16z(k, &a[0], &b[0], &c[0], ldc, alpha, beta, accFlag(accumulate))
}

// wideTiles is whether macro computes pairs of full tiles with microKernel2.
func wideTiles() bool { return useAsm && useAVX512 && !noWideTiles }

// microKernel2 is microKernel over two adjacent full tiles: the panels b[:nr*k] and
// b[nr*k:2*nr*k], into c[r*ldc : r*ldc+2*nr] for r < mr. Only where wideTiles.
func microKernel2(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	_ = a[6*k-1]
	_ = b[32*k-1]
	_ = c[5*ldc+31]
	kernel6x32z(k, &a[0], &b[0], &c[0], ldc, alpha, beta, accFlag(accumulate))
}

// transposePanel16 writes dst[l*16+j] = src[j*lds+l] for j < 16 and l < 8*blocks: the packing of
// a full 16-column panel of a transposed B.
//
//go:noescape
func transposePanel16(dst, src *float32, lds, blocks int)

// copyPanel16 writes dst[l*16+j] = src[l*lds+j] for j < 16 and l < k, k >= 1.
//
//go:noescape
func copyPanel16(dst, src *float32, lds, k int)

// copyPanels16x4 writes dst[q*dstride+l*16+j] = src[l*lds+q*16+j] for q < 4, j < 16 and l < k,
// k >= 1: four adjacent full panels of an untransposed B.
//
//go:noescape
func copyPanels16x4(dst, src *float32, lds, k, dstride int)

// copyPanel6 writes dst[l*6+r] = src[l*lds+r] for r < 6 and l < k, k >= 1.
//
//go:noescape
func copyPanel6(dst, src *float32, lds, k int)

// transposePanel6 writes dst[l*6+r] = src[r*lds+l] for r < 6 and l < 8*blocks, blocks >= 1.
//
//go:noescape
func transposePanel6(dst, src *float32, lds, blocks int)

// prefetchL2 issues PREFETCHT1 for lines 64-byte lines from p, lines >= 1.
//
//go:noescape
func prefetchL2(p *float32, lines int)

// prefetchNext fetches into L2 the part-th of parts slices of the packed panel next, where the
// CPU runs the assembly kernel.
func prefetchNext(next []float32, part, parts int) {
	if !useAsm || len(next) == 0 || noPanelPrefetch {
		return
	}
	lines := (len(next)*4 + 63) / 64
	lo, hi := lines*part/parts, lines*(part+1)/parts
	if hi > lo {
		_ = next[min(len(next)-1, (hi*64-1)/4)]
		prefetchL2(&next[lo*16], hi-lo)
	}
}

// asmPacking is whether packing runs in assembly: with the kernels, and not under the race
// detector, which sees the reads of A and B only when Go does them (nor with goPacking).
func asmPacking() bool { return useAsm && !raceEnabled && !goPacking }

// packAPanel packs a full MR-row panel of an untransposed A: dst[l*MR+r] = src[r*lds+l] for
// r < MR and l < kcur, the 8-column blocks in assembly where it may run.
func packAPanel(dst, src []float32, lds, kcur int) {
	blocks := 0
	if asmPacking() {
		blocks = kcur / 8
		if blocks > 0 {
			// The assembly reads src[r*lds : r*lds+8*blocks] for r < 6 and writes dst[:48*blocks].
			_ = src[5*lds+8*blocks-1]
			_ = dst[48*blocks-1]
			transposePanel6(&dst[0], &src[0], lds, blocks)
		}
	}
	packAPanelGo(dst, src, lds, 8*blocks, kcur)
}

// packATransPanel packs a full MR-row panel of a transposed A: dst[l*MR+r] = src[l*lds+r] for
// r < MR and l < kcur.
func packATransPanel(dst, src []float32, lds, kcur int) {
	if !asmPacking() || kcur == 0 {
		packATransGo(dst, src, lds, kcur)
		return
	}
	// The assembly reads src[l*lds : l*lds+6] for l < kcur and writes dst[:6*kcur].
	_ = src[(kcur-1)*lds+5]
	_ = dst[6*kcur-1]
	copyPanel6(&dst[0], &src[0], lds, kcur)
}

// packBPanel packs a full NR-column panel of an untransposed B: dst[l*NR+j] = src[l*lds+j] for
// j < NR and l < kcur.
func packBPanel(dst, src []float32, lds, kcur int) {
	if !asmPacking() || kcur == 0 {
		packBPanelGo(dst, src, lds, kcur)
		return
	}
	// The assembly reads src[l*lds : l*lds+16] for l < kcur and writes dst[:16*kcur].
	_ = src[(kcur-1)*lds+15]
	_ = dst[16*kcur-1]
	copyPanel16(&dst[0], &src[0], lds, kcur)
}

// packBPanels4 packs four adjacent full NR-column panels of an untransposed B, panel q at
// dst[q*NR*kcur:], reading each row's 4*NR columns in one pass; it reports false where the
// assembly may not run (the caller packs panel by panel).
func packBPanels4(dst, src []float32, lds, kcur int) bool {
	if !asmPacking() || kcur == 0 {
		return false
	}
	// The assembly reads src[l*lds : l*lds+64] for l < kcur and writes dst[:4*16*kcur].
	_ = src[(kcur-1)*lds+63]
	_ = dst[4*nr*kcur-1]
	copyPanels16x4(&dst[0], &src[0], lds, kcur, nr*kcur)
	return true
}

// packBTransPanel packs a full NR-column panel of op(B) = bᵀ: dst[l*NR+j] = src[j*lds+l] for
// j < NR and l < kcur, with the 8-column blocks in assembly where the CPU has AVX2.
func packBTransPanel(dst, src []float32, lds, kcur int) {
	blocks := 0
	if asmPacking() {
		blocks = kcur / 8
		if blocks > 0 {
			// The assembly reads src[j*lds : j*lds+8*blocks] for j < 16 and writes dst[:128*blocks].
			_ = src[15*lds+8*blocks-1]
			_ = dst[128*blocks-1]
			transposePanel16(&dst[0], &src[0], lds, blocks)
		}
	}
	packBTransGo(dst, src, lds, 8*blocks, kcur, nr)
}

// microKernel runs the 6×16 micro-kernel on full tiles: the assembly one where the CPU has
// AVX2 and FMA, the Go one otherwise.
func microKernel(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	if !useAsm {
		kernelGo(k, a, b, c, ldc, alpha, beta, accumulate)
		return
	}
	// The assembly reads a[:6k], b[:16k] and writes c[r*ldc : r*ldc+16] for r < 6; check that
	// the slices hold them, so that a caller's bug panics here instead of corrupting memory.
	_ = a[6*k-1]
	_ = b[16*k-1]
	_ = c[5*ldc+15]
	if useAVX512 {
		kernel6x16z(k, &a[0], &b[0], &c[0], ldc, alpha, beta, accFlag(accumulate))
		return
	}
	kernel6x16(k, &a[0], &b[0], &c[0], ldc, alpha, beta, accFlag(accumulate))
}

// accFlag is the kernels' accumulate argument: 1 to add beta*C, 0 to overwrite C.
func accFlag(accumulate bool) int {
	if accumulate {
		return 1
	}
	return 0
}
