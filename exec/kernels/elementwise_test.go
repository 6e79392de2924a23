package kernels

import (
	"math"
	"testing"
)

func TestElementwiseHandValues(t *testing.T) {
	a := []float32{1, -2, 3}
	b := []float32{4, 5, -6}
	dst := make([]float32, 3)
	check := func(name string, got []float32, want ...float32) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s = %v, want %v", name, got, want)
				return
			}
		}
	}
	Add(dst, a, b)
	check("Add", dst, 5, 3, -3)
	AddInPlace(dst, a)
	check("AddInPlace", dst, 6, 1, 0)
	Scale(2, dst)
	check("Scale", dst, 12, 2, 0)
	Axpy(-1, a, dst)
	check("Axpy", dst, 11, 4, -3)
	Mul(dst, a, b)
	check("Mul", dst, 4, -10, -18)
	ReLU(dst, a)
	check("ReLU", dst, 1, 0, 3)
	ReLUBackward(dst, b, []float32{1, 0, -1}) // gradient 0 at x = 0, as PyTorch
	check("ReLUBackward", dst, 4, 0, 0)
	Softmax(dst, []float32{0, 0, float32(math.Log(2))}, 1, 3) // e^0, e^0, 2 over 4
	check("Softmax", dst, 0.25, 0.25, 0.5)
}

func TestGELUAndSiLUValues(t *testing.T) {
	y := make([]float32, 3)
	GELU(y, []float32{1, 0, -1})
	// 0.5·(1 + tanh(sqrt(2/π)·1.044715)) = 0.84119199 (tanh form; PyTorch gelu(1,
	// approximate='tanh') prints 0.8412); the exact erf form gives 0.84134475.
	if !closeTo(float64(y[0]), 0.8411919906082768, 0, 1e-6) || y[1] != 0 || !closeTo(float64(y[2]), 0.8411919906082768-1, 0, 1e-6) {
		t.Errorf("GELU(1, 0, -1) = %v, want 0.841192, 0, -0.158808", y)
	}
	SiLU(y, []float32{1, 0, -1})
	// 1/(1+e^-1) = 0.73105858; silu(-1) = -1/(1+e) = silu(1) - 1.
	if !closeTo(float64(y[0]), 0.7310585786300049, 0, 1e-6) || y[1] != 0 || !closeTo(float64(y[2]), 0.7310585786300049-1, 0, 1e-6) {
		t.Errorf("SiLU(1, 0, -1) = %v, want 0.731059, 0, -0.268941", y)
	}
}

// unaryGradCheck checks backward(dx, dy, x) of forward(y, x) by finite differences.
func unaryGradCheck(t *testing.T, name string, x []float32, forward func(y, x []float32), backward func(dx, dy, x []float32)) {
	t.Helper()
	rng := NewRand(3)
	r := randSlice(rng, len(x), 1)
	y := make([]float32, len(x))
	dx := make([]float32, len(x))
	backward(dx, r, x)
	gradCheck(t, name, x, dx, func() float64 {
		forward(y, x)
		return dot64(y, r)
	})
	// In place: dx aliases dy.
	in := append([]float32(nil), r...)
	backward(in, in, x)
	for i := range in {
		if in[i] != dx[i] {
			t.Fatalf("%s: in-place backward differs at %d", name, i)
		}
	}
}

func TestActivationGradients(t *testing.T) {
	rng := NewRand(4)
	x := randSlice(rng, 15, 2)
	// Keep ReLU inputs away from its kink at 0, where the finite difference is meaningless.
	xr := append([]float32(nil), x...)
	for i, v := range xr {
		if math.Abs(float64(v)) < 0.05 {
			xr[i] = 0.5
		}
	}
	unaryGradCheck(t, "ReLU", xr, ReLU, ReLUBackward)
	unaryGradCheck(t, "GELU", append([]float32(nil), x...), GELU, GELUBackward)
	unaryGradCheck(t, "SiLU", append([]float32(nil), x...), SiLU, SiLUBackward)
}

func TestMulGradients(t *testing.T) {
	rng := NewRand(5)
	a := randSlice(rng, 15, 1)
	b := randSlice(rng, 15, 1)
	r := randSlice(rng, 15, 1)
	y := make([]float32, 15)
	da := make([]float32, 15)
	db := make([]float32, 15)
	MulBackward(da, db, r, a, b)
	loss := func() float64 { Mul(y, a, b); return dot64(y, r) }
	gradCheck(t, "da", a, da, loss)
	gradCheck(t, "db", b, db, loss)
}

