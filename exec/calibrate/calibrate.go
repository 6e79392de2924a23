package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/tpsim/tpsim/exec/kernels/gemm"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// seed is the seed of every input the calibration generates (no global random source).
const seed = 20240601

// Options configure Run.
type Options struct {
	// Quick measures fewer points for shorter times (about 2 s instead of 15 s on 2 cores): for
	// tests and a first look; the profile is coarser and says so in its notes.
	Quick bool
	// Progress receives one line per phase as the calibration runs; nil discards them.
	Progress io.Writer
}

// Report is everything Run measured and fitted, for the table `tpsim calibrate` prints.
type Report struct {
	Machine  Machine       `json:"machine"`
	Date     string        `json:"date"`
	Quick    bool          `json:"quick"`
	Duration units.Seconds `json:"duration_s"`

	GEMM    []GEMMPoint `json:"gemm"`
	GEMMFit GEMMFit     `json:"gemm_fit"`

	Elementwise []ElemPoint   `json:"elementwise"`
	ElemFit     ElemFit       `json:"elementwise_fit"`
	Bookkeeping Bookkeeping   `json:"bookkeeping"`
	Checks      []KernelCheck `json:"checks"`

	Collectives []CollPoint `json:"collectives"`
	CollFit     CollFit     `json:"collective_fit"`

	Contention []ContentionPoint `json:"contention"`
	// ContentionAdds is the number of adds in the mix, after its one GEMM.
	ContentionAdds int `json:"contention_adds"`
	// Meetings are a blocking collective's cost beyond itself when 2..8 ranks arrive from
	// computing.
	Meetings []Meeting `json:"meetings"`

	Memory       units.Bytes `json:"memory_bytes"`
	MemorySource string      `json:"memory_source"`
	// OtherCPU is the share of the machine's CPU time that other processes (or, in a virtual
	// machine, other guests: steal time) used while the calibration ran; -1 when unknown (it is
	// read from /proc on Linux). The figures are this machine's as shared with them.
	OtherCPU float64  `json:"other_cpu_share"`
	Notes    []string `json:"notes"`
}

// BusyShare is the share of the machine's CPU that other processes may use while tpsim measures
// before the measurement counts as taken under load: above it the calibration's notes and source
// say so, its profile is not cached as a full one (SaveCache), and compare warns. 10%: on the
// 2-core machines tpsim was developed on, one other busy core (50%) moved the measured step times
// by 30-45%, and idle periods stayed below 5% (the figures, measured with tpsim compare).
const BusyShare = 0.1

// Loaded reports whether other processes used more than BusyShare of the CPU while the
// calibration ran (false when that could not be read).
func (r *Report) Loaded() bool { return r.OtherCPU > BusyShare }

// plan is what Run measures and for how long.
type plan struct {
	gemm                  []gemmShape
	gemmS                 sampler
	elemSizes, allocSizes []int
	elemS, bookS, checkS  sampler
	coll                  collPlan
	collS                 sampler
	maxK                  int
	parts                 []int // contention ks at which the GEMM and elementwise halves are measured
	contS                 sampler
}

func defaultPlan() plan {
	return plan{
		gemm:       gemmGrid,
		gemmS:      sampler{60 * time.Millisecond, 15},
		elemSizes:  elemSizes,
		allocSizes: allocSizes,
		elemS:      sampler{40 * time.Millisecond, 5},
		bookS:      sampler{20 * time.Millisecond, 5},
		checkS:     sampler{20 * time.Millisecond, 10},
		coll: collPlan{ranks: []int{2, 3, 4, 5, 6, 7, 8}, elems: []int{1, 64, 1 << 10, 1 << 14, 1 << 18, 1 << 21},
			bigElems: []int{1 << 23}, bigRanks: []int{2, 4, 8}},
		collS: sampler{40 * time.Millisecond, 5},
		maxK:  8,
		parts: []int{2, 4, 8},
		contS: sampler{10 * time.Millisecond, 9},
	}
}

func quickPlan() plan {
	var shapes []gemmShape
	for _, i := range quickGEMM {
		shapes = append(shapes, gemmGrid[i])
	}
	return plan{
		gemm:       shapes,
		gemmS:      sampler{15 * time.Millisecond, 3},
		elemSizes:  quickElemSizes,
		allocSizes: allocSizes[:4],
		elemS:      sampler{6 * time.Millisecond, 3},
		bookS:      sampler{5 * time.Millisecond, 3},
		checkS:     sampler{5 * time.Millisecond, 3},
		coll:       collPlan{ranks: []int{2, 4, 8}, elems: []int{1, 1 << 10, 1 << 16, 1 << 20}},
		collS:      sampler{8 * time.Millisecond, 3},
		maxK:       8,
		contS:      sampler{6 * time.Millisecond, 3},
	}
}

// Run measures this machine through exec's kernels and collectives, each in isolation, and
// returns the fitted "host" profile (it satisfies hardware.Validate) and the report of what was
// measured. It never runs a model's training step. It returns ctx's error if ctx is done first.
func Run(ctx context.Context, o Options) (*hardware.Hardware, *Report, error) {
	p := defaultPlan()
	if o.Quick {
		p = quickPlan()
	}
	return run(ctx, p, o)
}

func run(ctx context.Context, p plan, o Options) (*hardware.Hardware, *Report, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	say := func(format string, a ...any) { fmt.Fprintf(progress, "calibrate: "+format+"\n", a...) }
	start := time.Now()
	cpu0 := SampleCPU()
	r := &Report{Machine: Fingerprint(), Date: start.UTC().Format("2006-01-02 15:04 UTC"), Quick: o.Quick}
	phase := func(name string, fn func() error) error {
		runtime.GC() // start each phase without the previous one's garbage
		t := time.Now()
		say("%s ...", name)
		if err := fn(); err != nil {
			return err
		}
		say("%s done in %.1f s", name, time.Since(t).Seconds())
		return nil
	}
	var err error
	if err = phase(fmt.Sprintf("matrix multiply, %d shapes", len(p.gemm)), func() error {
		r.GEMM, err = measureGEMM(ctx, p.gemm, p.gemmS, true)
		return err
	}); err != nil {
		return nil, nil, err
	}
	if err = phase(fmt.Sprintf("elementwise bandwidth, %d sizes, and exec's per-op bookkeeping", len(p.elemSizes)), func() error {
		if r.Elementwise, err = measureElementwise(ctx, p.elemSizes, p.elemS); err != nil {
			return err
		}
		if r.Bookkeeping, err = measureBookkeeping(ctx, p.allocSizes, p.bookS); err != nil {
			return err
		}
		r.Checks, err = measureChecks(ctx, p.checkS)
		return err
	}); err != nil {
		return nil, nil, err
	}
	r.ElemFit = fitElementwise(r.Elementwise)
	r.GEMMFit = fitGEMM(r.GEMM, float64(r.ElemFit.KernelOverhead))
	for i := range r.Checks {
		r.Checks[i].price(r.GEMMFit, r.ElemFit, r.Machine.NumCPU)
	}
	say("  GEMM %.3g GFLOP/s asymptotic (fit rms %.0f%%); elementwise %.3g GB/s + %.3g µs per op (fit rms %.0f%%)",
		float64(r.GEMMFit.Rate)/1e9, 100*r.GEMMFit.RMSRelErr, float64(r.ElemFit.Bandwidth)/1e9, float64(r.ElemFit.Overhead)*1e6, 100*r.ElemFit.RMSRelErr)

	if err = phase(fmt.Sprintf("collectives on %v goroutine ranks", p.coll.ranks), func() error {
		r.Collectives, err = measureCollectives(ctx, p.coll, p.collS, func(n int) { say("  %d ranks", n) })
		return err
	}); err != nil {
		return nil, nil, err
	}
	r.CollFit = fitCollectives(r.Collectives)
	say("  latency %.3g µs per ring step, bandwidth %.3g GB/s (fit rms %.0f%%)",
		float64(r.CollFit.Latency)*1e6, float64(r.CollFit.Bandwidth)/1e9, 100*r.CollFit.RMSRelErr)

	if err = phase(fmt.Sprintf("contention, 1..%d goroutines at once", p.maxK), func() error {
		if r.Contention, r.ContentionAdds, err = measureContentionAt(ctx, p.maxK, nil, p.parts, p.contS, say); err != nil {
			return err
		}
		r.Meetings, err = measureMeetingsAt(ctx, p.maxK, nil, p.contS, say)
		return err
	}); err != nil {
		return nil, nil, err
	}

	mem, how, ok := physicalMemory()
	if !ok {
		mem, how = fallbackMemory, "fallback"
	}
	r.Memory, r.MemorySource = units.Bytes(mem), how
	r.OtherCPU = OtherCPUShare(cpu0, SampleCPU())
	r.Duration = units.Seconds(time.Since(start).Seconds())
	h := profile(r)
	r.Notes = notes(r, h)
	h.Notes = strings.Join(r.Notes, " ")
	if err := h.Validate(); err != nil {
		// The fits keep every figure positive, but a degenerate measurement (an almost flat
		// collective slope on a machine busy with other work, say) can still put one outside
		// hardware's ranges: say which, and how to get a usable profile, rather than cache it.
		return nil, nil, fmt.Errorf("calibrate: the measured profile is out of range (%v); the measurements were probably disturbed by other work on this machine: rerun 'tpsim calibrate' when it is quieter", err)
	}
	say("done in %.1f s", float64(r.Duration))
	return h, r, nil
}

