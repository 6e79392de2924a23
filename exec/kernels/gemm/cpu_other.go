//go:build !amd64 || purego

package gemm

var useAsm = false

func microKernel(k int, a, b, c []float32, ldc int, alpha, beta float32, accumulate bool) {
	kernelGo(k, a, b, c, ldc, alpha, beta, accumulate)
}
