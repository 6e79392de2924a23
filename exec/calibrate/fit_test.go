package calibrate

import (
	"math"
	"testing"

	"github.com/tpsim/tpsim/units"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b)) }

func TestFit2(t *testing.T) {
	cases := []struct {
		name    string
		x, y, t []float64
		p, q    float64
	}{
		// t = 2x + 3 exactly: the fit is exact whatever the weights.
		{"exact line", []float64{1, 2, 4, 8}, []float64{1, 1, 1, 1}, []float64{5, 7, 11, 19}, 2, 3},
		// t = x/2 exactly, through the origin: q = 0.
		{"through origin", []float64{1, 10, 100}, []float64{1, 1, 1}, []float64{0.5, 5, 50}, 0.5, 0},
		// t = x - 0.5 wants a negative intercept; the bound q = 0 gives the weighted fit through
		// the origin, minimising Σ(p·x/t - 1)²: p = Σ(x/t)/Σ(x/t)² with x/t = 2, 4/3, 8/7.
		{"negative intercept clamps to 0", []float64{1, 2, 4}, []float64{1, 1, 1}, []float64{0.5, 1.5, 3.5}, (2 + 4.0/3 + 8.0/7) / (4 + 16.0/9 + 64.0/49), 0},
		// Two regressors, as the collectives: t = 3·steps + 0.25·bytes.
		{"two regressors", []float64{2, 6, 14, 2}, []float64{10, 100, 1000, 4}, []float64{8.5, 43, 292, 7}, 3, 0.25},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, q := fit2(c.x, c.y, c.t)
			if !near(p, c.p, 1e-9) || math.Abs(q-c.q) > 1e-9*math.Max(1, math.Abs(c.q)) {
				t.Errorf("fit2 = %g, %g; want %g, %g", p, q, c.p, c.q)
			}
		})
	}
}

func TestSummariseAndMedian(t *testing.T) {
	f := summarise([]float64{0.1, -0.2})
	// RMS = sqrt((0.01 + 0.04)/2) = sqrt(0.025); the largest in absolute value keeps its sign.
	if f.Points != 2 || !near(f.RMSRelErr, math.Sqrt(0.025), 1e-12) || f.MaxRelErr != -0.2 {
		t.Errorf("summarise = %+v", f)
	}
	for _, c := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.v, got, c.want)
		}
	}
}

// ringShape follows the ring algorithm (Thakur, Rabenseifner and Gropp 2005, Sec. 4): all-reduce
// 2(p-1) steps sending 2(p-1)/p of n, all-gather and reduce-scatter p-1 steps sending (p-1)/p.
func TestRingShape(t *testing.T) {
	for _, c := range []struct {
		kind        string
		p           int
		steps, frac float64
	}{{"all_reduce", 4, 6, 1.5}, {"all_gather", 4, 3, 0.75}, {"reduce_scatter", 2, 1, 0.5}, {"all_reduce", 8, 14, 1.75}} {
		s, f := ringShape(CollPoint{Kind: c.kind, P: c.p, Bytes: 1})
		if s != c.steps || f != c.frac {
			t.Errorf("ringShape(%s, %d) = %g, %g; want %g, %g", c.kind, c.p, s, f, c.steps, c.frac)
		}
	}
}

// Points made from a known level are fitted back exactly.
func TestFitCollectivesRecoversLevel(t *testing.T) {
	const lat, bw = 2e-6, 5e9
	var pts []CollPoint
	for _, kind := range []string{"all_reduce", "all_gather", "reduce_scatter"} {
		for _, p := range []int{2, 3, 8} {
			for _, n := range []float64{4, 4096, 1 << 20, 32 << 20} {
				pt := CollPoint{Kind: kind, P: p, Bytes: units.Bytes(n)}
				s, sent := ringShape(pt)
				pt.Time = units.Seconds(s*lat + sent/bw)
				pts = append(pts, pt)
			}
		}
	}
	cf := fitCollectives(pts)
	if !near(float64(cf.Latency), lat, 1e-6) || !near(float64(cf.Bandwidth), bw, 1e-6) || cf.RMSRelErr > 1e-6 {
		t.Errorf("fit: latency %v, bandwidth %v, rms %g; want %v, %v, 0", cf.Latency, cf.Bandwidth, cf.RMSRelErr, units.Seconds(lat), units.BytesPerSecond(bw))
	}
	if len(cf.ByKindP) != 9 || len(cf.ByP) != 3 || len(cf.ByKind) != 3 {
		t.Errorf("%d kind x size fits, %d size fits, %d kind fits; want 9, 3, 3", len(cf.ByKindP), len(cf.ByP), len(cf.ByKind))
	}
	for _, f := range cf.ByP {
		if !near(float64(f.Latency), lat, 1e-6) || !near(float64(f.Bandwidth), bw, 1e-6) {
			t.Errorf("p=%d alone: %v, %v", f.P, f.Latency, f.Bandwidth)
		}
	}
	for _, p := range pts {
		if !near(float64(p.Model), float64(p.Time), 1e-6) {
			t.Errorf("%s p=%d %v: model %v, time %v", p.Kind, p.P, p.Bytes, p.Model, p.Time)
		}
	}
}

