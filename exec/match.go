package exec

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"

	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/strategies"
)

// GradStats are what a reference run records of its gradients and optimizer for the match
// check's rounding floor (Compare; exec's doc derives it).
type GradStats struct {
	// Max is, per parameter, the largest |gradient| of any element and step.
	Max map[string]float64
	// Gain is, per parameter and element, the sum over the steps of the derivative of the
	// step's update with respect to the gradient: lr per step for SGD, lr/(sqrt(v̂)+eps) for
	// Adam (v̂ the bias-corrected second moment after that step).
	Gain map[string][]float32
	// Terms is the number of summands of one gradient element: the tokens of a step.
	Terms int64
}

// addGrad records one step's gradient g of parameter name.
func (s *GradStats) addGrad(name string, g []float32) {
	hi := s.Max[name]
	for _, x := range g {
		hi = max(hi, math.Abs(float64(x)))
	}
	s.Max[name] = hi
}

// addGain adds step t's (from 1) gain of parameter name, of n elements: lr, or under Adam (v its
// second moment after the step, non-nil) lr/(sqrt(v/(1-beta2^t))+eps).
func (s *GradStats) addGain(name string, lr float64, n int, v []float32, t int) {
	gain, ok := s.Gain[name]
	if !ok {
		gain = make([]float32, n)
		s.Gain[name] = gain
	}
	if v == nil {
		for i := range gain {
			gain[i] += float32(lr)
		}
		return
	}
	a := kernels.NewAdam(lr)
	bc2 := 1 - math.Pow(a.Beta2, float64(t))
	for i, x := range v {
		gain[i] += float32(lr / (math.Sqrt(float64(x)/bc2) + a.Eps))
	}
}

// unitRoundoff is float32's unit roundoff, 2^-24 (Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., §2.1: u = beta^(1-t)/2 with t = 24 significand bits).
const unitRoundoff = 1.0 / (1 << 24)

// ParamDiff is one parameter's difference from the reference (Compare).
type ParamDiff struct {
	Name string `json:"name"`
	// Diff is the norm of the elements' differences beyond their rounding floor, over the norm
	// of the update the parameter received in the reference run.
	Diff float64 `json:"diff"`
	// MaxAbs is the largest |got - ref| of an element; Update the norm of ref - initial; Floor the
	// largest rounding floor of an element.
	MaxAbs float64 `json:"max_abs_diff"`
	Update float64 `json:"update_norm"`
	Floor  float64 `json:"max_floor"`
	// FloorUse is the largest |got - ref| / floor of an element: how much of the rounding floor
	// the closest element used (at most 1 when Diff is 0).
	FloorUse float64 `json:"floor_use"`
}

// MarshalJSON writes p with null for a figure that is not finite (a diverged run), as JSONFloat.
func (p ParamDiff) MarshalJSON() ([]byte, error) {
	type out struct {
		Name     string    `json:"name"`
		Diff     JSONFloat `json:"diff"`
		MaxAbs   JSONFloat `json:"max_abs_diff"`
		Update   JSONFloat `json:"update_norm"`
		Floor    JSONFloat `json:"max_floor"`
		FloorUse JSONFloat `json:"floor_use"`
	}
	return json.Marshal(out{p.Name, JSONFloat(p.Diff), JSONFloat(p.MaxAbs), JSONFloat(p.Update), JSONFloat(p.Floor), JSONFloat(p.FloorUse)})
}

// Match is a run compared with single-device training.
type Match struct {
	// Worst is the largest of every parameter's Diff and every step's relative loss difference
	// (the figure exec reports as max_rel_diff_vs_single); Where names it: a parameter, or
	// "loss step N".
	Worst float64
	Where string
	// WorstParam is the parameter closest to failing: the largest Diff, or when every Diff is 0
	// the largest FloorUse.
	WorstParam ParamDiff
	// Loss is the largest relative loss difference of a step; Params every parameter, by name.
	Loss   float64
	Params []ParamDiff
}