// positive returns v when it is a finite positive number, else fallback.
func positive(v, fallback float64) float64 {
	if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return v
	}
	return fallback
}

// sig rounds v to 4 significant digits: the measurements are good to a few percent, and a
// profile that prints 20811413568.102207 FLOP/s claims more.
func sig(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// profile builds the host Hardware from the fits, rounded by sig.
func profile(r *Report) *hardware.Hardware {
	g, e, c := r.GEMMFit, r.ElemFit, r.CollFit
	// Floors that keep a degenerate fit valid: the best rate any point reached.
	var bestBW, bestLink, minStep float64
	for _, p := range r.Elementwise {
		bestBW = max(bestBW, float64(p.Bytes)/float64(p.AsExec))
	}
	minStep = math.Inf(1)
	for _, p := range r.Collectives {
		st, sent := ringShape(p)
		bestLink = max(bestLink, sent/float64(p.Time))
		minStep = min(minStep, float64(p.Time)/st)
	}
	bw := sig(positive(float64(e.Bandwidth), bestBW))
	linkBW := sig(positive(float64(c.Bandwidth), bestLink))
	lat := sig(positive(float64(c.Latency), minStep))
	// The products were timed on one core: the machine's peak is that core's times the cores.
	peak := units.FLOPsPerSecond(sig(float64(r.Machine.NumCPU) * positive(float64(g.Peak), 1e9)))

	slow := slowdownTable(r.Contention, func(p ContentionPoint) float64 { return p.Synced })
	unmet := slowdownTable(r.Contention, func(p ContentionPoint) float64 { return p.Mix })
	hardware.CapUnmet(unmet, slow)
	fp := r.Machine
	h := &hardware.Hardware{
		Name: "host",
		Device: hardware.Device{
			Name:         fmt.Sprintf("%s (%d cores)", fp.CPU, fp.NumCPU),
			Peak:         map[string]units.FLOPsPerSecond{"fp32": peak, "bf16": peak},
			Memory:       r.Memory,
			MemBandwidth: units.BytesPerSecond(bw),
		},
		Cores:            fp.NumCPU,
		GEMMParallelMACs: gemm.ParallelMACs,
		MeetOverhead:     meetOverheads(r.Meetings),
		Slowdown:         slow,
		UnmetSlowdown:    unmet,
		Levels: []hardware.Level{{Name: "host", Size: 0, Bandwidth: units.BytesPerSecond(linkBW), Latency: units.Seconds(lat),
			Efficiency: 1}},
		Efficiency: hardware.Efficiency{GEMMMax: min(1, sig(positive(g.Max, 1))), GEMMHalfFLOPs: units.FLOPs(sig(float64(g.HalfFLOPs))), MemMax: 1,
			OpOverhead: units.Seconds(sig(max(0, float64(e.Overhead))))},
	}
	for _, p := range r.GEMM {
		h.Efficiency.GEMMTimes = append(h.Efficiency.GEMMTimes, p.Product)
	}
	h.Efficiency.KernelRates = kernelRates(r.Checks)
	mode := ""
	if r.Quick {
		mode = ", quick mode"
	}
	if r.Loaded() {
		mode += fmt.Sprintf(", under load: other processes used %.0f%% of the CPU", 100*r.OtherCPU)
	}
	h.Source = fmt.Sprintf("measured by tpsim calibrate (format %d%s) on %s, %s, in %.1f s: exec's float32 kernels (package gemm's AVX2 GEMM) and goroutine collectives (exec/comm), each in isolation; no training step of any model was run. Each point is the median of several repetitions of a fixed time budget.",
		FormatVersion, mode, fp, r.Date, float64(r.Duration))
	h.Sources = sources(r, h)
	return h
}

// slowdownTable is a profile's slowdown by number of ranks from one ratio of the contention
// points: at least 1, exactly 1 for one rank, made non-decreasing (monotone) and rounded by
// round3.
func slowdownTable(pts []ContentionPoint, ratio func(ContentionPoint) float64) []float64 {
	out := make([]float64, len(pts))
	for i, p := range pts {
		out[i] = max(1, ratio(p))
	}
	if len(out) > 0 {
		out[0] = 1
	}
	out = monotone(out)
	for i := range out {
		out[i] = round3(out[i])
	}
	return out
}

// round3 rounds a slowdown to three decimals, all its measurement can say.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// meetOverheads is hardware.MeetOverhead from the meetings: entry k-1 for k ranks, 0 for one.
func meetOverheads(ms []Meeting) []units.Seconds {
	if len(ms) == 0 {
		return nil
	}
	out := make([]units.Seconds, len(ms)+1)
	for _, m := range ms {
		out[m.K-1] = units.Seconds(sig(float64(m.Overhead)))
	}
	return out
}

// kernelRates are the checks' elements per second (hardware.Efficiency.KernelRates).
func kernelRates(checks []KernelCheck) map[hardware.Kernel]float64 {
	out := map[hardware.Kernel]float64{}
	for _, c := range checks {
		if c.Key != "" && c.Time > 0 {
			out[c.Key] = sig(float64(c.Elems) / float64(c.Time))
		}
	}
	return out
}

// KernelRates times the kernels the profile prices by their rates (the checks: GELU, norms,
// attention, losses, optimizer steps, at gpt-tiny and seed-mlp sizes) as calibrate does,
// interleaved, in about 0.5 s, for compare to price a run with kernels timed seconds before it
// rather than when the profile was cached. It returns ctx's error when ctx is done first.
func KernelRates(ctx context.Context) (map[hardware.Kernel]float64, error) {
	checks, err := measureChecks(ctx, defaultPlan().checkS)
	if err != nil {
		return nil, err
	}
	return kernelRates(checks), nil
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// fitText is "rms 12%, max -30% over 24 points".
func fitText(f Fit) string {
	return fmt.Sprintf("relative error rms %s, max %+.0f%% over %d points", pct(f.RMSRelErr), 100*f.MaxRelErr, f.Points)
}

func sources(r *Report, h *hardware.Hardware) map[string]string {
	g, e, c, b := r.GEMMFit, r.ElemFit, r.CollFit, r.Bookkeeping
	s := map[string]string{}
	s["device.peak_flops.fp32"] = fmt.Sprintf("measured: kernels.MatMul on one core (gemm.SetThreads(1); dense data in [0.5, 1.5), beta 1 for the backward-weight products as exec runs them) on %d shapes: the seed-mlp and gpt-tiny products and larger ones up to 1024x1024x1024; time(f) = f/rate + intercept fitted by least squares on relative time error (%s); peak = %d cores x max(fitted rate %v, best measured %v)",
		len(r.GEMM), fitText(g.Fit), r.Machine.NumCPU, g.Rate, g.Best)
	s["device.peak_flops.bf16"] = "set equal to fp32: exec computes in float32 whatever a strategy's precision says, so a mixed-precision strategy on host is priced as it runs"
	if r.MemorySource == "fallback" {
		s["device.memory_bytes"] = fmt.Sprintf("assumed %v: the physical memory could not be read on %s; edit it to this machine's RAM", units.Bytes(fallbackMemory), r.Machine.GOOS)
	} else {
		s["device.memory_bytes"] = "physical RAM: " + r.MemorySource
	}
	s["device.mem_bandwidth_bytes_per_s"] = fmt.Sprintf("measured: kernels.Add (dst = a + b, a streaming, memory-bound loop) as exec runs an op (output allocated with make, exec's map and allocator bookkeeping, two clock reads and a trace event) on %d sizes from %v to %v per buffer; time = op_overhead + bytes/bandwidth fitted by least squares on relative time error (%s), bytes as the cost model counts them (12 per element); the kernel alone fits %v + %v per call (%s). ReLU, measured beside it, is not memory-bound (see notes)",
		len(r.Elementwise)/len(elemKernels), units.Bytes(4*r.Elementwise[0].Elems), units.Bytes(4*r.Elementwise[len(r.Elementwise)-1].Elems),
		fitText(e.Fit), e.KernelBW, e.KernelOverhead, fitText(e.KernelFit))
	s["efficiency.mem_max_fraction"] = "1: mem_bandwidth_bytes_per_s is the achieved rate fitted, not a datasheet figure"
	s["efficiency.op_overhead_s"] = fmt.Sprintf("measured: the fixed time of the elementwise fit above, as exec runs ops; it covers exec's per-op bookkeeping (measured alone: %v for the values map, allocator maps, two time.Since and a trace event), a fresh allocation's fixed cost (%v, zeroing at %v; exec recycles buffers, clearing them, which the bandwidth absorbs) and a kernel call (%v)",
		b.Fixed, b.AllocFixed, b.AllocBandwidth, e.KernelOverhead)
	s["efficiency.gemm_max_fraction"] = fmt.Sprintf("fitted one-core GEMM rate %v / one core's peak %v", g.Rate, g.Peak)
	s["efficiency.gemm_times"] = fmt.Sprintf("measured: each of the %d products above alone on one core, median time per call; the cost model prices a product of one of these shapes at its time instead of the fitted line (compare adds the products of the model it runs)", len(r.GEMM))
	s["efficiency.gemm_half_flops"] = fmt.Sprintf("(fitted GEMM intercept %v - the elementwise kernel call %v that op_overhead_s already charges) x fitted rate %v; floor 1 FLOP", g.Intercept, e.KernelOverhead, g.Rate)
	ranks := map[int]bool{}
	var lo, hi units.Bytes = math.MaxFloat64, 0
	for _, p := range r.Collectives {
		ranks[p.P] = true
		lo, hi = min(lo, p.Bytes), max(hi, p.Bytes)
	}
	coll := fmt.Sprintf("measured: exec/comm ring all_reduce, all_gather and reduce_scatter on %v goroutine ranks, %v to %v (the full tensor), slowest rank, median over repetitions; one level t = steps x latency_s + fraction x n/bandwidth (all-reduce 2(p-1) steps and 2(p-1)/p, the others p-1 and (p-1)/p) fitted to all %d points by least squares on relative time error: %s; per kind and group size in the calibration report",
		sortedInts(ranks), lo, hi, len(r.Collectives), fitText(c.Fit))
	s["levels.host.devices"] = "0 = unbounded: one level joins every goroutine rank of this machine"
	s["levels.host.bandwidth_bytes_per_s"] = coll
	s["levels.host.latency_s"] = coll
	s["levels.host.efficiency"] = "1: bandwidth_bytes_per_s is the achieved rate fitted"
	s["cores"] = "runtime.NumCPU()"
	if len(r.Meetings) > 0 {
		var per []string
		for _, m := range r.Meetings {
			per = append(per, fmt.Sprintf("%d: %v (%v - %v - %v)", m.K, m.Overhead, m.Synced, m.Alone, m.Collective))
		}
		s["meet_overhead_s"] = fmt.Sprintf("measured: k = 2..%d goroutine ranks each running %d kernels.Add of %d floats (%v alone) then an exec/comm all-reduce of one float: per meeting, work then all-reduce, less the work of the k ranks at once without meeting and the all-reduce back to back; median of repetitions interleaved over k (entry k-1; k: overhead (synced - alone - collective)): %s",
			len(r.Meetings)+1, r.Meetings[0].Adds, contElems, meetWork, strings.Join(per, ", "))
	}
	s["gemm_parallel_macs"] = "exec/kernels/gemm.ParallelMACs: from this many multiply-adds a product splits over the cores its rank has (measured there against one core in exec's pattern), smaller ones run on one core"
	for _, c := range r.Checks {
		if c.Key != "" {
			s["efficiency.kernel_elems_per_s."+string(c.Key)] = fmt.Sprintf("measured: %s (%s) alone, %d elements in %v (median of repetitions): elements per second, as program.Op.Elems counts them", c.Name, c.What, c.Elems, c.Time)
		}
	}
	var per []string
	for _, p := range r.Contention {
		per = append(per, fmt.Sprintf("%.2f", p.Synced))
	}
	s["slowdown"] = fmt.Sprintf("measured: k = 1..%d goroutine ranks of an exec/comm world each running the same mix (one kernels.MatMul %dx%dx%d on one core, then %d kernels.Add of %d floats, about as long alone) and meeting in an all-reduce of one float after each, as exec's ranks meet at collectives; the median over repetitions interleaved over k of the wall time with k over the wall time alone timed just before it (%s), made non-decreasing by isotonic regression (more goroutines on the same cores are never faster)",
		len(r.Contention), contM, contK, contN, r.ContentionAdds, contElems, strings.Join(per, ", "))
	var unmet []string
	for _, p := range r.Contention {
		unmet = append(unmet, fmt.Sprintf("%.2f", p.Mix))
	}
	s["slowdown_unmet"] = fmt.Sprintf("measured: the same mix on k = 1..%d goroutines at once without meeting, wall time with k over wall time alone (%s), made non-decreasing and at most slowdown; the costmodel uses it for ranks that meet at no dp, cp or tp collective (a pipeline)",
		len(r.Contention), strings.Join(unmet, ", "))
	return s
}

// notes are the caveats of the profile, in numbers.
func notes(r *Report, h *hardware.Hardware) []string {
	var out []string
	fp := r.Machine
	if r.Quick {
		out = append(out, "Quick calibration: fewer points and shorter timings; run `tpsim calibrate` without --quick for the full profile.")
	}
	if r.OtherCPU > BusyShare {
		out = append(out, fmt.Sprintf("Other processes used %.0f%% of the machine's CPU time while it was calibrated: the figures are slower and noisier than this machine alone; run `tpsim calibrate` again when it is idle.", 100*r.OtherCPU))
	}
	out = append(out, fmt.Sprintf("Ranks are goroutines sharing %d cores: when k ranks compute at once every op takes slowdown[k-1] times longer (%s at k=%d).",
		fp.NumCPU, fmt.Sprintf("%.2f", h.Slowdown[len(h.Slowdown)-1]), len(h.Slowdown)))
	// GEMM.
	g := r.GEMMFit
	var minR, maxR float64 = math.Inf(1), 0
	for _, p := range r.GEMM {
		minR, maxR = min(minR, p.Rate), max(maxR, p.Rate)
	}
	out = append(out, fmt.Sprintf("Matrix products reach %.3g to %.3g GFLOP/s on one core; one line time = f/%.3g GFLOP/s + %v fits them with %s, so the profile keeps each product's measured time (efficiency.gemm_times) and prices other shapes on the line.",
		minR/1e9, maxR/1e9, float64(g.Rate)/1e9, g.Intercept, fitText(g.Fit)))
	var split []string
	for _, p := range r.GEMM {
		if p.Split > 0 {
			split = append(split, fmt.Sprintf("%s %.2fx", p.Shape, float64(p.Time)/float64(p.Split)))
		}
	}
	if len(split) > 0 {
		out = append(out, fmt.Sprintf("Products of at least %d multiply-adds split over the cores: on all %d cores against one, %s; the cost model prices a split product at its one-core time over the cores its rank has.",
			gemm.ParallelMACs, fp.NumCPU, strings.Join(split, ", ")))
	}
	out = append(out, "bf16 is priced as fp32: exec computes in float32.")
	// Elementwise: in cache and out of it, and the kernels the bandwidth does not describe.
	var small, large *ElemPoint
	for i := range r.Elementwise {
		p := &r.Elementwise[i]
		if !fittedKernel(p.Kernel) {
			continue
		}
		if small == nil && p.Elems >= 1<<14 {
			small = p
		}
		large = p
	}
	if small != nil && large != nil && small != large {
		rate := func(p *ElemPoint) float64 { return float64(p.Bytes) / float64(p.AsExec) / 1e9 }
		out = append(out, fmt.Sprintf("Elementwise adds as exec runs them (with the output's allocation: fresh pages are faulted in above a few MiB) move %.3g GB/s at %v per buffer and %.3g GB/s at %v; the fitted %.3g GB/s and %v per op match them with %s.",
			rate(small), units.Bytes(4*small.Elems), rate(large), units.Bytes(4*large.Elems), float64(r.ElemFit.Bandwidth)/1e9, r.ElemFit.Overhead, fitText(r.ElemFit.Fit)))
	}
	for _, k := range r.ElemFit.ByKernel {
		if fittedKernel(k.Kernel) {
			continue
		}
		var ratios []float64
		for _, p := range r.Elementwise {
			if p.Kernel == k.Kernel {
				ratios = append(ratios, float64(p.AsExec)/float64(p.Model))
			}
		}
		if m := median(ratios); m > 1.5 || m < 1/1.5 {
			out = append(out, fmt.Sprintf("%s on random signs is not memory-bound (a mispredicted branch per element or so): as exec runs it, %v + %v per op, a median %.2gx the profile's price.",
				k.Kernel, k.Overhead, k.Bandwidth, m))
		}
	}
	var slowKernels []string
	for _, c := range r.Checks {
		if c.Ratio > 2 {
			slowKernels = append(slowKernels, fmt.Sprintf("%s %.2gx", c.Name, c.Ratio))
		}
	}
	if len(slowKernels) > 0 {
		out = append(out, fmt.Sprintf("Some kernels are slower than the roofline of the bandwidth and peak above (scalar tanh, exp and sqrt): %s; the cost model prices them at their measured rates (efficiency.kernel_elems_per_s), when those are slower than the roofline.",
			strings.Join(slowKernels, ", ")))
	}
	// Collectives: does one level fit every group size?
	c := r.CollFit
	var in, over []CollPFit
	for _, f := range c.ByP {
		if f.P <= fp.NumCPU {
			in = append(in, f)
		} else {
			over = append(over, f)
		}
	}
	if len(in) > 0 && len(over) > 0 {
		a, b := in[len(in)-1], over[len(over)-1]
		ratio := float64(a.Bandwidth) / float64(b.Bandwidth)
		if ratio > 1.5 || ratio < 1/1.5 || c.RMSRelErr > 0.3 {
			out = append(out, fmt.Sprintf("One level does not fit every group size: alone, %d ranks (no more than the %d cores) fit %v per step and %v, %d ranks (sharing cores) %v and %v; the profile's level is the least-squares compromise (%s). Collectives of more ranks than cores are slower than priced at large sizes.",
				a.P, fp.NumCPU, a.Latency, a.Bandwidth, b.P, b.Latency, b.Bandwidth, fitText(c.Fit)))
		}
	}
	if len(c.ByKind) > 1 {
		lo, hi := c.ByKind[0], c.ByKind[0]
		for _, k := range c.ByKind {
			if k.Bandwidth < lo.Bandwidth {
				lo = k
			}
			if k.Bandwidth > hi.Bandwidth {
				hi = k
			}
		}
		if float64(hi.Bandwidth) > 1.5*float64(lo.Bandwidth) {
			var parts []string
			for _, k := range c.ByKind {
				parts = append(parts, fmt.Sprintf("%s %v per step and %v", k.Kind, k.Latency, k.Bandwidth))
			}
			out = append(out, fmt.Sprintf("The kinds of collective move bytes at different rates (each fitted alone: %s): all-gather only copies chunks, reduce-scatter also adds them; one level prices them all alike.",
				strings.Join(parts, "; ")))
		}
	}
	if r.MemorySource == "fallback" {
		out = append(out, fmt.Sprintf("The physical memory could not be read; device.memory_bytes is an assumed %v.", units.Bytes(fallbackMemory)))
	}
	return out
}
