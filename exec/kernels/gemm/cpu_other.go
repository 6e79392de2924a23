//go:build !amd64 || purego

package gemm

func microKernel(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	kernelGo(k, a, b, c, ldc, alpha, beta, accumulate)
}

func packBTransPanel(dst, src []float32, lds, kcur int) {
	packBTransGo(dst, src, lds, 0, kcur, nr)
}
