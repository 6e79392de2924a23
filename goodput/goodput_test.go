package goodput

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/units"
)

// E[max of n standard normals] from the published tables (Tippett 1925, Biometrika 17; Harter
// 1961, Biometrika 48), and 1/√π, 3/(2√π) in closed form for n = 2, 3.
func TestExpectedMaxNormalTables(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{
		{1, 0}, {2, 1 / math.Sqrt(math.Pi)}, {3, 1.5 / math.Sqrt(math.Pi)},
		{5, 1.16296}, {10, 1.53875}, {100, 2.50759}, {1000, 3.24144},
	} {
		if got := ExpectedMaxNormal(c.n); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("ExpectedMaxNormal(%d) = %.5f, want %.5f", c.n, got, c.want)
		}
	}
	// The asymptote √(2 ln n) overstates it: the closed form must not be that.
	if got, asym := ExpectedMaxNormal(16384), math.Sqrt(2*math.Log(16384)); got > asym-0.4 {
		t.Errorf("ExpectedMaxNormal(16384) = %.3f, too close to the asymptote %.3f", got, asym)
	}
}

// The closed-form straggler expectation agrees with a Monte-Carlo of N ranks x steps within 2%
// (on the excess E[max], stricter than on the step itself).
func TestStragglersClosedFormMatchesMonteCarlo(t *testing.T) {
	const cv = 0.05
	for _, c := range []struct{ n, steps int }{{8, 4000}, {1024, 400}, {16384, 200}} {
		mc, err := SimulateStragglers(c.n, c.steps, cv, 7)
		if err != nil {
			t.Fatal(err)
		}
		want := ExpectedMaxNormal(c.n)
		got := (mc - 1) / cv
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("N=%d: Monte-Carlo E[max] %.4f, closed form %.4f: more than 2%% apart", c.n, got, want)
		}
	}
}

// The exact O(1) sampler of the maximum (used by Simulate) has the closed form's mean.
func TestSampleMaxNormalMean(t *testing.T) {
	for _, n := range []int{8, 16384, 100000} {
		rng := newTestRand(3)
		const draws = 40000
		s := 0.0
		for i := 0; i < draws; i++ {
			s += sampleMaxNormal(rng, n)
		}
		if got, want := s/draws, ExpectedMaxNormal(n); math.Abs(got-want)/want > 0.01 {
			t.Errorf("n=%d: sampled mean max %.4f, closed form %.4f", n, got, want)
		}
	}
}

// Table 5's rows summed by hand per component: GPU 148+72+19+17+6+6 = 268; node
// 32+7+3+3+2+2+2+2 = 53; network 35; software 54+7+2 = 63; 419 in all.
func TestLlama3RatesFromTable5(t *testing.T) {
	r := Llama3Rates()
	gpuHours := 16384.0 * 54 * 24
	for comp, count := range map[Component]float64{GPU: 268, Node: 53, Network: 35, Software: 63, Planned: 47} {
		if got := r[comp] * gpuHours; math.Abs(got-count) > 1e-9 {
			t.Errorf("%s: %.6f interruptions in the snapshot, want %v", comp, got, count)
		}
	}
	// 419 / 21,233,664 GPU-hours = 1.973e-5 per GPU-hour; a job MTBF of 1296 h / 419 = 3.09 h.
	if got := r.PerGPUHour(false); math.Abs(got-1.9733e-5) > 1e-8 {
		t.Errorf("unexpected rate %.4e per GPU-hour, want 1.9733e-5", got)
	}
}

func TestYoungDalyAndCheckpointCost(t *testing.T) {
	if got := YoungDaly(2, 10000); math.Abs(float64(got)-200) > 1e-9 {
		t.Errorf("YoungDaly(2 s, 10000 s) = %v, want 200 s", got)
	}
	c := llama3Config().Defaults()
	ck := CheckpointCost(c)
	// 405e9 x 14 B = 5.67 TB over 2,048 nodes at 1 GB/s = 2.768 s; async: 5.67 TB / 16,384 GPUs /
	// 50 GB/s = 6.92 ms.
	if math.Abs(float64(ck.Bytes)-5.67e12) > 1 || math.Abs(float64(ck.Write)-2.7686) > 1e-3 {
		t.Errorf("checkpoint %v written in %v, want 5.67e12 B in 2.769 s", float64(ck.Bytes), ck.Write)
	}
	c.Async = true
	if ck := CheckpointCost(c); math.Abs(float64(ck.Stall)-0.006921) > 1e-5 || ck.Write != ck.Read {
		t.Errorf("async stall %v, want 6.92 ms", ck.Stall)
	}
}

