package kernels

import (
	"fmt"
	"math"
	"testing"
)

// naiveMatMul is the reference triple loop for dst = alpha*op(a)*op(b) + beta*dst in float64.
func naiveMatMul(dst, a, b []float32, m, k, n int, transA, transB bool, alpha, beta float32) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				av := a[i*k+p]
				if transA {
					av = a[p*m+i]
				}
				bv := b[p*n+j]
				if transB {
					bv = b[j*k+p]
				}
				s += float64(av) * float64(bv)
			}
			out[i*n+j] = float64(alpha)*s + float64(beta)*float64(dst[i*n+j])
		}
	}
	return out
}

func TestMatMulAgainstNaive(t *testing.T) {
	rng := NewRand(1)
	shapes := []struct{ m, k, n int }{
		{1, 1, 1},
		{3, 5, 7},
		{7, 3, 5},
		{5, 7, 3},
		{2, 9, 1},
		{1, 4, 6},
		// Large enough for gonum's parallel path (at least 4 blocks of 64x64 in the output).
		{130, 17, 129},
	}
	scalars := []struct{ alpha, beta float32 }{{1, 0}, {0.5, 1}, {-2, 0.25}}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, sc := range scalars {
					name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%g/beta=%g", s.m, s.k, s.n, tA, tB, sc.alpha, sc.beta)
					a := randSlice(rng, s.m*s.k, 1)
					b := randSlice(rng, s.k*s.n, 1)
					dst := randSlice(rng, s.m*s.n, 1)
					want := naiveMatMul(dst, a, b, s.m, s.k, s.n, tA, tB, sc.alpha, sc.beta)
					MatMul(dst, a, b, s.m, s.k, s.n, tA, tB, sc.alpha, sc.beta)
					if d := maxAbsDiff(dst, want); d > 1e-4*float64(s.k+1) {
						t.Errorf("%s: max |diff| = %g", name, d)
					}
				}
			}
		}
	}
}

func TestMatMulHandValues(t *testing.T) {
	// [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50] (by hand).
	dst := []float32{100, 100, 100, 100}
	MatMul(dst, []float32{1, 2, 3, 4}, []float32{5, 6, 7, 8}, 2, 2, 2, false, false, 1, 0)
	want := []float32{19, 22, 43, 50}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("dst = %v, want %v", dst, want)
		}
	}
}

func TestMatMulEmptyInner(t *testing.T) {
	// k = 0: the product is zero, so dst = beta*dst.
	dst := []float32{1, 2, 3, 4, 5, 6}
	MatMul(dst, nil, nil, 2, 0, 3, false, false, 1, 0.5)
	for i, v := range dst {
		if v != float32(i+1)/2 {
			t.Fatalf("dst = %v, want halves of 1..6", dst)
		}
	}
	MatMul(dst, nil, nil, 2, 0, 3, true, true, 1, 0)
	for _, v := range dst {
		if v != 0 {
			t.Fatalf("dst = %v, want zeros", dst)
		}
	}
	MatMul(nil, nil, nil, 0, 3, 0, false, false, 1, 0) // nothing to do
}

func TestLinearGradients(t *testing.T) {
	const m, in, out = 3, 5, 4
	rng := NewRand(2)
	x := randSlice(rng, m*in, 1)
	w := randSlice(rng, out*in, 1)
	b := randSlice(rng, out, 1)
	r := randSlice(rng, m*out, 1) // dL/dy
	y := make([]float32, m*out)
	loss := func() float64 {
		LinearForward(y, x, w, b, m, in, out)
		return dot64(y, r)
	}
	dx := make([]float32, m*in)
	dw := make([]float32, out*in)
	db := make([]float32, out)
	// Accumulation: start the parameter gradients at 1 and subtract it afterwards.
	for i := range dw {
		dw[i] = 1
	}
	for i := range db {
		db[i] = 1
	}
	LinearBackward(dx, dw, db, r, x, w, m, in, out, true)
	for i := range dw {
		dw[i]--
	}
	for i := range db {
		db[i]--
	}
	gradCheck(t, "dx", x, dx, loss)
	gradCheck(t, "dw", w, dw, loss)
	gradCheck(t, "db", b, db, loss)

	// Without bias and without dx, overwriting dw: its old contents (NaN) are not read.
	dw2 := make([]float32, out*in)
	for i := range dw2 {
		dw2[i] = float32(math.NaN())
	}
	LinearBackward(nil, dw2, nil, r, x, w, m, in, out, false)
	for i := range dw2 {
		if !closeTo(float64(dw2[i]), float64(dw[i]), 1e-5, 1e-6) {
			t.Fatalf("dw without bias differs at %d: %g vs %g", i, dw2[i], dw[i])
		}
	}
	yNoBias := make([]float32, m*out)
	LinearForward(yNoBias, x, w, nil, m, in, out)
	LinearForward(y, x, w, b, m, in, out)
	for i := range y {
		if !closeTo(float64(y[i]-b[i%out]), float64(yNoBias[i]), 1e-5, 1e-6) {
			t.Fatalf("bias not added once at %d", i)
		}
	}
}

