package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"
)

// The reference is gonum's pure-Go Sgemm (gonum.org/v1/gonum/blas/gonum), what package kernels
// used before this one.
var ref gonum.Implementation

func tr(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// eps32 is float32's unit roundoff 2⁻²⁴.
const eps32 = 1.0 / (1 << 24)

// errBound is the forward error bound of a float32 dot product of length k, for both the result
// and gonum's: |fl(x·y) - x·y| <= γ_k Σ|x_i y_i| with γ_k = k·u/(1-k·u) (Higham 2002, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., eq. 3.5), plus the rounding of alpha*s + beta*c.
// Two implementations that both meet it differ by at most twice it; we allow (k+2) u on each side.
func errBound(k int, alpha, beta float32, absDot, absC float64) float64 {
	g := float64(k+2) * eps32 / (1 - float64(k+2)*eps32)
	return 2 * g * (math.Abs(float64(alpha))*absDot + math.Abs(float64(beta))*absC)
}

type shape struct{ m, n, k int }

// compare runs Sgemm and gonum's Sgemm on the same random inputs (with row strides padded by pad
// elements) and fails if an element differs by more than errBound.
func compare(t *testing.T, rng *rand.Rand, s shape, tA, tB bool, alpha, beta float32, pad int) {
	t.Helper()
	if msg := compareErr(rng, s, tA, tB, alpha, beta, pad); msg != "" {
		t.Fatal(msg)
	}
}

// compareErr is compare's check, returning the failure ("" if none), for use off the test goroutine.
func compareErr(rng *rand.Rand, s shape, tA, tB bool, alpha, beta float32, pad int) string {
	ar, ac := s.m, s.k
	if tA {
		ar, ac = s.k, s.m
	}
	br, bc := s.k, s.n
	if tB {
		br, bc = s.n, s.k
	}
	lda, ldb, ldc := max(1, ac)+pad, max(1, bc)+pad, max(1, s.n)+pad
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*2 - 1)
		}
		return x
	}
	a, b := fill(max(0, (ar-1)*lda+ac)), fill(max(0, (br-1)*ldb+bc))
	c := fill(max(0, (s.m-1)*ldc+s.n))
	want := append([]float32(nil), c...)
	got := append([]float32(nil), c...)
	ref.Sgemm(tr(tA), tr(tB), s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, want, ldc)
	Sgemm(tA, tB, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, got, ldc)
	// Σ_p |op(A)[i,p]| |op(B)[p,j]| for the bound, by gonum on the absolute values (its own rounding,
	// a relative k·u, is negligible in a bound).
	abs := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(math.Abs(float64(v)))
		}
		return y
	}
	absDot := make([]float32, len(c))
	if s.k > 0 && len(c) > 0 {
		ref.Sgemm(tr(tA), tr(tB), s.m, s.n, s.k, 1, abs(a), lda, abs(b), ldb, 0, absDot, ldc)
	}
	for i := range s.m {
		for j := range ldc {
			idx := i*ldc + j
			if idx >= len(c) {
				break
			}
			if j >= s.n {
				// Padding between rows must be left alone.
				if got[idx] != c[idx] {
					return fmt.Sprintf("%v tA=%v tB=%v: padding C[%d,%d] changed to %g", s, tA, tB, i, j, got[idx])
				}
				continue
			}
			bound := errBound(s.k, alpha, beta, float64(absDot[idx])*(1+1e-3), math.Abs(float64(c[idx])))
			if d := math.Abs(float64(got[idx]) - float64(want[idx])); !(d <= bound) {
				return fmt.Sprintf("%v tA=%v tB=%v alpha=%g beta=%g pad=%d: C[%d,%d] = %g, gonum %g, |diff| %g > bound %g",
					s, tA, tB, alpha, beta, pad, i, j, got[idx], want[idx], d, bound)
			}
		}
	}
	return ""
}