// llama3Config is the Llama 3 405B run as stated: 16,384 GPUs, 405e9 parameters, and a step of
// 6 x 405e9 x 16M tokens / (16,384 GPUs x 400 TFLOP/s) = 5.93 s (the paper's Table 4: 16M tokens
// per batch and 400 TFLOP/s per GPU at 16,384 GPUs; 6ND FLOPs per step, Kaplan et al. 2020).
// Steps: about 54 days of wall time. No jitter: the paper's effective training time counts a
// slow step as training. Hot spares: the cluster had 24K GPUs for a 16K job (Section 3.3.1).
func llama3Config() Config {
	step := 6 * 405e9 * 16e6 / (16384 * 400e12)
	return Config{GPUs: 16384, Params: 405e9, StepTime: units.Seconds(step), Steps: int(54 * 86400 * 0.9 / step), HotSpares: true}
}

// Validation against the Llama 3 snapshot. The rates come from the same run, so the count is
// fitted by construction; what is checked is that the accounting keeps it (interruptions arrive
// during running time only, so fewer land in 54 wall-days: 466 x A/W = 430 by hand) and the
// effective training time the stated inputs give. By hand (see doc.go): MTBF 11,135 s, checkpoint
// 2.768 s, Young/Daly 248 s -> 42 steps; ETT = 0.98872 / 1.08416 = 0.912, goodput 0.902: within 5
// points of the paper's ">90%" with the detection (PyTorch's 10-minute timeout) and restart
// (5 minutes, an assumption) defaults, neither fitted.
func TestLlama3Snapshot(t *testing.T) {
	c := llama3Config()
	cf, err := ClosedForm(c)
	if err != nil {
		t.Fatal(err)
	}
	if cf.IntervalSteps != 42 {
		t.Errorf("checkpoint every %d steps, want 42 (Young/Daly 248 s / 5.93 s)", cf.IntervalSteps)
	}
	if math.Abs(cf.EffectiveTrainingTime-0.912) > 0.002 || math.Abs(cf.Goodput-0.902) > 0.002 {
		t.Errorf("closed form: ETT %.4f goodput %.4f, want 0.912 and 0.902 by hand", cf.EffectiveTrainingTime, cf.Goodput)
	}
	if math.Abs(cf.EffectiveTrainingTime-Llama3EffectiveTT) > 0.05 {
		t.Errorf("ETT %.3f more than 5 points from the paper's 0.90", cf.EffectiveTrainingTime)
	}
	per54 := func(r Result) float64 { return r.TotalInterruptions() * 54 * 86400 / float64(r.Wall) }
	if got := per54(cf); math.Abs(got-430)/430 > 0.01 || math.Abs(got-Llama3Total)/Llama3Total > 0.2 {
		t.Errorf("closed form: %.1f interruptions per 54 days, want 430 by hand and within 20%% of 466", got)
	}
	const seeds = 8
	var count, ett float64
	for s := uint64(1); s <= seeds; s++ {
		r, err := Simulate(c, s)
		if err != nil {
			t.Fatal(err)
		}
		count += per54(r) / seeds
		ett += r.EffectiveTrainingTime / seeds
	}
	if math.Abs(count-Llama3Total)/Llama3Total > 0.2 {
		t.Errorf("simulation: mean %.1f interruptions per 54 days over %d seeds, want within 20%% of 466", count, seeds)
	}
	if math.Abs(ett-cf.EffectiveTrainingTime) > 0.01 || math.Abs(ett-Llama3EffectiveTT) > 0.05 {
		t.Errorf("simulation: mean ETT %.4f, closed form %.4f, paper 0.90", ett, cf.EffectiveTrainingTime)
	}
}

func genericConfig() Config {
	return Config{GPUs: 4096, Params: 70e9, StepTime: 4, Steps: 60000, JitterCV: 0.02, Rates: Rates{GPU: 4e-5, Software: 1e-5, Planned: 2e-6}}
}

func TestSimulationMatchesClosedFormAndIsDeterministic(t *testing.T) {
	c := genericConfig()
	c.Steps = 600000 // about 140 failures a run: enough for a standard error under half a point
	cf, err := ClosedForm(c)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Simulate(c, 42)
	b, _ := Simulate(c, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different results:\n%+v\n%+v", a, b)
	}
	if d, _ := Simulate(c, 43); d.Wall == a.Wall {
		t.Errorf("seeds 42 and 43 gave the same wall time %v", a.Wall)
	}
	// The seeds' spread sets the tolerance: the mean must be within 3 standard errors of the
	// closed form, and the standard error itself under half a point (else the test proves nothing).
	const seeds = 16
	var g, g2, strag float64
	for s := uint64(1); s <= seeds; s++ {
		r, _ := Simulate(c, s)
		g += r.Goodput / seeds
		g2 += r.Goodput * r.Goodput / seeds
		strag += float64(r.Stragglers) / seeds
		sum := r.Useful + r.Stragglers + r.Checkpoints + r.Recompute + r.Restarts
		if math.Abs(float64(sum-r.Wall)) > 1e-6*float64(r.Wall) {
			t.Errorf("seed %d: breakdown sums to %v, wall %v", s, sum, r.Wall)
		}
	}
	se := math.Sqrt((g2-g*g)*seeds/(seeds-1)) / math.Sqrt(seeds)
	if se > 0.005 || math.Abs(g-cf.Goodput) > 3*se {
		t.Errorf("simulated goodput %.4f ± %.4f (standard error), closed form %.4f", g, se, cf.Goodput)
	}
	if math.Abs(strag-float64(cf.Stragglers))/float64(cf.Stragglers) > 0.02 {
		t.Errorf("simulated straggler time %.0f s, closed form %.0f s", strag, float64(cf.Stragglers))
	}
}