func TestMatMulPanics(t *testing.T) {
	a := make([]float32, 6)
	mustPanic(t, "short dst", "len(dst) = 3, want 4", func() { MatMul(make([]float32, 3), a, a, 2, 3, 2, false, false, 1, 0) })
	mustPanic(t, "short a", "len(a)", func() { MatMul(make([]float32, 4), a[:5], a, 2, 3, 2, false, false, 1, 0) })
	mustPanic(t, "short b", "len(b)", func() { MatMul(make([]float32, 4), a, a[:5], 2, 3, 2, false, false, 1, 0) })
	mustPanic(t, "negative", "negative dimension", func() { MatMul(nil, nil, nil, -1, 0, 0, false, false, 1, 0) })
	mustPanic(t, "bias", "len(b)", func() { LinearForward(make([]float32, 4), a, a, make([]float32, 3), 2, 3, 2) })
}

// gemmShape is one GEMM of a Linear layer's forward y[M,N] = x[M,K] Wᵀ, W stored [N,K].
type gemmShape struct {
	name    string
	m, k, n int
}

// benchShapes are the Linear GEMMs of the gpt-tiny preset (hidden 64, ffn 256, vocab 256,
// batch 8 x seq 32 = 256 token rows) and of the seed MLP (Linear(100,1000)-ReLU-Linear(1000,10)
// at batch 10).
var benchShapes = []gemmShape{
	{"gpt-tiny/qkv", 256, 64, 192},
	{"gpt-tiny/proj", 256, 64, 64},
	{"gpt-tiny/fc1", 256, 64, 256},
	{"gpt-tiny/fc2", 256, 256, 64},
	{"gpt-tiny/head", 256, 64, 256},
	{"seed-mlp/0", 10, 100, 1000},
	{"seed-mlp/2", 10, 1000, 10},
}

// BenchmarkMatMul runs, for every shape, the three GEMMs of a Linear layer: fwd y = x Wᵀ
// ([M,K]x[K,N]), dgrad dx = dy W ([M,N]x[N,K]) and wgrad dW += dyᵀ x ([N,M]x[M,K]); each does
// 2*M*K*N flops.
func BenchmarkMatMul(b *testing.B) {
	for _, s := range benchShapes {
		rng := NewRand(42)
		x := randSlice(rng, s.m*s.k, 1)
		w := randSlice(rng, s.n*s.k, 1)
		y := randSlice(rng, s.m*s.n, 1)
		flops := 2 * float64(s.m) * float64(s.k) * float64(s.n)
		cases := []struct {
			kind string
			run  func()
		}{
			{"fwd", func() { MatMul(y, x, w, s.m, s.k, s.n, false, true, 1, 0) }},
			{"dgrad", func() { MatMul(x, y, w, s.m, s.n, s.k, false, false, 1, 0) }},
			{"wgrad", func() { MatMul(w, y, x, s.n, s.m, s.k, true, false, 1, 1) }},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s_%dx%dx%d/%s", s.name, s.m, s.k, s.n, c.kind), func(b *testing.B) {
				n := 0
				for b.Loop() {
					c.run()
					n++
				}
				b.ReportMetric(flops*float64(n)/float64(b.Elapsed().Nanoseconds()), "GFLOP/s")
			})
		}
	}
}
