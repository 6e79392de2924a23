package search

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func preset(t testing.TB, name string) *model.Model {
	t.Helper()
	m, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func near(a, b, tol float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

func a100(t testing.TB) *hardware.Hardware {
	t.Helper()
	hw, err := hardware.Preset("a100-80g")
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// tinyGPT is a small GPT whose 6 layers do not split evenly over 4 stages.
func tinyGPT(t testing.TB) *model.Model {
	t.Helper()
	m, err := model.Transformer{Hidden: 64, Layers: 6, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Bias: true, Learned: true, Batch: 8}.Build("gpt-tiny6", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func evaluated(t testing.TB, m *model.Model, hw *hardware.Hardware, gpus int, o strategies.EnumerateOptions) (*Evaluator, []Eval) {
	t.Helper()
	space, err := strategies.Enumerate(m, gpus, o)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(m, hw, space, gpus)
	if err != nil {
		t.Fatal(err)
	}
	return ev, ev.Evaluate()
}

// Every evaluation is the closed form's Totals for that candidate, uneven pipelines included.
func TestEvaluateMatchesEstimate(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *model.Model
		gbs  int
	}{{"tiny GPT, uneven stages", tinyGPT(t), 16}, {"llama2-7b, mostly out of memory", preset(t, "llama2-7b"), 16}} {
		t.Run(c.name, func(t *testing.T) { checkAgainstEstimate(t, c.m, c.gbs) })
	}
}

func checkAgainstEstimate(t *testing.T, m *model.Model, gbs int) {
	hw := a100(t)
	ev, evals := evaluated(t, m, hw, 8, strategies.EnumerateOptions{GBS: gbs})
	oom := 0
	for _, e := range evals {
		if e.Priced && !e.Feasible {
			oom++
		}
	}
	if m.Name == "llama2-7b" && oom == 0 {
		t.Fatal("expected candidates out of memory")
	}
	uneven, bounds := 0, 0
	for i, e := range evals {
		st := ev.Space.Strategy(i)
		if m.Transformer.Layers%(st.Mesh.PP*st.VPP) != 0 {
			uneven++
		}
		r, err := ev.Derived.Estimate(st)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if e.PeakBound {
			// Its parameters, gradients and optimizer state alone exceed the device.
			if !e.Priced || e.Feasible || r.Feasible || e.Peak > r.Memory.Peak || e.Peak <= hw.Device.Memory {
				t.Fatalf("%s: eval %+v, a bound of Estimate's peak %v (feasible %v)", st, e, r.Memory.Peak, r.Feasible)
			}
			bounds++
			continue
		}
		if !e.Priced || !near(float64(e.Peak), float64(r.Memory.Peak), 1e-12) || e.Feasible != r.Feasible {
			t.Fatalf("%s: eval %+v, Estimate peak %v feasible %v", st, e, r.Memory.Peak, r.Feasible)
		}
		if !e.Feasible {
			if e.Step != 0 || e.TotalBytes() != 0 {
				t.Fatalf("%s: out of memory keeps its peak only: %+v", st, e)
			}
			continue
		}
		if !near(float64(e.Step), float64(r.Time.Step), 1e-9) || !near(e.TokensPerS, r.TokensPerS, 1e-9) {
			t.Fatalf("%s: eval %+v, Estimate step %v peak %v", st, e, r.Time.Step, r.Memory.Peak)
		}
		for d, name := range strategies.DimOrder {
			if !near(float64(e.CommBytes[d]), float64(r.CommBytes[name]), 1e-12) {
				t.Fatalf("%s: %s bytes %v, Estimate %v", st, name, e.CommBytes[d], r.CommBytes[name])
			}
		}
	}
	if m.Name == "llama2-7b" && bounds == 0 {
		t.Error("expected candidates whose parameters alone do not fit")
	}
	if m.Name == "gpt-tiny6" && uneven == 0 {
		t.Error("the space should hold uneven pipelines (6 layers over 4 stages)")
	}
}

// The comm objective counts the mesh dimensions whose groups reach the slowest level the job
// spans: on 16 a100-80g (two nodes of 8) that is ib, and tp=8 stays on nvlink.
func TestSlowBytes(t *testing.T) {
	m, hw := preset(t, "gpt3-1.3b"), a100(t)
	f, err := strategies.ParseFix("tp=8,dp=2,pp=1,cp=1,mbs=1,zero=0,recompute=none,sp=off,overlap=on")
	if err != nil {
		t.Fatal(err)
	}
	ev, evals := evaluated(t, m, hw, 16, strategies.EnumerateOptions{GBS: 16, Fix: f})
	if len(evals) != 1 {
		t.Fatalf("%d candidates, want 1", len(evals))
	}
	e := evals[0]
	c := ev.Space.Candidates[0]
	if lv := ev.Levels(strategies.Mesh{PP: int(c.PP), DP: int(c.DP), CP: int(c.CP), TP: int(c.TP)}); lv[costmodel.IndexTP] != 0 || lv[costmodel.IndexDP] != 1 || lv[costmodel.IndexPP] != -1 {
		t.Errorf("levels %v: want tp on nvlink (0), dp on ib (1), no pp", lv)
	}
	if e.SlowBytes != e.CommBytes[costmodel.IndexDP] || e.CommBytes[costmodel.IndexTP] == 0 {
		t.Errorf("slow bytes %v, want the dp bytes %v alone (tp %v stays in the node)", e.SlowBytes, e.CommBytes[costmodel.IndexDP], e.CommBytes[costmodel.IndexTP])
	}
}

// fakeSpace is a space of n candidates (their knobs do not matter to Rank) with hand-set
// evaluations.
func fakeSpace(evals []Eval) *strategies.Space {
	s := &strategies.Space{Candidates: make([]strategies.Candidate, len(evals)), Searched: len(evals) + 5,
		Rejected: map[string]int{strategies.RejectBatch: 5}}
	for i := range s.Candidates {
		s.Candidates[i] = strategies.Candidate{PP: 1, DP: 1, CP: 1, TP: 1, MBS: int32(i + 1), VPP: 1, Overlap: true}
	}
	return s
}

func mk(step float64, peak float64, slow float64) Eval {
	return Eval{Priced: true, Feasible: true, Step: units.Seconds(step), Peak: units.Bytes(peak), SlowBytes: units.Bytes(slow)}
}

// Hand-ranked: (step, peak, slow bytes) of six candidates, one out of memory and one unpriced.
func TestRank(t *testing.T) {
	evals := []Eval{
		mk(10, 50, 3), // 0
		mk(8, 70, 5),  // 1: fastest
		mk(12, 20, 1), // 2: smallest, least comm
		mk(8, 70, 5),  // 3: equal to 1: later in the enumeration
		{Priced: true, Step: 1, Peak: 999},
		{},
		mk(9, 40, 2), // 6
	}
	space := fakeSpace(evals)
	cases := []struct {
		objective string
		top       []int
	}{
		{Time, []int{1, 3, 6, 0, 2}},
		{Memory, []int{2, 6, 0, 1, 3}},
		{Comm, []int{2, 6, 0, 1, 3}},
		// balanced: max(step/8, peak/20): 0: max(1.25, 2.5)=2.5; 1: 3.5; 2: max(1.5, 1)=1.5; 6: max(1.125, 2)=2.
		{Balanced, []int{2, 6, 0, 1, 3}},
	}
	for _, c := range cases {
		t.Run(c.objective, func(t *testing.T) {
			res, err := Rank(space, evals, c.objective, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Top, c.top) {
				t.Errorf("top %v, want %v", res.Top, c.top)
			}
			if res.Feasible != 5 || res.Fastest != 1 || res.Smallest != 2 {
				t.Errorf("feasible %d fastest %d smallest %d; want 5, 1, 2", res.Feasible, res.Fastest, res.Smallest)
			}
			want := map[string]int{strategies.RejectBatch: 5, RejectOOM: 1, RejectNotPriced: 1}
			if !reflect.DeepEqual(res.Rejected, want) {
				t.Errorf("rejected %v, want %v", res.Rejected, want)
			}
			// Front by step: 1 (8, 70), 6 (9, 40), 2 (12, 20); 0 (10, 50) is dominated by 6, 3 equals 1.
			if !reflect.DeepEqual(res.Front, []int{1, 6, 2}) {
				t.Errorf("front %v, want [1 6 2]", res.Front)
			}
		})
	}
	res, _ := Rank(space, evals, Time, 2)
	if !reflect.DeepEqual(res.Top, []int{1, 3}) {
		t.Errorf("top 2: %v", res.Top)
	}
	if _, err := Rank(space, evals, "speed", 1); err == nil {
		t.Error("unknown objective accepted")
	}
	if _, err := Rank(space, evals, Time, 0); err == nil {
		t.Error("top 0 accepted")
	}
}

// The Pareto front against a naive O(n^2) reference on a real search.
func TestParetoFrontNaive(t *testing.T) {
	_, evals := evaluated(t, tinyGPT(t), a100(t), 8, strategies.EnumerateOptions{GBS: 16})
	front := ParetoFront(evals)
	var naive []int
	for i, a := range evals {
		if !a.Priced || !a.Feasible {
			continue
		}
		dominated := false
		for j, b := range evals {
			if j == i || !b.Priced || !b.Feasible {
				continue
			}
			if (b.Step <= a.Step && b.Peak <= a.Peak && (b.Step < a.Step || b.Peak < a.Peak)) || (b.Step == a.Step && b.Peak == a.Peak && j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			naive = append(naive, i)
		}
	}
	got := map[int]bool{}
	for _, i := range front {
		got[i] = true
	}
	if len(front) != len(naive) {
		t.Fatalf("front has %d points, naive %d", len(front), len(naive))
	}
	for _, i := range naive {
		if !got[i] {
			t.Fatalf("naive front point %d missing", i)
		}
	}
	for k := 1; k < len(front); k++ {
		if evals[front[k]].Step < evals[front[k-1]].Step || evals[front[k]].Peak >= evals[front[k-1]].Peak {
			t.Fatal("front not by step ascending, memory descending")
		}
	}
}

// However the candidates are split into chunks, the evaluations and the ranking are the same.
func TestChunksSameResult(t *testing.T) {
	ev, _ := evaluated(t, tinyGPT(t), a100(t), 8, strategies.EnumerateOptions{GBS: 16})
	n := len(ev.Space.Candidates)
	whole := make([]Eval, n)
	ev.EvaluateRange(0, n, whole)
	want, _ := Rank(ev.Space, whole, Balanced, 7)
	for _, k := range []int{1, 2, 3, 7, n + 5} {
		out := make([]Eval, n)
		parts := chunks(n, k)
		covered := 0
		for j := len(parts) - 1; j >= 0; j-- { // in reverse: order of work must not matter
			c := parts[j]
			ev.EvaluateRange(c[0], c[1], out[c[0]:c[1]])
			covered += c[1] - c[0]
		}
		if covered != n || !reflect.DeepEqual(out, whole) {
			t.Fatalf("k=%d: chunked evaluation differs", k)
		}
		got, _ := Rank(ev.Space, out, Balanced, 7)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("k=%d: ranking differs", k)
		}
	}
}

func TestRerank(t *testing.T) {
	evals := []Eval{mk(10, 50, 0), mk(11, 40, 0), mk(12, 30, 0)}
	res, _ := Rank(fakeSpace(evals), evals, Time, 3)
	if got := Rerank(res, evals, []units.Seconds{14, 13, 0}); !reflect.DeepEqual(got, []int{2, 1, 0}) {
		t.Errorf("simulated 14, 13 and none (12): order %v, want [2 1 0]", got)
	}
	if got := Rerank(res, evals, []units.Seconds{14}); !reflect.DeepEqual(got, res.Top) {
		t.Errorf("one simulation re-ranks nothing: %v", got)
	}
}

// Label is complete (gbs, seq and the schedule always there, every option off its default) and
// parses back to the same strategy; vpp alone implies the interleaved schedule.
func TestLabel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"dp=8,gbs=64,seq=2048", "dp=8,mbs=1,gbs=64,seq=2048"},
		{"pp=4,dp=2,tp=8,mbs=2,gbs=32,seq=512,zero=1,recompute=full,sp=on,vpp=3,overlap=off",
			"pp=4,dp=2,tp=8,mbs=2,gbs=32,seq=512,zero=1,recompute=full,sp=on,schedule=interleaved,vpp=3,overlap=off"},
		{"pp=2,schedule=gpipe,gbs=8,seq=16,attn=flash,precision=fp32,optimizer=sgd,bucket_mb=4",
			"pp=2,mbs=1,gbs=8,seq=16,schedule=gpipe,precision=fp32,optimizer=sgd,attn=flash,bucket_mb=4"},
	} {
		st, err := strategies.Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := Label(st)
		if got != c.want {
			t.Errorf("Label(%s) = %s, want %s", c.in, got, c.want)
		}
		back, err := strategies.Parse(got)
		if err != nil || back != st {
			t.Errorf("Parse(%s) = %+v, %v; want %+v", got, back, err, st)
		}
	}
}

func explain(t *testing.T, m *model.Model, gpus int, objective string, o strategies.EnumerateOptions) (*Result, string) {
	t.Helper()
	ev, evals := evaluated(t, m, a100(t), gpus, o)
	res, err := Rank(ev.Space, evals, objective, 5)
	if err != nil {
		t.Fatal(err)
	}
	return res, strings.Join(Explain(ev, evals, res, res.Top), "\n")
}

// Llama-2 7B on one DGX A100 node: 16 bytes per parameter is 100 GiB, more than 80 GB, so plain
// data parallel cannot fit; memory and time pick different strategies, and each says why.
func TestExplainLlama7B(t *testing.T) {
	m := preset(t, "llama2-7b")
	rt, timeText := explain(t, m, 8, Time, strategies.EnumerateOptions{GBS: 64})
	rm, memText := explain(t, m, 8, Memory, strategies.EnumerateOptions{GBS: 64})
	if rt.Top[0] == rm.Top[0] {
		t.Fatal("time and memory objectives chose the same strategy")
	}
	for _, s := range []string{"Plain data parallel (every device a full replica, dp=8) does not fit", "100.4 GiB", "If memory is what matters", "Runner-up"} {
		if !strings.Contains(timeText, s) {
			t.Errorf("time explanation lacks %q:\n%s", s, timeText)
		}
	}
	for _, s := range []string{"objective memory", "The fastest strategy", "gives up that time"} {
		if !strings.Contains(memText, s) {
			t.Errorf("memory explanation lacks %q:\n%s", s, memText)
		}
	}
}

// On 16 devices (two nodes) the explanation places each dimension on its link.
func TestExplainHardware(t *testing.T) {
	f, _ := strategies.ParseFix("tp=8,pp=1,cp=1")
	_, text := explain(t, preset(t, "gpt3-1.3b"), 16, Time, strategies.EnumerateOptions{GBS: 32, Fix: f})
	for _, s := range []string{"a node holds 8 devices on nvlink", "Tensor parallel stays inside a node (tp=8 <= 8)", "over ib"} {
		if !strings.Contains(text, s) {
			t.Errorf("explanation lacks %q:\n%s", s, text)
		}
	}
}

// No candidate: the explanation says which rule and what to change.
func TestExplainEmpty(t *testing.T) {
	m := preset(t, "llama2-7b")
	cases := []struct {
		name string
		gpus int
		o    strategies.EnumerateOptions
		want []string
	}{
		{"tp=3 against 32 heads", 24, strategies.EnumerateOptions{GBS: 24, Fix: mustFix(t, "tp=3")}, []string{"tp must divide the 32 heads", "tp in {1,2,4,8,16,32}"}},
		{"batch not divisible", 8, strategies.EnumerateOptions{GBS: 7, Fix: mustFix(t, "tp=1,pp=1,cp=1")}, []string{"dp x mbs must divide the global batch 7"}},
		{"out of memory", 1, strategies.EnumerateOptions{GBS: 8}, []string{"No strategy fits in 74.5 GiB", "the smallest"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, text := explain(t, m, c.gpus, Time, c.o)
			if res.Feasible != 0 || len(res.Top) != 0 {
				t.Fatalf("feasible %d", res.Feasible)
			}
			for _, s := range c.want {
				if !strings.Contains(text, s) {
					t.Errorf("explanation lacks %q:\n%s", s, text)
				}
			}
		})
	}
	// More devices than the model can use: 4 heads, 2 layers, 32 tokens, batch 8 on 65536.
	tiny := preset(t, "gpt-tiny")
	_, text := explain(t, tiny, 1<<16, Time, strategies.EnumerateOptions{})
	if !strings.Contains(text, "More devices than the model can use") {
		t.Errorf("explanation lacks the device limit:\n%s", text)
	}
}

// SmallestPeak finds the least exact memory per device although most peaks of a space that does
// not fit are lower bounds: GPT-3 175B on 8 A100s, against every candidate priced exactly.
func TestSmallestPeak(t *testing.T) {
	ev, evals := evaluated(t, preset(t, "gpt3-175b"), a100(t), 8, strategies.EnumerateOptions{GBS: 8})
	bounds := 0
	want := -1
	var least units.Bytes
	for i, e := range evals {
		if !e.Priced {
			continue
		}
		if e.Feasible {
			t.Fatalf("%s fits", ev.Space.Strategy(i))
		}
		if e.PeakBound {
			bounds++
		}
		tot, err := ev.Derived.Totals(ev.Space.Strategy(i))
		if err != nil {
			t.Fatal(err)
		}
		if want < 0 || tot.Memory.Peak < least {
			want, least = i, tot.Memory.Peak
		}
	}
	if bounds == 0 {
		t.Fatal("no peak is a bound: the test checks nothing")
	}
	got := ev.SmallestPeak(evals, nil)
	if got != want || evals[got].Peak != least || evals[got].PeakBound {
		t.Fatalf("SmallestPeak %d (%v, bound %v), want %d (%v)", got, evals[got].Peak, evals[got].PeakBound, want, least)
	}
}

func mustFix(t *testing.T, s string) strategies.Fix {
	t.Helper()
	f, err := strategies.ParseFix(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// With overlap off the simulator and the closed form agree exactly (to float rounding), on a
// pipeline too; with overlap on the simulator is never slower while what runs beside the compute
// costs it nothing (the overlap slowdown can make a pipeline stage's overlapped buckets delay
// the gradient it sends back, and overlap lose).
func TestSimulateAgreesWithEstimate(t *testing.T) {
	m, hw := preset(t, "gpt-tiny"), a100(t)
	hw.Efficiency.OverlapSlowdown = 0
	for _, s := range []string{"dp=2,tp=2,mbs=2,gbs=8", "pp=2,dp=2,mbs=1,gbs=8", "dp=4,zero=3,gbs=8"} {
		off, _ := strategies.Parse(s + ",overlap=off")
		sim, err := Simulate(m, hw, off)
		if err != nil {
			t.Fatal(err)
		}
		r, err := costmodel.Estimate(m, off, hw)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(sim/r.Time.Step)-1) > 1e-9 {
			t.Errorf("%s: simulated %v, closed form %v", off, sim, r.Time.Step)
		}
		on, _ := strategies.Parse(s)
		if son, _ := Simulate(m, hw, on); son > sim*(1+1e-12) {
			t.Errorf("%s: overlap on simulates at %v, off at %v", on, son, sim)
		}
		if n := SimEvents(m, on); n < 1000 {
			t.Errorf("SimEvents %d", n)
		}
	}
}

// Below ZeRO-3 overlap changes time, never memory: what lets EvaluateRange keep an
// out-of-memory candidate's twin without pricing it. Under ZeRO-3 the overlapping twin holds
// more (its prefetched units' parameters), never less.
func TestOverlapKeepsMemory(t *testing.T) {
	m, hw := preset(t, "gpt3-1.3b"), a100(t)
	space, err := strategies.Enumerate(m, 8, strategies.EnumerateOptions{GBS: 32})
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for i := 1; i < len(space.Candidates); i += 7 { // a sample keeps the test fast
		if !isTwin(space.Candidates[i-1], space.Candidates[i]) {
			continue
		}
		a, err1 := costmodel.Estimate(m, space.Strategy(i-1), hw)
		b, err2 := costmodel.Estimate(m, space.Strategy(i), hw)
		if err1 != nil || err2 != nil {
			continue
		}
		pairs++
		if space.Candidates[i].ZeRO == 3 {
			if a.Memory.Peak < b.Memory.Peak {
				t.Fatalf("%s holds less than its twin without overlap: %+v vs %+v", space.Strategy(i-1), a.Memory, b.Memory)
			}
			continue
		}
		if a.Memory != b.Memory {
			t.Fatalf("%s and its overlap twin differ in memory: %+v vs %+v", space.Strategy(i-1), a.Memory, b.Memory)
		}
	}
	if pairs < 50 {
		t.Fatalf("only %d pairs checked", pairs)
	}
}

// chunks splits n candidates into at most k contiguous ranges of nearly equal size, in order.
func chunks(n, k int) [][2]int {
	if k < 1 {
		k = 1
	}
	if k > n {
		k = max(n, 1)
	}
	out := make([][2]int, 0, k)
	for i := 0; i < k; i++ {
		out = append(out, [2]int{i * n / k, (i + 1) * n / k})
	}
	return out
}
