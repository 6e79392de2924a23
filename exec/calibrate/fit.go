package calibrate

import (
	"math"
	"slices"
)

// Fit says how well a fitted model matches the measurements it was fitted to: the relative error
// (model - measured)/measured of each point, summarised.
type Fit struct {
	Points int `json:"points"`
	// RMSRelErr is the root mean square of the relative errors, MaxRelErr the largest in absolute
	// value (with its sign: positive means the model is slower than measured).
	RMSRelErr float64 `json:"rms_rel_err"`
	MaxRelErr float64 `json:"max_rel_err"`
}

// fit2 fits t_i ≈ p·x_i + q·y_i with p, q >= 0, minimising the sum of squared relative errors
// Σ((p·x_i + q·y_i − t_i)/t_i)²: least squares on time with weights 1/t_i², so that a 1 µs op
// counts as much as a 1 s one. It solves the 2×2 normal equations; when the unconstrained optimum
// has a negative coefficient it returns the better of the two one-coefficient fits (the optimum
// of a convex problem with a bound lies on that bound). Points with t_i <= 0 are ignored. It
// returns p = q = 0 when nothing can be fitted.
func fit2(x, y, t []float64) (p, q float64) {
	var sxx, sxy, syy, sxt, syt float64
	for i, ti := range t {
		if !(ti > 0) {
			continue
		}
		w := 1 / (ti * ti)
		sxx += w * x[i] * x[i]
		sxy += w * x[i] * y[i]
		syy += w * y[i] * y[i]
		sxt += w * x[i] * ti
		syt += w * y[i] * ti
	}
	if det := sxx*syy - sxy*sxy; det > 1e-12*sxx*syy && det > 0 {
		p = (sxt*syy - syt*sxy) / det
		q = (syt*sxx - sxt*sxy) / det
		if p >= 0 && q >= 0 {
			return p, q
		}
	}
	// One coefficient at its bound 0: p alone or q alone.
	var pOnly, qOnly float64
	if sxx > 0 {
		pOnly = max(0, sxt/sxx)
	}
	if syy > 0 {
		qOnly = max(0, syt/syy)
	}
	cost := func(p, q float64) float64 {
		var c float64
		for i, ti := range t {
			if ti > 0 {
				r := (p*x[i] + q*y[i] - ti) / ti
				c += r * r
			}
		}
		return c
	}
	if cost(pOnly, 0) <= cost(0, qOnly) {
		return pOnly, 0
	}
	return 0, qOnly
}

// relErr is (model - measured)/measured, 0 when measured is not positive.
func relErr(model, measured float64) float64 {
	if !(measured > 0) {
		return 0
	}
	return (model - measured) / measured
}

// summarise builds a Fit from relative errors.
func summarise(errs []float64) Fit {
	f := Fit{Points: len(errs)}
	if len(errs) == 0 {
		return f
	}
	var ss float64
	for _, e := range errs {
		ss += e * e
		if math.Abs(e) > math.Abs(f.MaxRelErr) {
			f.MaxRelErr = e
		}
	}
	f.RMSRelErr = math.Sqrt(ss / float64(len(errs)))
	return f
}

// median returns the median of v (the mean of the middle two for an even count), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
