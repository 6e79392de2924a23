package gemm

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's pure-Go BLAS with Sgemm replaced by this package's, so that code
// written against gonum's interface can switch with blas32.Use(gemm.Implementation{}).
type Implementation struct {
	gonum.Implementation
}

// Sgemm is Sgemm behind gonum's blas.Float32Level3 interface (row-major; ConjTrans is Trans for
// real matrices). It panics on a transpose flag that is not one of blas's.
func (Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	Sgemm(isTrans(tA), isTrans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func isTrans(t blas.Transpose) bool {
	switch t {
	case blas.NoTrans:
		return false
	case blas.Trans, blas.ConjTrans:
		return true
	}
	panic("gemm: bad transpose flag " + string(rune(t)))
}
