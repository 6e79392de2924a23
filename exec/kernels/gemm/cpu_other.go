//go:build !amd64 || purego

package gemm

func microKernel(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	kernelGo(k, a, b, c, ldc, alpha, beta, accumulate)
}

func packBTransPanel(dst, src []float32, lds, kcur int) {
	packBTransGo(dst, src, lds, 0, kcur, nr)
}

func packAPanel(dst, src []float32, lds, kcur int)      { packAPanelGo(dst, src, lds, 0, kcur) }
func packATransPanel(dst, src []float32, lds, kcur int) { packATransGo(dst, src, lds, kcur) }
func packBPanel(dst, src []float32, lds, kcur int)      { packBPanelGo(dst, src, lds, kcur) }

func packBPanels4(dst, src []float32, lds, kcur int) bool { return false }

func prefetchNext(next []float32, part, parts int) {}

// measuredPeakGFLOPS is 0: the portable build has no FMA loop to time.
func measuredPeakGFLOPS(zmm bool) float64 { return 0 }

func wideTiles() bool { return false }

func tallTiles() bool { return false }

func microKernel24(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	panic("gemm: microKernel24 without the AVX-512 kernels")
}

func microKernel2(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	panic("gemm: microKernel2 without the AVX-512 kernels")
}
