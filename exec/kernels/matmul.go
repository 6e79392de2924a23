package kernels

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/tpsim/tpsim/exec/kernels/gemm"
)

// panicf panics with a message prefixed "kernels: ". Callers only reach it on a failed check, so
// the boxing of its arguments costs nothing on the normal path.
func panicf(format string, args ...any) {
	panic(fmt.Sprintf("kernels: "+format, args...))
}

// checkLen panics unless len(s) == want.
func checkLen(fn, name string, s []float32, want int) {
	if len(s) != want {
		panicf("%s: len(%s) = %d, want %d", fn, name, len(s), want)
	}
}

// checkDims panics unless every dimension is non-negative.
func checkDims(fn string, dims ...int) {
	for _, d := range dims {
		if d < 0 {
			panicf("%s: negative dimension %d", fn, d)
		}
	}
}

// general wraps a dense row-major [r, c] matrix.
func general(r, c int, data []float32) blas32.General {
	return blas32.General{Rows: r, Cols: c, Stride: max(1, c), Data: data}
}

// gemmGeneral computes c = alpha*op(a)*op(b) + beta*c on strided matrices with package gemm, the
// same contract as blas32.Gemm (which the tests of package gemm hold it to against gonum's).
func gemmGeneral(transA, transB bool, alpha float32, a, b blas32.General, beta float32, c blas32.General) {
	k := a.Cols
	if transA {
		k = a.Rows
	}
	gemm.Sgemm(transA, transB, c.Rows, c.Cols, k, alpha, a.Data, a.Stride, b.Data, b.Stride, beta, c.Data, c.Stride)
}

// MatMul computes dst = alpha*op(a)*op(b) + beta*dst, where dst is [m, n], op(a) is [m, k] and
// op(b) is [k, n]. a is stored [m, k], or [k, m] if transA (op(a) = aᵀ); b is stored [k, n], or
// [n, k] if transB. With beta = 0, dst is overwritten and its old contents (even NaN) are ignored.
// It runs package gemm's Sgemm (blocked, AVX2/FMA where the CPU has it, split over free cores
// for large products). dst must not alias a or b.
//
// It panics if a dimension is negative or if len(dst) != m*n, len(a) != m*k or len(b) != k*n.
func MatMul(dst, a, b []float32, m, k, n int, transA, transB bool, alpha, beta float32) {
	checkDims("MatMul", m, k, n)
	checkLen("MatMul", "dst", dst, m*n)
	checkLen("MatMul", "a", a, m*k)
	checkLen("MatMul", "b", b, k*n)
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	gemmGeneral(transA, transB, alpha, general(ar, ac, a), general(br, bc, b), beta, general(m, n, dst))
}

// LinearForward computes y = x Wᵀ + b for a torch.nn.Linear layer: x is [m, in], w is [out, in],
// b is [out] or nil (no bias), y is [m, out] and is overwritten.
//
// It panics if a dimension is negative or a length does not match.
func LinearForward(y, x, w, b []float32, m, in, out int) {
	MatMul(y, x, w, m, in, out, false, true, 1, 0)
	if b != nil {
		AddBias(y, b, m, out)
	}
}

// LinearBackwardInput computes dx = dy W (overwritten), dy [m, out], w [out, in], dx [m, in].
//
// It panics if a dimension is negative or a length does not match.
func LinearBackwardInput(dx, dy, w []float32, m, in, out int) {
	MatMul(dx, dy, w, m, out, in, false, false, 1, 0)
}

// LinearBackwardWeight computes dW += dyᵀ x (dw [out, in]; dW = dyᵀ x, overwriting dw, if
// !accumulate) and, if db is not nil, db += the sum of the rows of dy (db [out]); dy is [m, out]
// and x is [m, in]. With accumulate false dw's old contents are not read (even NaN).
//
// It panics if a dimension is negative or a length does not match.
func LinearBackwardWeight(dw, db, dy, x []float32, m, in, out int, accumulate bool) {
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	MatMul(dw, dy, x, out, m, in, true, false, 1, beta)
	if db != nil {
		BiasGrad(db, dy, m, out)
	}
}

// LinearBackward runs LinearBackwardInput (skipped if dx is nil, as for the input data) and
// LinearBackwardWeight: dx = dy W is overwritten, dW += dyᵀ x (dW = dyᵀ x if !accumulate, as for
// a gradient not yet written this step) and db += rows of dy are accumulated (db nil for a Linear
// without bias).
//
// It panics if a dimension is negative or a length does not match.
func LinearBackward(dx, dw, db, dy, x, w []float32, m, in, out int, accumulate bool) {
	if dx != nil {
		LinearBackwardInput(dx, dy, w, m, in, out)
	}
	LinearBackwardWeight(dw, db, dy, x, m, in, out, accumulate)
}

// AddBias adds b [cols] to every row of y [rows, cols] in place (AddInPlace per row, so AVX2).
//
// It panics if a dimension is negative or a length does not match.
func AddBias(y, b []float32, rows, cols int) {
	checkDims("AddBias", rows, cols)
	checkLen("AddBias", "y", y, rows*cols)
	checkLen("AddBias", "b", b, cols)
	for r := range rows {
		AddInPlace(y[r*cols:(r+1)*cols], b)
	}
}

// BiasGrad accumulates db += the sum over rows of dy [rows, cols], row by row in order (AddInPlace
// per row, so AVX2, with the bits of the scalar loop); db is [cols].
//
// It panics if a dimension is negative or a length does not match.
func BiasGrad(db, dy []float32, rows, cols int) {
	checkDims("BiasGrad", rows, cols)
	checkLen("BiasGrad", "dy", dy, rows*cols)
	checkLen("BiasGrad", "db", db, cols)
	for r := range rows {
		AddInPlace(db, dy[r*cols:(r+1)*cols])
	}
}