func TestSoftmaxGradientsAndStability(t *testing.T) {
	const rows, cols = 3, 5
	rng := NewRand(6)
	x := randSlice(rng, rows*cols, 2)
	r := randSlice(rng, rows*cols, 1)
	y := make([]float32, rows*cols)
	Softmax(y, x, rows, cols)
	dx := make([]float32, rows*cols)
	SoftmaxBackward(dx, r, y, rows, cols)
	gradCheck(t, "Softmax", x, dx, func() float64 {
		Softmax(y, x, rows, cols)
		return dot64(y, r)
	})

	// Shifting a row by 1000 changes nothing (the maximum is subtracted before exp).
	big := make([]float32, len(x))
	for i := range x {
		big[i] = x[i] + 1000
	}
	yb := make([]float32, len(x))
	Softmax(y, x, rows, cols)
	Softmax(yb, big, rows, cols)
	for i := range y {
		if math.IsNaN(float64(yb[i])) || !closeTo(float64(yb[i]), float64(y[i]), 1e-3, 1e-4) {
			t.Fatalf("softmax of shifted row: %v vs %v", yb, y)
		}
	}
}

func TestLayerNorm(t *testing.T) {
	const rows, cols = 3, 5
	rng := NewRand(7)
	x := randSlice(rng, rows*cols, 2)
	w := randSlice(rng, cols, 1)
	b := randSlice(rng, cols, 1)
	r := randSlice(rng, rows*cols, 1)
	y := make([]float32, rows*cols)
	mean := make([]float32, rows)
	rstd := make([]float32, rows)

	// Hand value: x = (1, 2, 3), w = 1, b = 0: mean 2, var 2/3, y = (x-2)/sqrt(2/3 + eps).
	{
		y3, m3, s3 := make([]float32, 3), make([]float32, 1), make([]float32, 1)
		LayerNorm(y3, m3, s3, []float32{1, 2, 3}, []float32{1, 1, 1}, nil, 1, 3, DefaultEps)
		want := 1 / math.Sqrt(2.0/3+1e-5)
		if m3[0] != 2 || !closeTo(float64(s3[0]), want, 1e-6, 0) || !closeTo(float64(y3[2]), want, 1e-6, 0) || y3[1] != 0 {
			t.Errorf("LayerNorm(1,2,3) = %v mean %v rstd %v, want rstd = y[2] = %g", y3, m3, s3, want)
		}
	}

	loss := func() float64 {
		LayerNorm(y, mean, rstd, x, w, b, rows, cols, DefaultEps)
		return dot64(y, r)
	}
	loss()
	dx := make([]float32, rows*cols)
	dw := make([]float32, cols)
	db := make([]float32, cols)
	LayerNormBackward(dx, dw, db, r, x, w, mean, rstd, rows, cols)
	gradCheck(t, "LayerNorm dx", x, dx, loss)
	gradCheck(t, "LayerNorm dw", w, dw, loss)
	gradCheck(t, "LayerNorm db", b, db, loss)

	// dw and db accumulate: a second backward doubles them.
	dw2 := append([]float32(nil), dw...)
	db2 := append([]float32(nil), db...)
	LayerNormBackward(dx, dw2, db2, r, x, w, mean, rstd, rows, cols)
	for j := range dw {
		if !closeTo(float64(dw2[j]), 2*float64(dw[j]), 1e-6, 1e-7) || !closeTo(float64(db2[j]), 2*float64(db[j]), 1e-6, 1e-7) {
			t.Fatalf("LayerNormBackward does not accumulate: dw %v -> %v", dw, dw2)
		}
	}
}

func TestRMSNorm(t *testing.T) {
	const rows, cols = 3, 5
	rng := NewRand(8)
	x := randSlice(rng, rows*cols, 2)
	w := randSlice(rng, cols, 1)
	r := randSlice(rng, rows*cols, 1)
	y := make([]float32, rows*cols)
	rstd := make([]float32, rows)

	// Hand value: x = (3, 4), w = 1: mean square 12.5, y = x/sqrt(12.5 + eps).
	{
		y2, s2 := make([]float32, 2), make([]float32, 1)
		RMSNorm(y2, s2, []float32{3, 4}, []float32{1, 1}, 1, 2, DefaultEps)
		want := 1 / math.Sqrt(12.5+1e-5)
		if !closeTo(float64(s2[0]), want, 1e-6, 0) || !closeTo(float64(y2[1]), 4*want, 1e-6, 0) {
			t.Errorf("RMSNorm(3,4) = %v rstd %v, want rstd %g", y2, s2, want)
		}
	}

	loss := func() float64 {
		RMSNorm(y, rstd, x, w, rows, cols, DefaultEps)
		return dot64(y, r)
	}
	loss()
	dx := make([]float32, rows*cols)
	dw := make([]float32, cols)
	RMSNormBackward(dx, dw, r, x, w, rstd, rows, cols)
	gradCheck(t, "RMSNorm dx", x, dx, loss)
	gradCheck(t, "RMSNorm dw", w, dw, loss)
}

