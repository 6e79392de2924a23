//go:build openblas && cgo

// Package openblas links OpenBLAS's cblas_sgemm for gemm's BenchmarkVsOpenBLAS alone (build tag
// openblas, cgo): the default build stays pure Go, and gemm never calls it. It is a package of its
// own because a package using cgo cannot hold Go assembly.
package openblas

// #cgo LDFLAGS: -l:libopenblas.so.0
// enum { RowMajor = 101, NoTrans = 111, Trans = 112 };
// void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha,
//                  const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
import "C"

// Sgemm runs OpenBLAS's cblas_sgemm (row major) with the arguments of gemm.Sgemm.
func Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	t := func(x bool) C.int {
		if x {
			return C.Trans
		}
		return C.NoTrans
	}
	C.cblas_sgemm(C.RowMajor, t(tA), t(tB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(&a[0]), C.int(lda), (*C.float)(&b[0]), C.int(ldb), C.float(beta), (*C.float)(&c[0]), C.int(ldc))
}
