//go:build amd64 && !purego

package gemm

// kernel6x16 computes the 6×16 tile t = Σ_p a[p*6+r] b[p*16+j] over k steps of the packed panels
// a and b, then stores c[r*ldc+j] = alpha*t (accumulate == 0) or alpha*t + beta*c[r*ldc+j]
// (accumulate != 0). ldc is in elements.
//
//go:noescape
func kernel6x16(k int, a, b, c *float32, ldc int, alpha, beta float32, accumulate int)

// transposePanel16 writes dst[l*16+j] = src[j*lds+l] for j < 16 and l < 8*blocks: the packing of
// a full 16-column panel of a transposed B.
//
//go:noescape
func transposePanel16(dst, src *float32, lds, blocks int)

// packBTransPanel packs a full NR-column panel of op(B) = bᵀ: dst[l*NR+j] = src[j*lds+l] for
// j < NR and l < kcur, with the 8-column blocks in assembly where the CPU has AVX2.
func packBTransPanel(dst, src []float32, lds, kcur int) {
	blocks := 0
	if useAsm {
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
	acc := 0
	if accumulate {
		acc = 1
	}
	kernel6x16(k, &a[0], &b[0], &c[0], ldc, alpha, beta, acc)
}
