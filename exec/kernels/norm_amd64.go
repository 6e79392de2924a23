//go:build amd64 && !purego

package kernels

// The AVX2 parts of the norms' row loops (norm_amd64.s), n a multiple of 8.

//go:noescape
func normSumAVX(x *float32, n int) float64

//go:noescape
func normSqDevAVX(x *float32, n int, mu float64) float64

//go:noescape
func normOutAVX(y, x, w, b *float32, n int, mu, rs float64)

//go:noescape
func normGradSumsAVX(dw, dy, x, w *float32, n int, mu, rs float64) (sg, sgx float64)

//go:noescape
func normGradOutAVX(dx, dy, x, w *float32, n int, mu, rs, mg, mgx float64)
