package calibrate

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/exec/kernels/gemm"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// gemmShape is one kernels.MatMul call: dst [M, N] = op(a) [M, K] · op(b) [K, N], accumulated
// into dst (beta 1) for the backward-weight products (exec's LinearBackwardWeight, which
// overwrites instead on a step's first microbatch, in the same time: costmodel.HostGEMMs),
// overwriting it (beta 0) otherwise.
type gemmShape struct {
	M, K, N        int
	TransA, TransB bool
	What           string
}

// accumulate reports whether exec runs the product with beta 1: the backward-weight products
// (Aᵀ·B) add into the gradient.
func (s gemmShape) accumulate() bool { return s.TransA }

// time is the shape as the profile's table keys it.
func (s gemmShape) time(t units.Seconds) hardware.GEMMTime {
	return hardware.GEMMTime{M: s.M, K: s.K, N: s.N, TransA: s.TransA, TransB: s.TransB, Accumulate: s.accumulate(), Seconds: t}
}

// The GEMM grid: the products exec runs for the presets, and a few larger ones.
//
// seed-mlp (Linear(100,1000)-ReLU-Linear(1000,10), batch 10): kernels.LinearForward is
// MatMul(y, x, W, batch, in, out, false, true); LinearBackwardInput MatMul(dx, dy, W, batch, out,
// in, false, false); LinearBackwardWeight MatMul(dW, dy, x, out, batch, in, true, false).
//
// gpt-tiny (hidden 64, FFN 256, 4 heads of 16, vocabulary 256, batch 8 x 32 tokens = 256 rows):
// qkv 64->192, attention projection 64->64, fc1 64->256, fc2 256->64, head 64->256, each forward,
// backward-input and backward-weight; tp=2 shards of qkv and fc1; the per-head products of
// attention (32 x 16 x 32 scores, 32 x 32 x 16 values).
var gemmGrid = []gemmShape{
	{10, 100, 1000, false, true, "seed-mlp 0 forward"},
	{10, 1000, 10, false, true, "seed-mlp 2 forward"},
	{10, 10, 1000, false, false, "seed-mlp 2 backward input"},
	{10, 1000, 100, false, false, "seed-mlp 0 backward input"},
	{10, 10, 1000, true, false, "seed-mlp 2 backward weight"},
	{1000, 10, 100, true, false, "seed-mlp 0 backward weight"},
	{10, 100, 500, false, true, "seed-mlp 0 forward, tp=2 shard"},
	{256, 64, 192, false, true, "gpt-tiny qkv forward"},
	{256, 64, 64, false, true, "gpt-tiny attn proj forward"},
	{256, 64, 256, false, true, "gpt-tiny fc1 / head forward"},
	{256, 256, 64, false, true, "gpt-tiny fc2 forward"},
	{256, 192, 64, false, false, "gpt-tiny qkv backward input"},
	{256, 256, 64, false, false, "gpt-tiny fc1 backward input"},
	{256, 64, 256, false, false, "gpt-tiny fc2 backward input"},
	{192, 256, 64, true, false, "gpt-tiny qkv backward weight"},
	{256, 256, 64, true, false, "gpt-tiny fc1 backward weight"},
	{64, 256, 256, true, false, "gpt-tiny fc2 backward weight"},
	{256, 64, 96, false, true, "gpt-tiny qkv forward, tp=2 shard"},
	{256, 64, 128, false, true, "gpt-tiny fc1 forward, tp=2 shard"},
	{32, 16, 32, false, true, "gpt-tiny attention scores, one head"},
	{32, 32, 16, false, false, "gpt-tiny attention values, one head"},
	{512, 512, 512, false, true, "larger"},
	{1024, 512, 1024, false, true, "larger"},
	{1024, 1024, 1024, false, true, "larger"},
}

// quickGEMM indexes the shapes Quick mode measures.
var quickGEMM = []int{0, 1, 5, 7, 10, 16, 19, 21}

// FLOPs of a product: 2MKN (one multiply and one add per term).
func (s gemmShape) FLOPs() float64 { return 2 * float64(s.M) * float64(s.K) * float64(s.N) }

// String is "256x64x192 A·Bᵀ".
func (s gemmShape) String() string {
	a, b := "A", "B"
	if s.TransA {
		a = "Aᵀ"
	}
	if s.TransB {
		b = "Bᵀ"
	}
	return fmt.Sprintf("%dx%dx%d %s·%s", s.M, s.K, s.N, a, b)
}

// GEMMPoint is one measured matrix product.
type GEMMPoint struct {
	Shape   string            `json:"shape"` // "MxKxN A·Bᵀ"
	What    string            `json:"what"`  // where exec runs this product
	Product hardware.GEMMTime `json:"product"`
	FLOPs   units.FLOPs       `json:"flops"`
	Time    units.Seconds     `json:"time_s"` // median time of one call on one core
	Rate    float64           `json:"flops_per_s"`
	// Split is the time on every core, for products of at least gemm.ParallelMACs (which exec
	// splits); 0 for smaller ones.
	Split  units.Seconds `json:"split_s,omitempty"`
	Model  units.Seconds `json:"model_s"` // the fitted line's time
	RelErr float64       `json:"rel_err"` // (model - time)/time
}

