package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randSlice returns n samples of U(-scale, scale) from rng.
func randSlice(rng *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	FillUniform(s, rng, -scale, scale)
	return s
}

// dot64 is Σ a_i b_i accumulated in float64: the scalar "loss" L = Σ y·r whose gradient with
// respect to y is r, used by the finite-difference checks.
func dot64(a, b []float32) float64 {
	if len(a) != len(b) {
		panic("dot64: lengths differ")
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// closeTo reports |got - want| <= atol + rtol*max(|got|, |want|).
func closeTo(got, want, rtol, atol float64) bool {
	return math.Abs(got-want) <= atol+rtol*math.Max(math.Abs(got), math.Abs(want))
}

// Finite-difference settings for float32 kernels. The loss is O(1) and its float32 rounding noise
// is about 1e-6, so a step of 1e-2 keeps the noise of the quotient near 1e-4 while the truncation
// error of the central difference, O(eps² times the third derivative), stays near 1e-4 for the smooth kernels here.
const (
	fdEps  = 1e-2
	fdRtol = 1e-2
	fdAtol = 1e-3
)

// gradCheck compares the analytic gradient grad of loss with respect to x against central
// differences (L(x+eps) − L(x−eps)) / (2 eps), perturbing x in place one element at a time.
func gradCheck(t *testing.T, name string, x, grad []float32, loss func() float64) {
	t.Helper()
	if len(x) != len(grad) {
		t.Fatalf("%s: len(x) = %d, len(grad) = %d", name, len(x), len(grad))
	}
	bad := 0
	for i := range x {
		orig := x[i]
		x[i] = orig + fdEps
		lp := loss()
		x[i] = orig - fdEps
		lm := loss()
		x[i] = orig
		h := float64(orig+fdEps) - float64(orig-fdEps) // the step float32 really took
		num := (lp - lm) / h
		if !closeTo(float64(grad[i]), num, fdRtol, fdAtol) {
			if bad < 5 {
				t.Errorf("%s[%d]: analytic %.6g, finite difference %.6g", name, i, grad[i], num)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d gradient entries off", name, bad, len(x))
	}
}

// mustPanic checks that f panics with a message starting "kernels: " and containing substr.
func mustPanic(t *testing.T, name, substr string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", name)
			return
		}
		msg, ok := r.(string)
		if !ok || !strings.HasPrefix(msg, "kernels: ") || !strings.Contains(msg, substr) {
			t.Errorf("%s: panic %v, want a string starting \"kernels: \" containing %q", name, r, substr)
		}
	}()
	f()
}

// maxAbsDiff is the largest |a_i − b_i|.
func maxAbsDiff(a []float32, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-b[i]))
	}
	return m
}