func TestElementwisePanics(t *testing.T) {
	three, two := make([]float32, 3), make([]float32, 2)
	mustPanic(t, "Add", "lengths differ", func() { Add(three, three, two) })
	mustPanic(t, "GELU", "lengths differ", func() { GELU(three, two) })
	mustPanic(t, "Softmax", "len(y)", func() { Softmax(two, three, 1, 3) })
	mustPanic(t, "LayerNorm", "len(rstd)", func() { LayerNorm(three, two[:1], two, three, three, nil, 1, 3, DefaultEps) })
	mustPanic(t, "RMSNormBackward", "len(dw)", func() { RMSNormBackward(three, two, three, three, three, two[:1], 1, 3) })
}

// TestSoftmaxEmptyRows checks Softmax on rows of no columns, where there is no next row to
// prefetch.
func TestSoftmaxEmptyRows(t *testing.T) {
	Softmax(nil, nil, 3, 0)
	Softmax(nil, nil, 0, 5)
}

// TestSoftmaxRowsMatchOneRowAtATime checks that Softmax over many rows, which takes each row's
// maximum in the pass over the row before (expSumMaxNext), gives the bits of Softmax one row at a
// time, in place too, on row lengths that cover the AVX-512 passes, the AVX2 vectors and the scalar
// tail, with each row's maximum anywhere in it and NaN, -Inf and -1e30 among the values. (It
// catches a kernel that drops either vector's maximum; a NaN in a row makes that row NaN whatever
// its maximum.)
func TestSoftmaxRowsMatchOneRowAtATime(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, cols := range []int{1, 8, 31, 32, 33, 64, 100, 1000} {
			const rows = 6
			rng := NewRand(uint64(cols))
			x := make([]float32, rows*cols)
			FillUniform(x, rng, -20, 20)
			for r := range rows {
				x[r*cols+int(rng.Uint64()%uint64(cols))] = 30 + float32(r) // the row's maximum
			}
			if cols > 2 {
				x[cols+1] = float32(math.NaN()) // its row is NaN, the rows after it are not
				x[2*cols+cols/2] = float32(math.Inf(-1))
				x[3*cols+cols-1] = -1e30
			}
			want := make([]float32, len(x))
			for r := range rows {
				Softmax(want[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], 1, cols)
			}
			got := make([]float32, len(x))
			Softmax(got, x, rows, cols)
			Softmax(x, x, rows, cols)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("cols=%d element %d: %g (in place %g), one row at a time %g", cols, i, got[i], x[i], want[i])
				}
			}
		}
	})
}

// TestSoftmaxBackwardVectorsMatchScalar checks SoftmaxBackward's AVX2 row loop (softmaxGradRow)
// against the scalar code alone, dx aliasing dy too, on lengths that cover the 8-float vectors and
// the scalar tail: only the row sum's order differs, so the results agree far below float32's
// rounding.
func TestSoftmaxBackwardVectorsMatchScalar(t *testing.T) {
	if !useAVX {
		t.Skip("without the AVX2 kernels there is only the scalar path (portable code, or -race)")
	}
	for _, cols := range []int{1, 7, 8, 9, 16, 33, 100} {
		const rows = 3
		rng := NewRand(uint64(cols))
		x, dy := make([]float32, rows*cols), make([]float32, rows*cols)
		FillUniform(x, rng, -3, 3)
		FillUniform(dy, rng, -1, 1)
		y := make([]float32, rows*cols)
		Softmax(y, x, rows, cols)
		for _, alias := range []bool{false, true} {
			run := func(avx bool) []float32 {
				useAVX = avx
				defer func() { useAVX = true }()
				dx := make([]float32, rows*cols)
				g := dy
				if alias {
					copy(dx, dy)
					g = dx
				}
				SoftmaxBackward(dx, g, y, rows, cols)
				return dx
			}
			want, got := run(false), run(true)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*(1e-3+math.Abs(float64(want[i]))) {
					t.Fatalf("cols=%d alias=%v: dx[%d] = %g with AVX2, %g scalar", cols, alias, i, got[i], want[i])
				}
			}
		}
	}
}
