package kernels

import (
	"math"
	"math/rand/v2"
)

// NewRand returns a generator on a PCG source seeded with seed (rand.NewPCG(seed, 0)). The same
// seed gives the same sequence on every platform and Go release that keeps math/rand/v2's PCG.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0))
}

// FillNormal fills dst with independent samples of N(0, std²) drawn from rng (rng.NormFloat64).
// GPT-2 initialises its weights with std 0.02.
func FillNormal(dst []float32, rng *rand.Rand, std float32) {
	for i := range dst {
		dst[i] = float32(rng.NormFloat64() * float64(std))
	}
}

// FillUniform fills dst with independent samples of U(lo, hi) drawn from rng (rounded to
// float32, so hi itself can occur).
//
// PyTorch's default initialisation of torch.nn.Linear(in, out) draws both weight and bias from
// U(−1/sqrt(in), 1/sqrt(in)): kaiming_uniform_ with a = sqrt(5) gives the bound
// gain·sqrt(3/fan_in) with gain = sqrt(2/(1+a²)) = sqrt(1/3), that is 1/sqrt(in) (see
// torch/nn/modules/linear.py, reset_parameters). LinearBound returns it.
func FillUniform(dst []float32, rng *rand.Rand, lo, hi float32) {
	w := float64(hi) - float64(lo)
	for i := range dst {
		dst[i] = float32(float64(lo) + w*rng.Float64())
	}
}

// LinearBound returns 1/sqrt(in), the bound of PyTorch's default uniform initialisation of a
// Linear layer's weight and bias (see FillUniform).
//
// It panics if in is not positive.
func LinearBound(in int) float32 {
	if in <= 0 {
		panicf("LinearBound: in = %d, want > 0", in)
	}
	return float32(1 / math.Sqrt(float64(in)))
}
