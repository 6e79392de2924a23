//go:build !amd64 || purego

package kernels

// Without the assembly, vecLen is 0 and these are never called.

func geluAVX(dst, x *float32, n int, nt int)            { panic("kernels: no AVX2 kernels") }
func geluBackwardAVX(dx, dy, x *float32, n int, nt int) { panic("kernels: no AVX2 kernels") }
func siluAVX(dst, x *float32, n int, nt int)            { panic("kernels: no AVX2 kernels") }
func siluBackwardAVX(dx, dy, x *float32, n int, nt int) { panic("kernels: no AVX2 kernels") }
func expSumAVX(dst, x *float32, n int, shift float32, bounded bool) float64 {
	panic("kernels: no AVX2 kernels")
}
func expSumBoundedAVX(dst, x *float32, n int, shift float32) float64 {
	panic("kernels: no AVX2 kernels")
}
func reluAVX(dst, x *float32, n int, nt int)               { panic("kernels: no AVX2 kernels") }
func reluBackwardAVX(dx, dy, x *float32, n int, nt int)    { panic("kernels: no AVX2 kernels") }
func maxAVX(x *float32, n int) float32                     { panic("kernels: no AVX2 kernels") }
func scaleAVX(dst, src *float32, n int, a float32, nt int) { panic("kernels: no AVX2 kernels") }
func sfenceAVX()                                           { panic("kernels: no AVX2 kernels") }
func sgdAVX(p, grad *float32, n int, lr float32)           { panic("kernels: no AVX2 kernels") }
func adamAVX(p, grad, m, v *float32, n int, c *[7]float32) { panic("kernels: no AVX2 kernels") }
func addAVX(dst, a, b *float32, n int)                     { panic("kernels: no AVX2 kernels") }
func addBothAVX(x, y *float32, n int)                      { panic("kernels: no AVX2 kernels") }
func prefetchAVX(x *float32, n int)                        { panic("kernels: no AVX2 kernels") }
func mseAVX(dy, y, t *float32, n int, c float64) float64   { panic("kernels: no AVX2 kernels") }
func geluAVX512(dst, x *float32, n int, nt int)            { panic("kernels: no AVX-512 kernels") }
func geluBackwardAVX512(dx, dy, x *float32, n int, nt int) { panic("kernels: no AVX-512 kernels") }
func siluAVX512(dst, x *float32, n int, nt int)            { panic("kernels: no AVX-512 kernels") }
func siluBackwardAVX512(dx, dy, x *float32, n int, nt int) { panic("kernels: no AVX-512 kernels") }
func expSumMaxNextAVX512(dst, x *float32, n int, shift float32, next, nextMax *float32) float64 {
	panic("kernels: no AVX-512 kernels")
}
func dot64AVX(a, b *float32, n int) float64                 { panic("kernels: no AVX2 kernels") }
func softmaxGradAVX(dx, dy, y *float32, n int, dot float64) { panic("kernels: no AVX2 kernels") }
