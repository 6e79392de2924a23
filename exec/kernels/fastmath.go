package kernels

import (
	"math"

	"github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"
)

// useAVX selects the AVX2 elementwise kernels (amd64 with AVX2 and FMA, not under -race: see
// cpufeat.Race); tests clear it to run the portable float32 code on every element.
var useAVX = cpufeat.AVX2FMA && !cpufeat.Race

// useAVX512 selects, where the CPU also has AVX-512F, the AVX-512 versions of the exponential
// kernels (GELU, SiLU, their gradients and softmax's exponentials: elementwise_amd64.s), which give
// the same bits as the AVX2 ones (softmax's sum is added in another order); tests clear it to run
// those.
var useAVX512 = useAVX && cpufeat.AVX512F

// vec512Len is how many of the v elements the AVX2 kernels would take (vecLen) the AVX-512 ones
// take instead: the largest multiple of 32, or 0 without them.
func vec512Len(v int) int {
	if useAVX512 {
		return v &^ 31
	}
	return 0
}

// vecLen is how many of n elements the AVX2 kernels take: the largest multiple of 8, or 0 without
// them.
func vecLen(n int) int {
	if useAVX {
		return n &^ 7
	}
	return 0
}

// Constants of exp32, the Cephes expf (Moshier 1989, "Methods and Programs for Mathematical
// Functions", cephes/single/expf.c), shared with elementwise_amd64.s (which holds the same bits).
const (
	expLo = -87.33654475 // ln 2⁻¹²⁶: below it 2^n would not be a normal float
	expHi = 88.0         // below ln(MaxFloat32) ≈ 88.72 with 2^n, n = round(x log2 e) <= 127
	log2e = 1.44269504088896341
	ln2Hi = 0.693359375 // ln 2 = ln2Hi + ln2Lo; n*ln2Hi is exact for |n| <= 2¹⁵
	ln2Lo = -2.12194440e-4
	expP0 = 1.9875691500e-4
	expP1 = 1.3981999507e-3
	expP2 = 8.3334519073e-3
	expP3 = 4.1665795894e-2
	expP4 = 1.6666665459e-1
	expP5 = 5.0000001201e-1
)

