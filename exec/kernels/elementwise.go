package kernels

import "unsafe"

// ntBytes is the output size from which the activation kernels store with non-temporal stores,
// which write memory without first reading the destination lines into the caches (the Go runtime's
// memmove does the same from 1 MiB, runtime/memmove_amd64.s, gobble_big_data_fwd): 16 MiB, half
// the 32 MiB L3 of this machine's EPYC 7003 (lscpu), since an output that large would not stay in
// the caches for the next op anyway, while a smaller one is read back from L3 faster than from
// memory (BenchmarkElementwise: at 4 MiB regular stores ran ReLU at copy's bandwidth, non-temporal
// ones at 0.65 of it; at 64 MiB non-temporal ones took ReLU from 0.57 to 0.78 of copy's and GELU
// from 0.48 to 0.55).
const ntBytes = 16 << 20

// ntStores is 1 when the AVX2 kernels should store dst with non-temporal stores: at least ntBytes
// long and 32-byte aligned (VMOVNTPS faults otherwise; buffers that large come page-aligned from
// the Go allocator). The AVX-512 kernels' zmm stores need 64 bytes (activation).
func ntStores(dst []float32) int {
	if len(dst)*4 >= ntBytes && uintptr(unsafe.Pointer(&dst[0]))%32 == 0 {
		return 1
	}
	return 0
}

// activationKind names an activation's vector kernels (activation).
type activationKind int

const (
	geluKind activationKind = iota
	geluBackwardKind
	siluKind
	siluBackwardKind
)

// activation runs the vector kernels of activation k, dst = f(x) (dy nil) or dst = dy * f'(x):
// the AVX-512 one on the largest multiple of 32 elements where the CPU has it (vec512Len), then
// the AVX2 one on the whole vectors after them, both computing the same bits. It returns where the
// scalar tail starts. (A switch rather than function values, which would make every slice escape.)
func activation(k activationKind, dst, dy, x []float32) int {
	v := vecLen(len(dst))
	if v == 0 {
		return 0
	}
	nt := ntStores(dst)
	w := vec512Len(v)
	if w > 0 {
		ntz := nt // zmm non-temporal stores need dst 64-byte aligned
		if uintptr(unsafe.Pointer(&dst[0]))%64 != 0 {
			ntz = 0
		}
		activationKernel(k, true, dst, dy, x, 0, w, ntz)
	}
	if w < v {
		activationKernel(k, false, dst, dy, x, w, v-w, nt)
	}
	return v
}

func activationKernel(k activationKind, zmm bool, dst, dy, x []float32, lo, n, nt int) {
	d, xp := &dst[lo], &x[lo]
	switch k {
	case geluKind:
		if zmm {
			geluAVX512(d, xp, n, nt)
		} else {
			geluAVX(d, xp, n, nt)
		}
	case geluBackwardKind:
		if zmm {
			geluBackwardAVX512(d, &dy[lo], xp, n, nt)
		} else {
			geluBackwardAVX(d, &dy[lo], xp, n, nt)
		}
	case siluKind:
		if zmm {
			siluAVX512(d, xp, n, nt)
		} else {
			siluAVX(d, xp, n, nt)
		}
	case siluBackwardKind:
		if zmm {
			siluBackwardAVX512(d, &dy[lo], xp, n, nt)
		} else {
			siluBackwardAVX(d, &dy[lo], xp, n, nt)
		}
	}
}

func checkSame(fn string, dst []float32, names string, xs ...[]float32) {
	for _, x := range xs {
		if len(x) != len(dst) {
			panicf("%s: lengths differ: len(dst) = %d, len(%s) = %d", fn, len(dst), names, len(x))
		}
	}
}

// Add sets dst = a + b elementwise. dst may alias a or b.
//
// It panics if the lengths differ.
func Add(dst, a, b []float32) {
	checkSame("Add", dst, "a, b", a, b)
	v := vecLen(len(dst))
	if v > 0 {
		addAVX(&dst[0], &a[0], &b[0], v)
	}
	for i := v; i < len(dst); i++ {
		dst[i] = a[i] + b[i]
	}
}

// AddInPlace sets dst += a elementwise (the join of two gradient branches, a residual add).
//
// It panics if the lengths differ.
func AddInPlace(dst, a []float32) {
	checkSame("AddInPlace", dst, "a", a)
	v := vecLen(len(dst))
	if v > 0 {
		addAVX(&dst[0], &dst[0], &a[0], v)
	}
	for i := v; i < len(dst); i++ {
		dst[i] += a[i]
	}
}

// AddBoth sets both x and y to x + y elementwise, in one pass that reads each once and writes
// each once (the two-rank all-reduce: each rank sums its half of both ranks' buffers and leaves the
// sum in both). x and y must not overlap unless they are the same slice.
//
// It panics if the lengths differ.
func AddBoth(x, y []float32) {
	checkSame("AddBoth", x, "y", y)
	v := vecLen(len(x))
	if v > 0 {
		addBothAVX(&x[0], &y[0], v)
	}
	for i := v; i < len(x); i++ {
		s := x[i] + y[i]
		x[i], y[i] = s, s
	}
}