// Compare checks run got against ref, single-device training of the same model, batch, seed and
// optimizer, as exec's doc derives ("The match check"): every step's loss relative to the
// reference's, and every parameter's difference, elementwise beyond a rounding floor, relative to
// the update the reference gave it. A parameter whose shape differs is an infinite difference.
func Compare(got, ref *Result) Match {
	var m Match
	for i := range ref.Losses {
		d := math.Inf(1)
		if i < len(got.Losses) {
			d = math.Abs(got.Losses[i] - ref.Losses[i])
			if ref.Losses[i] != 0 {
				d /= math.Abs(ref.Losses[i])
			}
		}
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		m.Loss = max(m.Loss, d)
		if d > m.Worst || m.Where == "" {
			m.Worst, m.Where = d, "loss step "+strconv.Itoa(i+1)
		}
	}
	names := make([]string, 0, len(ref.Params))
	for k := range ref.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	steps := float64(len(ref.Losses))
	for i, k := range names {
		pd := compareParam(k, got.Params[k], ref.Params[k], ref.Initial[k], ref, steps)
		m.Params = append(m.Params, pd)
		if pd.Diff > m.Worst || m.Where == "" {
			m.Worst, m.Where = pd.Diff, k
		}
		w := m.WorstParam
		if i == 0 || pd.Diff > w.Diff || (pd.Diff == w.Diff && pd.FloorUse > w.FloorUse) {
			m.WorstParam = pd
		}
	}
	return m
}

// compareParam compares one parameter: a (the run), b (the reference), b0 (its initial value).
func compareParam(name string, a, b, b0 []float32, ref *Result, steps float64) ParamDiff {
	pd := ParamDiff{Name: name}
	if len(a) != len(b) {
		pd.Diff = math.Inf(1)
		return pd
	}
	// The floor: what rounding alone can put between two runs (exec's doc, "The match check"):
	// delta bounds the difference of one gradient element's float32 rounding in two summation
	// orders, which the optimizer's gain turns into a parameter difference; and each step's
	// update rounds the stored parameter to float32, up to one ulp (2u|w|) apart per step.
	var delta float64
	var gain []float32
	if g := ref.Grads; g != nil {
		delta = 2 * unitRoundoff * math.Sqrt(float64(max(g.Terms, 1))) * g.Max[name]
		gain = g.Gain[name]
		if len(gain) != len(b) {
			gain = nil
		}
	}
	adamTerm := 1.0
	if ref.Optimizer == strategies.OptimizerAdam {
		adamTerm = 2 // the second moment's own sensitivity, at most the first's (exec's doc)
	}
	var excess, upd, bnorm float64
	for i := range b {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		floor := steps * 2 * unitRoundoff * math.Abs(float64(b[i]))
		if gain != nil {
			floor += adamTerm * delta * float64(gain[i])
		}
		pd.MaxAbs = max(pd.MaxAbs, d)
		pd.Floor = max(pd.Floor, floor)
		if floor > 0 {
			pd.FloorUse = max(pd.FloorUse, d/floor)
		} else if d > 0 {
			pd.FloorUse = math.Inf(1)
		}
		if e := d - floor; e > 0 {
			excess += e * e
		}
		if b0 != nil {
			u := float64(b[i]) - float64(b0[i])
			upd += u * u
		}
		bnorm += float64(b[i]) * float64(b[i])
	}
	pd.Update = math.Sqrt(upd)
	// The scale: the update, or for a parameter the reference never moved (or whose initial value
	// ref lacks), the parameter (or 1).
	scale := pd.Update
	if scale == 0 {
		scale = math.Sqrt(bnorm)
	}
	if scale == 0 {
		scale = 1
	}
	pd.Diff = math.Sqrt(excess) / scale
	if math.IsNaN(pd.Diff) { // a reference that diverged
		pd.Diff = math.Inf(1)
	}
	return pd
}

// MaxRelDiff is Compare's worst difference: the figure exec reports as max_rel_diff_vs_single.
func MaxRelDiff(got, ref *Result) float64 { return Compare(got, ref).Worst }