// No failures: one checkpoint at the end, so goodput = S t / (S t + C) = 100 / 101 when the
// checkpoint takes 1 s (1e9 params x 14 B over one node at 14 GB/s).
func TestNoFailures(t *testing.T) {
	c := Config{GPUs: 8, Params: 1e9, StepTime: 1, Steps: 100, StorageBandwidthPerNode: 14e9, Rates: Rates{}}
	for _, f := range []func(Config) (Result, error){ClosedForm, func(c Config) (Result, error) { return Simulate(c, 1) }} {
		r, err := f(c)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.Goodput-100.0/101) > 1e-12 || r.TotalInterruptions() != 0 {
			t.Errorf("goodput %v with %v interruptions, want 100/101 and none", r.Goodput, r.TotalInterruptions())
		}
	}
}

// The Young/Daly interval is near the best: it beats a quarter and four times of it.
func TestYoungDalyIsNearOptimal(t *testing.T) {
	c := genericConfig()
	opt, _ := ClosedForm(c)
	for _, f := range []units.Seconds{0.25, 4} {
		c.CheckpointInterval = opt.Interval * f
		r, _ := ClosedForm(c)
		if r.Goodput >= opt.Goodput {
			t.Errorf("interval %v gives goodput %.4f >= Young/Daly's %.4f at %v", c.CheckpointInterval, r.Goodput, opt.Goodput, opt.Interval)
		}
	}
}

// Without hot spares, hardware failures add the replacement time; async checkpoints stall less.
func TestHotSparesAndAsync(t *testing.T) {
	c := genericConfig()
	with, _ := ClosedForm(c)
	c.HotSpares = true
	spare, _ := ClosedForm(c)
	// hardware share 4/5 of unexpected failures, each +1 h.
	nu := spare.Interruptions[GPU] + spare.Interruptions[Software]
	if spare.Restarts >= with.Restarts || with.Restarts-spare.Restarts < units.Seconds(0.9*nu*0.8*3600) {
		t.Errorf("restarts %v without spares, %v with", with.Restarts, spare.Restarts)
	}
	c.Async = true
	as, _ := ClosedForm(c)
	if as.Checkpoint.Stall >= spare.Checkpoint.Stall || as.Goodput <= spare.Goodput {
		t.Errorf("async: stall %v goodput %.4f; sync: %v %.4f", as.Checkpoint.Stall, as.Goodput, spare.Checkpoint.Stall, spare.Goodput)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.GPUs = 0 }, "GPUs"},
		{func(c *Config) { c.JitterCV = 0.5 }, "jitter"},
		{func(c *Config) { c.Rates = Rates{GPU: -1} }, "rate of gpu"},
		{func(c *Config) { c.Rates = Rates{"disk": 1} }, "unknown failure component"},
		{func(c *Config) { c.StepTime = units.Seconds(math.NaN()) }, "step time"},
		{func(c *Config) { c.Params = 0 }, "parameter count"},
		{func(c *Config) { c.CheckpointInterval = 1e9; c.Rates = Rates{GPU: 1} }, "barely progresses"},
	} {
		cfg := genericConfig()
		c.mod(&cfg)
		_, err := ClosedForm(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one mentioning %q", err, c.want)
		}
		if _, err := Simulate(cfg, 1); err == nil {
			t.Errorf("Simulate accepted a config ClosedForm refuses (%q)", c.want)
		}
	}
}

func BenchmarkSimulateStragglers16384(b *testing.B) {
	for i := 0; i < b.N; i++ {
		SimulateStragglers(16384, 1000, 0.02, uint64(i))
	}
}

func BenchmarkSimulate100kGPUs(b *testing.B) {
	c := Config{GPUs: 100000, Params: 1e12, StepTime: 10, Steps: 1000, JitterCV: 0.02}
	for i := 0; i < b.N; i++ {
		Simulate(c, uint64(i))
	}
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }
