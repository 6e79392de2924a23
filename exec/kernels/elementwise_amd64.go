//go:build amd64 && !purego

package kernels

// The AVX2 kernels of elementwise_amd64.s. Each handles n elements, n a multiple of 8; the Go
// wrappers run the rest with the scalar float32 code of the same formulas.

//go:noescape
func geluAVX(dst, x *float32, n int, nt int)

//go:noescape
func geluBackwardAVX(dx, dy, x *float32, n int, nt int)

//go:noescape
func siluAVX(dst, x *float32, n int, nt int)

//go:noescape
func siluBackwardAVX(dx, dy, x *float32, n int, nt int)

//go:noescape
func expSumAVX(dst, x *float32, n int, shift float32, bounded bool) float64

//go:noescape
func reluAVX(dst, x *float32, n int, nt int)

//go:noescape
func reluBackwardAVX(dx, dy, x *float32, n int, nt int)

//go:noescape
func maxAVX(x *float32, n int) float32

//go:noescape
func scaleAVX(dst, src *float32, n int, a float32, nt int)

//go:noescape
func addAVX(dst, a, b *float32, n int)

//go:noescape
func addBothAVX(x, y *float32, n int)

//go:noescape
func prefetchAVX(x *float32, n int)

//go:noescape
func expSumBoundedAVX(dst, x *float32, n int, shift float32) float64

func sfenceAVX()

//go:noescape
func sgdAVX(p, grad *float32, n int, lr float32)

//go:noescape
func adamAVX(p, grad, m, v *float32, n int, c *[7]float32)

//go:noescape
func mseAVX(dy, y, t *float32, n int, c float64) float64

// The AVX-512 kernels of elementwise_amd64.s: the same bits as the AVX2 ones of the same name, n a
// multiple of 32.

//go:noescape
func geluAVX512(dst, x *float32, n int, nt int)

//go:noescape
func geluBackwardAVX512(dx, dy, x *float32, n int, nt int)

//go:noescape
func siluAVX512(dst, x *float32, n int, nt int)

//go:noescape
func siluBackwardAVX512(dx, dy, x *float32, n int, nt int)

//go:noescape
func expSumMaxNextAVX512(dst, x *float32, n int, shift float32, next, nextMax *float32) float64

//go:noescape
func dot64AVX(a, b *float32, n int) float64

//go:noescape
func softmaxGradAVX(dx, dy, y *float32, n int, dot float64)