// GEMMFit is the line time(f) = f/Rate + Intercept fitted to the products, and the profile
// figures drawn from it.
type GEMMFit struct {
	// Rate is the asymptotic rate 1/slope; Intercept the fixed time per call.
	Rate      units.FLOPsPerSecond `json:"rate_flops_per_s"`
	Intercept units.Seconds        `json:"intercept_s"`
	// Best is the highest rate any product reached.
	Best units.FLOPsPerSecond `json:"best_flops_per_s"`
	// Peak = max(Rate, Best), Max = Rate/Peak and HalfFLOPs = (Intercept - the elementwise
	// kernel's call time) x Rate: the figures of the profile.
	Peak      units.FLOPsPerSecond `json:"peak_flops_per_s"`
	Max       float64              `json:"gemm_max_fraction"`
	HalfFLOPs units.FLOPs          `json:"gemm_half_flops"`
	Fit
}

// measureGEMM times kernels.MatMul (dense data drawn from a fixed seed) over shapes on one core
// (gemm.SetThreads(1)), as exec runs every product below gemm.ParallelMACs and as the profile
// prices a product before splitting it; with split, products of at least that size are timed
// split as well (the notes' speed-up).
func measureGEMM(ctx context.Context, shapes []gemmShape, s sampler, split bool) ([]GEMMPoint, error) {
	rng := kernels.NewRand(seed)
	defer gemm.SetThreads(gemm.SetThreads(1))
	fns := make([]func(), len(shapes))
	var big []int // shapes exec splits, timed split as well
	for i, sh := range shapes {
		// Dense data in [0.5, 1.5), as a layer's inputs and weights are.
		a := make([]float32, sh.M*sh.K)
		b := make([]float32, sh.K*sh.N)
		c := make([]float32, sh.M*sh.N)
		kernels.FillUniform(a, rng, 0.5, 1.5)
		kernels.FillUniform(b, rng, 0.5, 1.5)
		beta := float32(0)
		if sh.accumulate() {
			beta = 1
		}
		fns[i] = func() { kernels.MatMul(c, a, b, sh.M, sh.K, sh.N, sh.TransA, sh.TransB, 1, beta) }
		if split && sh.M*sh.K*sh.N >= gemm.ParallelMACs && runtime.GOMAXPROCS(0) > 1 {
			big = append(big, i)
		}
	}
	ts, err := s.each(ctx, fns)
	if err != nil {
		return nil, err
	}
	out := make([]GEMMPoint, len(shapes))
	for i, sh := range shapes {
		f := sh.FLOPs()
		out[i] = GEMMPoint{Shape: sh.String(), What: sh.What, Product: sh.time(units.Seconds(sig(ts[i]))), FLOPs: units.FLOPs(f), Time: units.Seconds(ts[i]), Rate: f / ts[i]}
	}
	if len(big) > 0 {
		gemm.SetThreads(0)
		fs := make([]func(), len(big))
		for j, i := range big {
			fs[j] = fns[i]
		}
		st, err := s.each(ctx, fs)
		gemm.SetThreads(1)
		if err != nil {
			return nil, err
		}
		for j, i := range big {
			out[i].Split = units.Seconds(st[j])
		}
	}
	return out, nil
}

// TimeGEMMs times each product alone on one core as calibrate does (20 ms per product in 10
// interleaved repetitions, about 0.05 s each), for compare to price the products of the model it
// runs with times taken just before it measures. It returns ctx's error when ctx is done first.
func TimeGEMMs(ctx context.Context, products []hardware.GEMMTime) ([]hardware.GEMMTime, error) {
	shapes := make([]gemmShape, len(products))
	for i, p := range products {
		if p.Accumulate != p.TransA {
			return nil, fmt.Errorf("calibrate: product %dx%dx%d: exec accumulates exactly the products whose A is transposed (backward weight)", p.M, p.K, p.N)
		}
		shapes[i] = gemmShape{M: p.M, K: p.K, N: p.N, TransA: p.TransA, TransB: p.TransB}
	}
	pts, err := measureGEMM(ctx, shapes, sampler{20 * time.Millisecond, 10}, false)
	if err != nil {
		return nil, err
	}
	out := make([]hardware.GEMMTime, len(pts))
	for i, p := range pts {
		out[i] = p.Product
	}
	return out, nil
}

// fitGEMM fits time = f/Rate + Intercept (fit2, relative least squares) and fills each point's
// model time. kernelCall is the fixed time of an elementwise kernel call, which the profile's
// OpOverhead already charges every op; it is taken off the intercept so that a GEMM does not
// pay it twice.
func fitGEMM(pts []GEMMPoint, kernelCall float64) GEMMFit {
	f, one, t := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	var best float64
	for i, p := range pts {
		f[i], one[i], t[i] = float64(p.FLOPs), 1, float64(p.Time)
		best = max(best, p.Rate)
	}
	slope, icept := fit2(f, one, t)
	if !(slope > 0) {
		// Cannot happen with real timings (time grows with f); keep the profile valid.
		slope = 1 / best
	}
	g := GEMMFit{Rate: units.FLOPsPerSecond(1 / slope), Intercept: units.Seconds(icept), Best: units.FLOPsPerSecond(best)}
	g.Peak = max(g.Rate, g.Best)
	g.Max = float64(g.Rate) / float64(g.Peak)
	// GEMMHalfFLOPs must be positive; 1 FLOP stands for "no fixed time left".
	g.HalfFLOPs = units.FLOPs(max(1, (icept-kernelCall)/slope))
	errs := make([]float64, len(pts))
	for i := range pts {
		m := slope*f[i] + icept
		pts[i].Model = units.Seconds(m)
		pts[i].RelErr = relErr(m, t[i])
		errs[i] = pts[i].RelErr
	}
	g.Fit = summarise(errs)
	return g
}