// shapes covers tiny products, every remainder of the 6×16 and 24×16 tiles, the KC, MC and NC
// block edges (and nbTall's, where several column blocks share one packed op(A)) and a product big
// enough for the parallel path.
func shapes() []shape {
	s := []shape{
		{1, 1, 1}, {1, 17, 1}, {2, 3, 4}, {5, 7, 3}, {6, 16, 1}, {6, 16, 4}, {7, 17, 5},
		{11, 31, 9}, {12, 32, 257}, {13, 33, 256}, {1, 100, 40}, {100, 1, 40}, {30, 20, 1},
		{145, 19, 3}, {150, 40, 300}, {289, 20, 7}, {5, 4097, 3},
		{7, 64, 300}, {3, 80, 5}, {8, 131, 2}, // four panels a pass (packBPanels4), and the panels after
		{24, 16, 5}, {50, 1300, 260}, {29, 33, 7},
	}
	for mRem := range mr {
		for _, nRem := range []int{0, 1, 7, 8, 9, 15} {
			s = append(s, shape{2*mr + mRem, nr + nRem, 9})
		}
	}
	return s
}

func TestSgemmAgainstGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	scalars := []struct{ alpha, beta float32 }{{1, 0}, {1, 1}, {-0.5, 2}, {2, -1}, {0.25, 0.5}}
	for _, s := range shapes() {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for i, sc := range scalars {
					compare(t, rng, s, tA, tB, sc.alpha, sc.beta, i%2*3)
				}
			}
		}
	}
}

// TestSgemmParallel checks products above ParallelMACs, which split over goroutines, with two
// thread caps, including more threads than the row blocks of the 13-row product.
func TestSgemmParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("large products")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	defer SetThreads(SetThreads(0))
	// GOMAXPROCS 4, so that up to 3 helpers find free cores whatever this machine has, and no
	// contention left from an earlier test.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	contendedUntil.Store(0)
	defer lowerParallelFrom()()
	caps := []int{2, 4}
	if cpufeat.Race {
		caps = caps[1:] // the Go kernel under the race detector is slow; one cap checks the sync
	}
	for _, th := range caps {
		SetThreads(th)
		for _, s := range []shape{{160, 130, 300}, {13, 300, 600}, {53, 1400, 270}} {
			if s.m*s.n*s.k < parallelFrom {
				t.Fatalf("shape %v too small to test the parallel path", s)
			}
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					compare(t, rng, s, tA, tB, 1.5, 0.5, 1)
				}
			}
		}
	}
}

// TestSgemmGoKernel runs the shapes on the portable kernel as well, where the assembly one is
// the default.
func TestSgemmGoKernel(t *testing.T) {
	if !useAsm {
		t.Skip("the portable kernel is already the default")
	}
	useAsm = false
	defer func() { useAsm = true }()
	compareShapes(t, rand.New(rand.NewPCG(5, 6)))
}

// compareShapes runs compare on every shape and transposition, with alpha 0.75, beta 1 and
// padded strides.
func compareShapes(t *testing.T, rng *rand.Rand) {
	t.Helper()
	for _, s := range shapes() {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				compare(t, rng, s, tA, tB, 0.75, 1, 2)
			}
		}
	}
}

// TestSgemmAVX2Kernel runs the shapes on the AVX2 micro-kernel where the AVX-512 one is the
// default (TestSgemmAgainstGonum then covers the AVX-512 kernel; on a CPU without it, the AVX2
// one).
func TestSgemmAVX2Kernel(t *testing.T) {
	if !useAVX512 {
		t.Skip("the AVX2 kernel is already the default")
	}
	useAVX512 = false
	defer func() { useAVX512 = true }()
	compareShapes(t, rand.New(rand.NewPCG(7, 8)))
}

// TestSgemmPairTiles runs the shapes on the AVX-512 kernel in pairs of 6×16 tiles (kernel6x32z),
// where 24×16 tiles (kernel24x16z) are the default.
func TestSgemmPairTiles(t *testing.T) {
	if !tallTiles() {
		t.Skip("no AVX-512 kernels here")
	}
	noTallTiles = true
	defer func() { noTallTiles = false }()
	compareShapes(t, rand.New(rand.NewPCG(11, 12)))
}