// Scale sets x *= alpha in place (BLAS scal).
func Scale(alpha float32, x []float32) {
	v := vecLen(len(x))
	if v > 0 {
		scaleAVX(&x[0], &x[0], v, alpha, 0)
	}
	for i := v; i < len(x); i++ {
		x[i] *= alpha
	}
}

// Axpy sets y += alpha*x (BLAS axpy).
//
// It panics if the lengths differ.
func Axpy(alpha float32, x, y []float32) {
	checkSame("Axpy", y, "x", x)
	for i := range y {
		y[i] += alpha * x[i]
	}
}

// Mul sets dst = a * b elementwise (the gate of SwiGLU: silu(gate) * up). Its backward is
// MulBackward. dst may alias a or b.
//
// It panics if the lengths differ.
func Mul(dst, a, b []float32) {
	checkSame("Mul", dst, "a, b", a, b)
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// MulBackward computes the gradients of y = a*b: da = dy*b and db = dy*a (both overwritten);
// either may be nil to skip it. db is written before da, so da may alias dy; db may alias dy only
// when da is nil.
//
// It panics if the lengths differ.
func MulBackward(da, db, dy, a, b []float32) {
	checkSame("MulBackward", dy, "a, b", a, b)
	if db != nil {
		checkSame("MulBackward", dy, "db", db)
		for i := range db {
			db[i] = dy[i] * a[i]
		}
	}
	if da != nil {
		checkSame("MulBackward", dy, "da", da)
		for i := range da {
			da[i] = dy[i] * b[i]
		}
	}
}

// ReLU sets dst = max(x, 0). dst may alias x.
//
// It panics if the lengths differ.
func ReLU(dst, x []float32) {
	checkSame("ReLU", dst, "x", x)
	v0 := vecLen(len(dst))
	if v0 > 0 {
		reluAVX(&dst[0], &x[0], v0, ntStores(dst))
	}
	for i := v0; i < len(dst); i++ {
		if v := x[i]; v > 0 {
			dst[i] = v
		} else {
			dst[i] = 0
		}
	}
}

// ReLUBackward sets dx = dy where x > 0 and 0 elsewhere (the gradient at x = 0 is taken as 0, as
// PyTorch does). x is the forward input; dx may alias dy.
//
// It panics if the lengths differ.
func ReLUBackward(dx, dy, x []float32) {
	checkSame("ReLUBackward", dx, "dy, x", dy, x)
	v0 := vecLen(len(dx))
	if v0 > 0 {
		reluBackwardAVX(&dx[0], &dy[0], &x[0], v0, ntStores(dx))
	}
	for i := v0; i < len(dx); i++ {
		if x[i] > 0 {
			dx[i] = dy[i]
		} else {
			dx[i] = 0
		}
	}
}

// geluC is sqrt(2/pi), the constant of the tanh approximation of GELU.
const (
	geluC = 0.7978845608028654 // math.Sqrt(2 / math.Pi)
	geluA = 0.044715
)

// GELU sets dst = gelu(x) with the tanh approximation of Hendrycks and Gimpel (2016), "Gaussian
// Error Linear Units", section 2:
//
//	gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³)))
//
// This is the form GPT-2 uses and PyTorch's nn.GELU(approximate='tanh'); it differs from the exact
// erf form (PyTorch's default) by less than 1e-3. It is computed in float32 as x / (1 + exp(-2u))
// with u the argument of tanh (see gelu32; AVX2 or AVX-512 where the CPU has it), within a few
// ulp of the float64 formula (TestFastActivationAccuracy). dst may alias x.
//
// It panics if the lengths differ.
func GELU(dst, x []float32) {
	checkSame("GELU", dst, "x", x)
	v := activation(geluKind, dst, nil, x)
	for i := v; i < len(dst); i++ {
		dst[i] = gelu32(x[i])
	}
}

// GELUBackward sets dx = dy * gelu'(x) for the tanh approximation used by GELU:
//
//	gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t²) sqrt(2/pi) (1 + 3·0.044715 x²),  t = tanh(sqrt(2/pi) (x + 0.044715 x³))
//
// x is the forward input; dx may alias dy. It is computed in float32 as geluGrad32 does.
//
// It panics if the lengths differ.
func GELUBackward(dx, dy, x []float32) {
	checkSame("GELUBackward", dx, "dy, x", dy, x)
	v := activation(geluBackwardKind, dx, dy, x)
	for i := v; i < len(dx); i++ {
		dx[i] = dy[i] * geluGrad32(x[i])
	}
}

// SiLU sets dst = x * sigmoid(x) (also called swish; the activation of SwiGLU, Shazeer 2020,
// "GLU Variants Improve Transformer"), computed in float32 as x / (1 + exp(-x)). dst may alias x.
//
// It panics if the lengths differ.
func SiLU(dst, x []float32) {
	checkSame("SiLU", dst, "x", x)
	v := activation(siluKind, dst, nil, x)
	for i := v; i < len(dst); i++ {
		dst[i] = silu32(x[i])
	}
}

// SiLUBackward sets dx = dy * silu'(x), silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x).
// x is the forward input; dx may alias dy.
//
// It panics if the lengths differ.
func SiLUBackward(dx, dy, x []float32) {
	checkSame("SiLUBackward", dx, "dy, x", dy, x)
	v := activation(siluBackwardKind, dx, dy, x)
	for i := v; i < len(dx); i++ {
		dx[i] = dy[i] * siluGrad32(x[i])
	}
}

// Softmax sets each row of y [rows, cols] to the softmax of that row of x, subtracting the row
// maximum first so that no exp overflows. y may alias x.
//
// It panics if a dimension is negative or a length does not match.
func Softmax(y, x []float32, rows, cols int) {
	checkDims("Softmax", rows, cols)
	checkLen("Softmax", "x", x, rows*cols)
	checkLen("Softmax", "y", y, rows*cols)
	if rows == 0 || cols == 0 {
		return
	}
	// An output too large to stay in the caches (ntStores) is written once, with non-temporal
	// stores, from a scratch row that holds the exponentials between the sum and the scaling:
	// writing them into y first would read every line of y from memory before overwriting it.
	var scratch []float32
	if useAVX && cols%8 == 0 && rows > 1 && ntStores(y) == 1 {
		scratch = make([]float32, cols)
	}
	mx := rowMax(x[:cols]) // each row's maximum comes with the exponentials of the row before
	for r := range rows {
		xr, yr := x[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols]
		var next []float32
		if r+1 < rows {
			next = x[(r+1)*cols : (r+2)*cols]
			if useAVX && !useAVX512 {
				// The row's passes hit L1 after the first, so the hardware prefetcher sees no
				// misses to run ahead of; fetch the next row now, while this one computes. (The
				// AVX-512 kernel reads it in its pass, expSumMaxNext.)
				prefetchAVX(&next[0], cols)
			}
		}
		out := yr
		if scratch != nil {
			out = scratch
		}
		sum, nextMax := expSumMaxNext(out, xr, mx, next)
		if scratch != nil {
			scaleAVX(&yr[0], &scratch[0], cols, float32(1/sum), 1)
		} else {
			Scale(float32(1/sum), yr)
		}
		mx = nextMax
	}
	if scratch != nil {
		sfenceAVX()
	}
}

// softmaxRow writes the softmax of the non-empty x into y (same length, may alias) and returns
// x's maximum and Σ_j exp(x_j - max), from which its log-sum-exp is max + log Σ.
func softmaxRow(y, x []float32) (mx float32, sum float64) {
	mx = rowMax(x)
	sum = expSumMax(y, x, mx)
	Scale(float32(1/sum), y)
	return mx, sum
}

// rowMax is the largest of the non-empty x (NaN only if x[0] is NaN).
func rowMax(x []float32) float32 {
	mx := x[0]
	v := vecLen(len(x))
	if v > 0 {
		mx = max(mx, maxAVX(&x[0], v))
	}
	for _, v := range x[v:] {
		if v > mx {
			mx = v
		}
	}
	return mx
}

// SoftmaxBackward sets dx = y ⊙ (dy − Σ_j dy_j y_j) row by row, the gradient of Softmax given its
// output y [rows, cols]. dx may alias dy.
//
// It panics if a dimension is negative or a length does not match.
func SoftmaxBackward(dx, dy, y []float32, rows, cols int) {
	checkDims("SoftmaxBackward", rows, cols)
	n := rows * cols
	checkLen("SoftmaxBackward", "dx", dx, n)
	checkLen("SoftmaxBackward", "dy", dy, n)
	checkLen("SoftmaxBackward", "y", y, n)
	for r := range rows {
		softmaxGradRow(dx[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], y[r*cols:(r+1)*cols])
	}
}

// softmaxGradRow sets dx = y ⊙ (dy − Σ_j dy_j y_j) for one row, the sum in float64 and each
// element's product in float64 (AVX2 on the whole vectors); dx may alias dy.
func softmaxGradRow(dx, dy, y []float32) {
	dx, dy = dx[:len(y)], dy[:len(y)]
	v := vecLen(len(y))
	var dot float64
	if v > 0 {
		dot = dot64AVX(&y[0], &dy[0], v)
	}
	for j := v; j < len(y); j++ {
		dot += float64(y[j]) * float64(dy[j])
	}
	if v > 0 {
		softmaxGradAVX(&dx[0], &dy[0], &y[0], v, dot)
	}
	for j := v; j < len(y); j++ {
		dx[j] = float32(float64(y[j]) * (float64(dy[j]) - dot))
	}
}
