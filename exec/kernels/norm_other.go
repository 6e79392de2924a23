//go:build !amd64 || purego

package kernels

// Without the assembly, vecLen is 0 and these are never called.

func normSumAVX(x *float32, n int) float64                  { panic("kernels: no AVX2 kernels") }
func normSqDevAVX(x *float32, n int, mu float64) float64    { panic("kernels: no AVX2 kernels") }
func normOutAVX(y, x, w, b *float32, n int, mu, rs float64) { panic("kernels: no AVX2 kernels") }
func normGradSumsAVX(dw, dy, x, w *float32, n int, mu, rs float64) (sg, sgx float64) {
	panic("kernels: no AVX2 kernels")
}
func normGradOutAVX(dx, dy, x, w *float32, n int, mu, rs, mg, mgx float64) {
	panic("kernels: no AVX2 kernels")
}