// exp32 is exp(x) in float32 with the Cephes expf polynomial: x = n ln 2 + r, |r| <= ln2/2,
// exp(r) = 1 + r + r² P(r), times 2^n built in the exponent bits. Its relative error is within
// 2 ulp (TestExp32Accuracy measures it) for x in [ln 2⁻¹²⁶, 88]; the argument is clamped to that
// range, so exp32 gives 2⁻¹²⁶ ≈ 1.2e-38 below it (where exp is a subnormal or 0, an absolute error
// below 1.2e-38) and exp(88) ≈ 1.65e38 above it; NaN gives NaN. The AVX2 kernel of expSum computes
// the same steps eight at a time (elementwise_amd64.s: EXPARG, EXPPOLY), rounding to n with a
// shifter and evaluating the polynomial in Estrin's form, with fused multiply-adds, so the last bit
// may differ.
func exp32(x float32) float32 {
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2Hi
	r -= n * ln2Lo
	p := ((((expP0*r+expP1)*r+expP2)*r+expP3)*r+expP4)*r + expP5
	p = (p*r+1)*r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// exp2 of the activations: GELU and SiLU compute their exponential as 2^y with y = z log2e, the
// constant log2e folded into the constants that make z from x, so that the range reduction
// y = n + r' (n = round(y), r' = y - n exact) needs no multiply by ln 2. Rounding y in float32
// costs |y| ln 2 ulp of the result, what rounding z costs already (exp's condition number), which
// TestFastActivationAccuracy bounds. 2^r' = exp(r' ln 2) is the Cephes polynomial of exp32 with its
// coefficients rescaled (a_k = p_k ln^(7-k) 2), so it is as accurate on the same interval
// |r' ln 2| <= ln2/2. elementwise_amd64.s holds the same constants' float32 bits.
const (
	ln2    = 0.693147180559945309417232121458176568
	exp2Lo = -126.0        // 2^-126, the smallest normal float32
	exp2Hi = expHi * log2e // exp32's upper clamp, exp(88)
	exp2A5 = expP5 * ln2 * ln2
	exp2A4 = exp2A5 / expP5 * expP4 * ln2
	exp2A3 = exp2A4 / expP4 * expP3 * ln2
	exp2A2 = exp2A3 / expP3 * expP2 * ln2
	exp2A1 = exp2A2 / expP2 * expP1 * ln2
	exp2A0 = exp2A1 / expP1 * expP0 * ln2
	// geluK0 + geluK1 x² times x is -2u log2e, u = C(x + a x³) the argument of GELU's tanh.
	geluK0 = -2 * geluC * log2e
	geluK1 = -2 * geluC * geluA * log2e
)

// exp2y32 is 2^y in float32 for y clamped to [exp2Lo, exp2Hi] (NaN gives NaN), with the steps of
// the AVX2 kernels (EXP2ARG, EXP2POLY: Estrin's form of the polynomial), which use fused
// multiply-adds, so the last bit may differ.
func exp2y32(y float32) float32 {
	y = min(max(y, exp2Lo), exp2Hi)
	n := float32(math.RoundToEven(float64(y)))
	r := y - n
	r2 := r * r
	p := (exp2A5 + exp2A4*r) + r2*((exp2A3+exp2A2*r)+r2*(exp2A1+exp2A0*r))
	p = (r*ln2 + 1) + r2*p
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// gelu32 is the tanh-approximation GELU of GELU, computed as x·σ(2u): since
// 1 + tanh(u) = 2/(1 + exp(-2u)), 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), which has no
// cancellation where tanh(u) is near -1.
func gelu32(x float32) float32 {
	return x / (1 + exp2y32(geluY(x)))
}

// geluY is -2u log2e = x (geluK0 + geluK1 x²), so that exp(-2u) = 2^geluY(x).
func geluY(x float32) float32 {
	return x * (geluK0 + geluK1*(x*x))
}

// geluGrad32 is gelu'(x) with s = σ(2u) and 1-s = e s for e = exp(-2u):
// gelu'(x) = s + x s (1-s) (2C + 6C·a x²), the formula of GELUBackward rewritten with
// 1 + t = 2s and 1 - t² = 4 s (1-s).
func geluGrad32(x float32) float32 {
	e := exp2y32(geluY(x))
	s := 1 / (1 + e)
	return s + x*(2*geluC+6*geluC*geluA*(x*x))*(s*(e*s))
}

// silu32 is x σ(x) = x / (1 + exp(-x)), exp(-x) = 2^(-x log2e).
func silu32(x float32) float32 {
	return x / (1 + exp2y32(-log2e*x))
}

// siluGrad32 is silu'(x) = s (1 + x (1-s)), with 1-s = e s for e = exp(-x).
func siluGrad32(x float32) float32 {
	e := exp2y32(-log2e * x)
	s := 1 / (1 + e)
	return s * (1 + x*(e*s))
}

// expSum sets dst = exp32(x - shift) and returns Σ dst accumulated in float64.
func expSum(dst, x []float32, shift float32) float64 {
	var sum float64
	v := vecLen(len(dst))
	if v > 0 {
		sum = expSumAVX(&dst[0], &x[0], v, shift, false)
	}
	return expSumTail(dst, x, shift, v, sum)
}

// expSumTail is expSum on the elements from v on, added to sum.
func expSumTail(dst, x []float32, shift float32, v int, sum float64) float64 {
	for i := v; i < len(dst); i++ {
		e := exp32(x[i] - shift)
		dst[i] = e
		sum += float64(e)
	}
	return sum
}

// expSumMax is expSum for a shift at least every x (softmax's row maximum), so that every value is
// at most 1: the vector kernels then sum each block of 32 values a lane in float32 lanes before
// adding them in float64, within 2e-6 of the float64 sum relative to it. They clamp the argument
// from below only: an x more than about 88 above the shift would overflow 2^n (callers pass a
// row maximum, or a log-sum-exp, which is at least it).
func expSumMax(dst, x []float32, mx float32) float64 {
	sum, _ := expSumMaxNext(dst, x, mx, nil)
	return sum
}

// expSumMaxNext is expSumMax(dst, x, mx) and, for a next as long as x (nil: none), rowMax(next)
// (up to the sign of a zero maximum, which changes no exponential). Where the CPU has AVX-512, one
// pass computes both on the largest multiple of 32 elements (expSumMaxNextAVX512, two zmm vectors
// at a time); elsewhere the maximum follows the exponentials, so that a prefetch of next issued
// before has their time to land. The elements after the AVX-512 ones go two ymm vectors at a time
// (expSumBoundedAVX), then the odd one by the general kernel, then the scalar tail. Softmax hands
// it the next row: on the Zen 4 of 2026-12-04, with the rows streaming from memory, that took the
// 64 MiB softmax from 0.46-0.48 of copy's bandwidth to 0.57-0.62 (best of 15,
// BenchmarkElementwise's sizes), the next row's loads overlapping this row's arithmetic instead of
// stalling a pass of their own.
func expSumMaxNext(dst, x []float32, mx float32, next []float32) (sum float64, nextMax float32) {
	v := vecLen(len(dst))
	z := vec512Len(v)
	w := z
	if z > 0 {
		// Without a next row, the maximum of x, computed and dropped: it costs no time, the loop
		// being bound by its multiplies and FMAs (0.21 ns an element either way on the Zen 4).
		nx := x
		if next != nil {
			nx = next
		}
		sum = expSumMaxNextAVX512(&dst[0], &x[0], z, mx, &nx[0], &nextMax)
	}
	if u := w + (v-w)&^15; u > w {
		sum += expSumBoundedAVX(&dst[w], &x[w], u-w, mx)
		w = u
	}
	if w < v {
		sum += expSumAVX(&dst[w], &x[w], v-w, mx, true)
	}
	sum = expSumTail(dst, x, mx, v, sum)
	switch {
	case next == nil:
	case z > 0: // the kernel's lanes started at next[0]; the rest as rowMax's scalar loop
		for _, e := range next[z:] {
			if e > nextMax {
				nextMax = e
			}
		}
	default:
		nextMax = rowMax(next)
	}
	return sum, nextMax
}