// TestSgemmNarrowTiles runs the shapes on the AVX-512 kernel one 6×16 tile a call.
func TestSgemmNarrowTiles(t *testing.T) {
	if !wideTiles() {
		t.Skip("no AVX-512 kernels here")
	}
	noTallTiles, noWideTiles = true, true
	defer func() { noTallTiles, noWideTiles = false, false }()
	compareShapes(t, rand.New(rand.NewPCG(9, 10)))
}

func TestSgemmHandValues(t *testing.T) {
	// [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50] (by hand); with alpha 2, beta 1 on C = 1: 39 45 87 101.
	c := []float32{1, 1, 1, 1}
	Sgemm(false, false, 2, 2, 2, 2, []float32{1, 2, 3, 4}, 2, []float32{5, 6, 7, 8}, 2, 1, c, 2)
	want := []float32{39, 45, 87, 101}
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("C = %v, want %v", c, want)
		}
	}
}

func TestSgemmBetaZeroIgnoresNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, s := range []shape{{2, 2, 2}, {6, 16, 3}, {7, 17, 3}} {
		c := make([]float32, s.m*s.n)
		for i := range c {
			c[i] = nan
		}
		a := make([]float32, s.m*s.k)
		b := make([]float32, s.k*s.n)
		for i := range a {
			a[i] = 1
		}
		for i := range b {
			b[i] = 1
		}
		Sgemm(false, false, s.m, s.n, s.k, 1, a, s.k, b, s.n, 0, c, s.n)
		for i, v := range c {
			if v != float32(s.k) {
				t.Fatalf("%v: C[%d] = %g, want %d", s, i, v, s.k)
			}
		}
	}
}

func TestSgemmZeroAlphaOrK(t *testing.T) {
	// k = 0 or alpha = 0: C = beta*C and A, B are not read (here they are empty or NaN).
	c := []float32{1, 2, 3, 4, 5, 6}
	Sgemm(false, false, 2, 3, 0, 1, nil, 1, nil, 3, 0.5, c, 3)
	for i, v := range c {
		if v != float32(i+1)/2 {
			t.Fatalf("k=0: C = %v", c)
		}
	}
	nan := float32(math.NaN())
	Sgemm(false, false, 2, 3, 1, 0, []float32{nan, nan}, 1, []float32{nan, nan, nan}, 3, 0, c, 3)
	for _, v := range c {
		if v != 0 {
			t.Fatalf("alpha=0, beta=0: C = %v", c)
		}
	}
}

func TestSgemmPanics(t *testing.T) {
	cases := []struct {
		name, want string
		f          func()
	}{
		{"negative", "negative dimension", func() { Sgemm(false, false, -1, 1, 1, 1, nil, 1, nil, 1, 0, nil, 1) }},
		{"lda", "ldA = 1 is less than its 2 columns", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"short B", "len(B) = 3", func() {
			Sgemm(false, true, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 3), 2, 0, make([]float32, 4), 2)
		}},
		{"short C", "len(C) = 3", func() {
			Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) || !strings.HasPrefix(fmt.Sprint(r), "gemm: ") {
					t.Errorf("%s: panic %v, want one containing %q", tc.name, r, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// TestImplementationUse checks Implementation through gonum's blas.Float32Level3 interface (what
// blas32.Use installs): the result is bit-identical to calling Sgemm directly.
func TestImplementationUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const m, n, k = 13, 18, 21
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	got, want := make([]float32, m*n), make([]float32, m*n)
	var impl blas.Float32Level3 = Implementation{}
	impl.Sgemm(blas.Trans, blas.NoTrans, m, n, k, 1, a, m, b, n, 0, got, n)
	Sgemm(true, false, m, n, k, 1, a, m, b, n, 0, want, n)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("C[%d] = %g through the interface, %g direct", i, got[i], want[i])
		}
	}
}

// TestSgemmConcurrent runs several large products at once from different goroutines, as ranks do:
// helpers then compete for cores, stop when busy exceeds GOMAXPROCS, and every result must still
// match gonum's. Under -race (Go kernel) it also checks the goroutines' synchronisation.
func TestSgemmConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("large products")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer lowerParallelFrom()()
	if cpufeat.Race && useAsm {
		// The detector cannot see the assembly kernel's writes of C; run the Go kernel.
		useAsm = false
		defer func() { useAsm = true }()
	}
	const callers = 3
	s := shape{150, 140, 120}
	if s.m*s.n*s.k < parallelFrom {
		t.Fatalf("shape %v too small to test the parallel path", s)
	}
	var wg sync.WaitGroup
	errs := make([]string, callers)
	for g := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(9, uint64(g)))
			for range 3 {
				if msg := compareErr(rng, s, g%2 == 0, g > 0, 1, 0.5, g); msg != "" {
					errs[g] = msg
					return
				}
			}
		})
	}
	wg.Wait()
	for g, e := range errs {
		if e != "" {
			t.Errorf("caller %d: %s", g, e)
		}
	}
	if b := busy.Load(); b != 0 {
		t.Errorf("busy = %d after all products returned, want 0", b)
	}
}

