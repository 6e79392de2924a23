package kernels

import "math"

// SGD is stochastic gradient descent with optional momentum, as torch.optim.SGD with dampening 0,
// no Nesterov and no weight decay:
//
//	buf = Momentum·buf + grad   (buf starts at zero, so the first step has buf = grad)
//	param −= LR·buf             (param −= LR·grad when Momentum is 0)
//
// The hyperparameters are float64, as PyTorch's Python floats; the update runs in float32. The
// zero value is plain SGD with learning rate 0; set LR.
type SGD struct {
	LR       float64
	Momentum float64
}

// Step updates param in place from grad. buf is the momentum buffer (same length, zero before
// the first step, kept by the caller between steps); it may be nil when Momentum is 0.
//
// It panics if the lengths differ, or if buf is nil while Momentum is not 0.
func (o SGD) Step(param, grad, buf []float32) {
	checkSame("SGD.Step", param, "grad", grad)
	lr, mom := float32(o.LR), float32(o.Momentum)
	if o.Momentum == 0 {
		v := vecLen(len(grad))
		if v > 0 {
			sgdAVX(&param[0], &grad[0], v, lr)
		}
		for i := v; i < len(grad); i++ {
			param[i] -= lr * grad[i]
		}
		return
	}
	if buf == nil {
		panicf("SGD.Step: Momentum = %g needs a momentum buffer", o.Momentum)
	}
	checkSame("SGD.Step", param, "buf", buf)
	for i, g := range grad {
		b := mom*buf[i] + g
		buf[i] = b
		param[i] -= lr * b
	}
}

// Adam is the optimizer of Kingma and Ba 2015, "Adam: A Method for Stochastic Optimization",
// Algorithm 1, in the form of torch.optim.Adam (no weight decay, no amsgrad):
//
//	m = β1·m + (1−β1)·g
//	v = β2·v + (1−β2)·g²
//	param −= (LR/(1−β1^t)) · m / (sqrt(v)/sqrt(1−β2^t) + Eps)
//
// where t is the 1-based step count. The hyperparameters are float64, as PyTorch's Python floats:
// 1−β1, 1−β2 and the bias corrections are computed in float64 and the update runs in float32.
// NewAdam gives the usual defaults.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
}

// NewAdam returns Adam with learning rate lr and PyTorch's defaults β1 = 0.9, β2 = 0.999,
// eps = 1e-8.
func NewAdam(lr float64) Adam {
	return Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Step performs update number t (1 for the first step) on param in place from grad. m and v are
// the first and second moment estimates (same length, zero before the first step, kept by the
// caller between steps). The caller counts t; every parameter of a model advances together.
//
// It panics if t < 1 or the lengths differ.
func (o Adam) Step(param, grad, m, v []float32, t int) {
	if t < 1 {
		panicf("Adam.Step: step t = %d, want t >= 1", t)
	}
	checkSame("Adam.Step", param, "grad, m, v", grad, m, v)
	bc1 := 1 - math.Pow(o.Beta1, float64(t))
	bc2 := 1 - math.Pow(o.Beta2, float64(t))
	stepSize := float32(o.LR / bc1)
	invSqrtBC2 := float32(1 / math.Sqrt(bc2))
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	ob1, ob2 := float32(1-o.Beta1), float32(1-o.Beta2)
	eps := float32(o.Eps)
	n := vecLen(len(grad))
	if n > 0 {
		// The same operations eight at a time, rounded the same way (adamAVX).
		c := [7]float32{b1, ob1, b2, ob2, eps, stepSize, invSqrtBC2}
		adamAVX(&param[0], &grad[0], &m[0], &v[0], n, &c)
	}
	for i := n; i < len(grad); i++ {
		// Each product converted before its add, so that no compiler fuses them into a
		// multiply-add (GOAMD64=v3 may): adamAVX's separate multiplies and adds.
		g := grad[i]
		mi := float32(b1*m[i]) + float32(ob1*g)
		vi := float32(b2*v[i]) + float32(ob2*g*g)
		m[i], v[i] = mi, vi
		denom := float32(float32(math.Sqrt(float64(vi)))*invSqrtBC2) + eps
		param[i] -= stepSize * mi / denom
	}
}
