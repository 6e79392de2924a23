//go:build openblas && cgo

package gemm

import (
	"testing"

	"github.com/tpsim/tpsim/exec/kernels/gemm/internal/openblas"
)

// BenchmarkVsOpenBLAS runs each of benchShapes with this package's Sgemm on one thread and with
// OpenBLAS's cblas_sgemm, alternately within each iteration, and reports openblas_speedup, the
// median over iterations of OpenBLAS's time over this package's (above 1: this package is
// faster). It needs cgo and OpenBLAS's shared library (Debian: libopenblas0-pthread); pin OpenBLAS
// to one thread and, on a CPU newer than its tables, choose its kernels:
//
//	OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=SkylakeX go test -tags openblas -run '^$' \
//	    -bench VsOpenBLAS -benchtime 11x ./exec/kernels/gemm
func BenchmarkVsOpenBLAS(b *testing.B) {
	for _, s := range benchShapes {
		a, bb, c, lda, ldb := s.operands(0)
		c2 := make([]float32, len(c))
		b.Run(s.name, func(b *testing.B) {
			defer SetThreads(SetThreads(1))
			ours := func() { Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n) }
			theirs := func() { openblas.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c2, s.n) }
			b.ReportMetric(medianRatio(b, ours, theirs), "openblas_speedup")
			// The same product, so that the ratio compares like with like.
			for i := range c {
				if d := c[i] - c2[i]; d > 1e-3*(1+abs32(c2[i])) || -d > 1e-3*(1+abs32(c2[i])) {
					b.Fatalf("C[%d] = %v, OpenBLAS %v", i, c[i], c2[i])
				}
			}
		})
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
