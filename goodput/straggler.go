package goodput

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxJitterCV is the largest coefficient of variation accepted for the per-rank step time: the
// jitter is normal, and above 0.25 a rank's step would be negative with a probability no longer
// negligible (P(Z < -4) = 3.2e-5 per rank and step).
const MaxJitterCV = 0.25

// ExpectedMaxNormal is E[max of n independent standard normals], computed by numerical
// integration of E[M] = ∫ x n φ(x) Φ(x)^(n-1) dx (composite Simpson on [-9, 9], 6,000
// intervals; the integrand is below 1e-17 outside for n <= 10^7). It is exact for n = 1 (0) and
// n = 2 (1/√π); the asymptotic √(2 ln n) overstates it (4.41 against 3.83 at n = 16,384).
func ExpectedMaxNormal(n int) float64 {
	if n <= 1 {
		return 0
	}
	const a, b, m = -9.0, 9.0, 6000
	h := (b - a) / m
	f := func(x float64) float64 {
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		cdf := 0.5 * math.Erfc(-x/math.Sqrt2)
		if cdf == 0 {
			return 0
		}
		return x * float64(n) * phi * math.Exp(float64(n-1)*math.Log(cdf))
	}
	s := f(a) + f(b)
	for i := 1; i < m; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * f(a+float64(i)*h)
	}
	return s * h / 3
}

// StragglerFactor is the expected synchronous step over the mean rank's step, 1 + cv E[max of n
// standard normals], when each of n ranks takes step x (1 + cv Z) with Z standard normal,
// independent across ranks and steps, and the step ends when the slowest rank does.
func StragglerFactor(n int, cv float64) float64 {
	return 1 + cv*ExpectedMaxNormal(n)
}

func checkJitter(n int, cv float64) error {
	if n < 1 {
		return fmt.Errorf("goodput: %d ranks; give at least 1", n)
	}
	if cv < 0 || cv > MaxJitterCV || math.IsNaN(cv) {
		return fmt.Errorf("goodput: step-time jitter CV %v is outside [0, %v]; give a coefficient of variation such as 0.02", cv, MaxJitterCV)
	}
	return nil
}

// SimulateStragglers is the Monte-Carlo counterpart of StragglerFactor: it draws every rank's
// jitter for every step (n x steps normal draws, seeded), takes each step's slowest rank and
// returns the mean synchronous step over the mean rank's step.
func SimulateStragglers(n, steps int, cv float64, seed uint64) (float64, error) {
	if err := checkJitter(n, cv); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, fmt.Errorf("goodput: %d steps; give at least 1", steps)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	sum := 0.0
	for s := 0; s < steps; s++ {
		mx := math.Inf(-1)
		for r := 0; r < n; r++ {
			if z := rng.NormFloat64(); z > mx {
				mx = z
			}
		}
		sum += 1 + cv*mx
	}
	return sum / float64(steps), nil
}

// sampleMaxNormal draws the maximum of n standard normals exactly in O(1): if U is uniform, the
// maximum has CDF Φ(x)^n, so M = Φ⁻¹(U^(1/n)); 1 - U^(1/n) is computed as -expm1(ln U / n)
// to keep its precision when n is large.
func sampleMaxNormal(rng *rand.Rand, n int) float64 {
	if n <= 1 {
		return rng.NormFloat64()
	}
	u := rng.Float64()
	for u == 0 {
		u = rng.Float64()
	}
	tail := -math.Expm1(math.Log(u) / float64(n)) // 1 - U^(1/n), in (0, 1)
	return math.Sqrt2 * math.Erfcinv(2*tail)
}
