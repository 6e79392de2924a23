package kernels

import (
	"math"

	"github.com/tpsim/tpsim/exec/kernels/internal/cpufeat"
)

// useAVX selects the AVX2 elementwise kernels (amd64 with AVX2 and FMA, not under -race: see
// cpufeat.Race); tests clear it to run the portable float32 code on every element.
var useAVX = cpufeat.AVX2FMA && !cpufeat.Race

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
// below 1.2e-38) and exp(88) ≈ 1.65e38 above it; NaN gives NaN. The AVX2 kernels compute the same
// steps eight at a time (with fused multiply-adds, so the last bit may differ).
func exp32(x float32) float32 {
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2Hi
	r -= n * ln2Lo
	p := ((((expP0*r+expP1)*r+expP2)*r+expP3)*r+expP4)*r + expP5
	p = (p*r+1)*r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// gelu32 is the tanh-approximation GELU of GELU, computed as x·σ(2u): since
// 1 + tanh(u) = 2/(1 + exp(-2u)), 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), which has no
// cancellation where tanh(u) is near -1.
func gelu32(x float32) float32 {
	return x / (1 + exp32(geluNeg2U(x)))
}

// geluNeg2U is -2u = -2 sqrt(2/pi) (x + 0.044715 x³).
func geluNeg2U(x float32) float32 {
	return x * (-2*geluC - 2*geluC*geluA*(x*x))
}

// geluGrad32 is gelu'(x) with s = σ(2u) and 1-s = e s for e = exp(-2u):
// gelu'(x) = s + x s (1-s) (2C + 6C·a x²), the formula of GELUBackward rewritten with
// 1 + t = 2s and 1 - t² = 4 s (1-s).
func geluGrad32(x float32) float32 {
	e := exp32(geluNeg2U(x))
	s := 1 / (1 + e)
	return s + x*(2*geluC+6*geluC*geluA*(x*x))*(s*(e*s))
}

// silu32 is x σ(x) = x / (1 + exp(-x)).
func silu32(x float32) float32 {
	return x / (1 + exp32(-x))
}

// siluGrad32 is silu'(x) = s (1 + x (1-s)), with 1-s = e s for e = exp(-x).
func siluGrad32(x float32) float32 {
	e := exp32(-x)
	s := 1 / (1 + e)
	return s * (1 + x*(e*s))
}

// expSum sets dst = exp32(x - shift) and returns Σ dst accumulated in float64.
func expSum(dst, x []float32, shift float32) float64 {
	var sum float64
	v := vecLen(len(dst))
	if v > 0 {
		sum = expSumAVX(&dst[0], &x[0], v, shift)
	}
	for i := v; i < len(dst); i++ {
		e := exp32(x[i] - shift)
		dst[i] = e
		sum += float64(e)
	}
	return sum
}