// A GEMM line time = f/1e10 + 2 µs gives rate 1e10 FLOP/s; the best measured rate is below the
// asymptote, so peak = rate and GEMMMax = 1; GEMMHalfFLOPs = (2 µs - 0.5 µs) x 1e10 = 15000.
func TestFitGEMMRecoversLine(t *testing.T) {
	var pts []GEMMPoint
	for _, f := range []float64{1e3, 1e5, 1e7, 1e9} {
		tm := f/1e10 + 2e-6
		pts = append(pts, GEMMPoint{FLOPs: units.FLOPs(f), Time: units.Seconds(tm), Rate: f / tm})
	}
	g := fitGEMM(pts, 0.5e-6)
	if !near(float64(g.Rate), 1e10, 1e-9) || !near(float64(g.Intercept), 2e-6, 1e-9) || g.Peak != g.Rate || g.Max != 1 ||
		!near(float64(g.HalfFLOPs), 15000, 1e-6) || g.RMSRelErr > 1e-9 {
		t.Errorf("fitGEMM = %+v", g)
	}
	// An intercept smaller than the kernel call leaves the 1-FLOP floor.
	if g := fitGEMM(pts, 1e-3); g.HalfFLOPs != 1 {
		t.Errorf("GEMMHalfFLOPs = %v, want the floor 1", g.HalfFLOPs)
	}
}

// Elementwise points on the line 100 ns + bytes/10 GB/s are fitted back; ReLU, not fitted, is
// priced by add's line.
func TestFitElementwise(t *testing.T) {
	var pts []ElemPoint
	for _, n := range []int{16, 1024, 1 << 20} {
		add := 100e-9 + 12*float64(n)/10e9
		relu := 200e-9 + 8*float64(n)/1e9
		pts = append(pts,
			ElemPoint{Kernel: "add", Elems: n, Bytes: units.Bytes(12 * n), KernelTime: units.Seconds(12 * float64(n) / 20e9), AsExec: units.Seconds(add)},
			ElemPoint{Kernel: "relu", Elems: n, Bytes: units.Bytes(8 * n), KernelTime: units.Seconds(8 * float64(n) / 2e9), AsExec: units.Seconds(relu)})
	}
	e := fitElementwise(pts)
	if !near(float64(e.Bandwidth), 10e9, 1e-9) || !near(float64(e.Overhead), 100e-9, 1e-6) || e.RMSRelErr > 1e-9 || e.Points != 3 {
		t.Errorf("profile line: %v + %v, %+v", e.Overhead, e.Bandwidth, e.Fit)
	}
	if !near(float64(e.KernelBW), 20e9, 1e-9) || float64(e.KernelOverhead) > 1e-15 {
		t.Errorf("add alone: %v + %v", e.KernelOverhead, e.KernelBW)
	}
	if len(e.ByKernel) != 2 || e.ByKernel[1].Kernel != "relu" || !near(float64(e.ByKernel[1].Bandwidth), 1e9, 1e-9) {
		t.Errorf("per kernel: %+v", e.ByKernel)
	}
	for _, p := range pts {
		want := 100e-9 + float64(p.Bytes)/10e9
		if !near(float64(p.Model), want, 1e-6) {
			t.Errorf("%s %d: model %v, want %v", p.Kernel, p.Elems, p.Model, units.Seconds(want))
		}
	}
}

func TestMonotone(t *testing.T) {
	for _, c := range []struct{ in, want []float64 }{
		{nil, []float64{}},
		{[]float64{1, 2, 3}, []float64{1, 2, 3}},
		// 3 then 2 pool to their mean 2.5.
		{[]float64{1, 3, 2, 4}, []float64{1, 2.5, 2.5, 4}},
		// A high outlier in the middle pools with everything after it that stays below the
		// running mean: 6, 2 -> 4; with 2.5 -> 3.5; with 3 -> 13.5/4 = 3.375.
		{[]float64{1, 1.5, 6, 2, 2.5, 3}, []float64{1, 1.5, 3.375, 3.375, 3.375, 3.375}},
		// A high outlier at the end pools nothing.
		{[]float64{1, 2, 9}, []float64{1, 2, 9}},
	} {
		got := monotone(c.in)
		if len(got) != len(c.want) {
			t.Fatalf("monotone(%v) = %v", c.in, got)
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("monotone(%v) = %v, want %v", c.in, got, c.want)
				break
			}
		}
	}
}

func TestSig(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{20811413568.102207, 2.081e10}, {2.5516558619894364e-07, 2.552e-07}, {1, 1}, {0.78676, 0.7868}, {0, 0}, {-12345, -12350},
	} {
		if got := sig(c.in); math.Abs(got-c.want) > 1e-12*math.Abs(c.want) {
			t.Errorf("sig(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}