// lowerParallelFrom lets products from 2^21 multiply-adds split, so that the parallel path is
// tested on shapes gonum's reference multiplies quickly; it returns the function that restores
// ParallelMACs.
func lowerParallelFrom() func() {
	parallelFrom = 1 << 21
	return func() { parallelFrom = ParallelMACs }
}

// TestSgemmStagedC checks products whose C stride is a multiple of 1 KiB floats, which run on a
// copy of C at a padded stride (stageC), against gonum: C goes back whole with beta = 0, and
// with beta != 0 (staged only under stageAccumulate, which BenchmarkStageCAccumulate sets) C's
// old values come in too, over several KC passes, on one thread and split.
func TestSgemmStagedC(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	defer stagingOn()()
	defer lowerParallelFrom()()
	defer SetThreads(SetThreads(0))
	defer func() { stageAccumulate = false }()
	for _, acc := range []bool{false, true} {
		stageAccumulate = acc
		for _, th := range []int{1, 2} {
			SetThreads(th)
			for _, s := range []shape{{20, 1024, 300}, {7, 2048, 170}} {
				for _, beta := range []float32{0, 2} {
					p := problem{m: s.m, n: s.n, k: s.k, ldc: s.n, beta: beta, c: make([]float32, s.m*s.n)}
					buf := stageC(&p)
					if staged := beta == 0 || acc; (buf != nil) != staged {
						t.Fatalf("shape %v, beta %g, stageAccumulate %v: staged %v, want %v", s, beta, acc, buf != nil, staged)
					}
					if buf != nil {
						putBuf(buf)
					}
				}
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						compare(t, rng, s, tA, tB, 1, 0, 0)
						compare(t, rng, s, tA, tB, -0.5, 2, 0)
					}
				}
			}
		}
	}
}

// TestRunPhases checks runPhases' ordering on two goroutines: every unit of a phase runs once, and
// only after every unit of the phase before has finished (each unit reads what all units of the
// previous phase wrote, which -race also checks).
func TestRunPhases(t *testing.T) {
	defer SetThreads(SetThreads(0))
	const nPhases, units = 50, 7
	vals := make([][]int, nPhases)
	for i := range vals {
		vals[i] = make([]int, units)
	}
	phases := make([]phase, nPhases)
	var runs [nPhases][units]atomic.Int32
	var byHelper atomic.Int32
	for i := range phases {
		phases[i].units = units
		phases[i].run = func(u, w int) {
			runs[i][u].Add(1)
			if w > 0 {
				byHelper.Add(1)
			}
			for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
				// long enough for the helper to take units while the caller runs its own
			}
			sum := 1
			if i > 0 {
				for _, v := range vals[i-1] {
					if v == 0 {
						t.Errorf("phase %d unit %d ran before phase %d finished", i, u, i-1)
					}
					sum += v
				}
			}
			vals[i][u] = sum % 1000003
		}
	}
	contendedUntil.Store(0) // a concurrent test may have kept helpers off
	runPhases(2, phases)
	for i := range runs {
		for u := range runs[i] {
			if n := runs[i][u].Load(); n != 1 {
				t.Fatalf("phase %d unit %d ran %d times, want once", i, u, n)
			}
		}
	}
	if runtime.GOMAXPROCS(0) > 1 && byHelper.Load() == 0 {
		t.Error("the helper ran no unit: the test checked one goroutine only")
	}
}
