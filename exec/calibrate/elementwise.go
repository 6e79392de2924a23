package calibrate

import (
	"context"
	"time"

	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/units"
)

// ElemPoint is one elementwise kernel at one size, alone and as exec runs it.
type ElemPoint struct {
	Kernel string `json:"kernel"` // "add" (dst = a + b) or "relu"
	Elems  int    `json:"elems"`
	// Bytes is what the cost model charges the op: each float32 read or written once (add 3 x 4n,
	// relu 2 x 4n), as program.Lower sets Op.MemBytes.
	Bytes units.Bytes `json:"bytes"`
	// Kernel is the kernel call alone; AsExec adds what exec does around every op: the output
	// allocated with make, map lookups, allocator accounting, two clock reads and a trace event.
	KernelTime units.Seconds `json:"kernel_s"`
	AsExec     units.Seconds `json:"as_exec_s"`
	// Model is the profile's price, OpOverhead + Bytes/MemBandwidth; RelErr is
	// (model - as_exec)/as_exec.
	Model  units.Seconds `json:"model_s"`
	RelErr float64       `json:"rel_err"`
}

// ElemFit is the line time = Overhead + bytes/Bandwidth fitted to the streaming kernel (add) as
// exec runs it: the profile's figures. KernelBW and KernelOverhead are the same line for the
// kernel alone; ByKernel fits each kernel measured, as exec runs it, on its own.
type ElemFit struct {
	Bandwidth      units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	Overhead       units.Seconds        `json:"overhead_s"`
	KernelBW       units.BytesPerSecond `json:"kernel_bandwidth_bytes_per_s"`
	KernelOverhead units.Seconds        `json:"kernel_overhead_s"`
	KernelFit      Fit                  `json:"kernel_fit"`
	ByKernel       []ElemKernelFit      `json:"by_kernel"`
	Fit
}

// ElemKernelFit is the line fitted to one kernel as exec runs it.
type ElemKernelFit struct {
	Kernel    string               `json:"kernel"`
	Bandwidth units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	Overhead  units.Seconds        `json:"overhead_s"`
	Fit
}

// Bookkeeping is exec's cost around an op, measured apart from any kernel.
type Bookkeeping struct {
	// Fixed is one op's bookkeeping without allocation or kernel: an output looked up in and
	// added to the values map and removed again, the allocator's per-category maps updated twice,
	// two time.Since calls and one trace event appended (exec/rank.go exec, value and release;
	// exec/alloc.go).
	Fixed units.Seconds `json:"fixed_s"`
	// Alloc is make([]float32, n) fitted as AllocFixed + 4n/AllocBandwidth (the runtime zeroes
	// what it hands out; garbage collection of the discarded buffers is included).
	AllocFixed     units.Seconds        `json:"alloc_fixed_s"`
	AllocBandwidth units.BytesPerSecond `json:"alloc_bandwidth_bytes_per_s"`
	AllocFit       Fit                  `json:"alloc_fit"`
}

// elemKernels are the elementwise kernels measured: bytes per element the cost model charges and
// the call. The profile's bandwidth is fitted to the streaming kernel add alone: a memory-bound
// loop, which is what a bandwidth describes. ReLU is measured beside it because exec runs it and
// it is not memory-bound on this kind of machine: it branches on each element's sign, and random
// signs defeat the branch predictor (a mispredicted branch costs more than moving 8 bytes). Its
// own line is in ElemFit.ByKernel and a note says how far the profile misprices it.
var elemKernels = []struct {
	name  string
	bytes int // per element: reads + writes of float32
	run   func(dst, a, b []float32)
	// branchy kernels branch on the sign of each element: their time depends on whether the
	// branch predictor has learnt the data, so each call gets other data (see rotation).
	branchy bool
	fitted  bool // the profile's bandwidth is fitted to it
}{
	{"add", 12, func(dst, a, b []float32) { kernels.Add(dst, a, b) }, false, true},
	{"relu", 8, func(dst, a, _ []float32) { kernels.ReLU(dst, a) }, true, false},
}

// fittedKernel reports whether the profile's bandwidth is fitted to the kernel named name.
func fittedKernel(name string) bool {
	for _, k := range elemKernels {
		if k.name == name {
			return k.fitted
		}
	}
	return false
}

// rotation is the number of float32 elements over which a branchy kernel's inputs rotate: a
// kernel called again and again on the same few thousand random signs runs several times faster
// once the branch predictor has learnt them (ReLU on 64 Ki elements did on an AMD EPYC), which
// exec's ever-changing activations do not allow. 1 Mi elements (4 MiB) defeats that; the inputs
// then come from the outer caches rather than the innermost.
const rotation = 1 << 20

// elemSizes are the element counts of the bandwidth grid: 64 B to 32 MiB per buffer. The small
// sizes pin the fixed time per op (exec runs many ops on tensors of a few hundred elements: a
// bias, seed-mlp's 10 x 10 output); gpt-tiny's activations are 64 to 256 KiB.
var (
	elemSizes      = []int{16, 1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 23}
	quickElemSizes = []int{16, 1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 20}
	allocSizes     = []int{16, 1 << 8, 1 << 10, 1 << 14, 1 << 18, 1 << 20}
)

// sink keeps allocations from being optimised away.
var sink []float32

// opEvent mirrors exec.OpEvent, which every op appends.
type opEvent struct {
	Step                int
	Phase, Kind, Module string
	Comm                bool
	Start, End          time.Duration
}

// opBook mimics, field for field, what exec's rank does around every op: exec/rank.go rank.exec
// (two time.Since, an event appended), rank.value (a map lookup per operand; for the output a
// miss, an allocator add and a recycled buffer cleared), rank.release (a map delete and the buffer
// back to the allocator's pool), and
// exec/alloc.go's per-category live and peak maps.
type opBook struct {
	t0             time.Time
	vals           map[int][]float32
	pool           map[int][][]float32 // exec's allocator recycles freed buffers by length
	live, peak     map[string]int64
	total, peakTot int64
	events         []opEvent
}

func newOpBook() *opBook {
	return &opBook{t0: time.Now(), vals: map[int][]float32{}, pool: map[int][][]float32{}, live: map[string]int64{}, peak: map[string]int64{},
		events: make([]opEvent, 0, 1024)}
}

func (b *opBook) alloc(cat string, n int) []float32 {
	by := int64(n) * 4
	b.live[cat] += by
	b.total += by
	b.peak[cat] = max(b.peak[cat], b.live[cat])
	b.peakTot = max(b.peakTot, b.total)
	if l := b.pool[n]; len(l) > 0 {
		v := l[len(l)-1]
		b.pool[n] = l[:len(l)-1]
		clear(v)
		return v
	}
	return make([]float32, n)
}

func (b *opBook) value(id, n int) []float32 {
	if v, ok := b.vals[id]; ok {
		return v
	}
	v := b.alloc("workspace", n)
	b.vals[id] = v
	return v
}

func (b *opBook) free(id int) {
	if v, ok := b.vals[id]; ok {
		delete(b.vals, id)
		b.live["workspace"] -= int64(len(v)) * 4
		b.total -= int64(len(v)) * 4
		b.pool[len(v)] = append(b.pool[len(v)], v)
	}
}

// op runs kernel on inputs 0 and 1 into a fresh output 2 of n elements, with exec's bookkeeping.
func (b *opBook) op(n int, kernel func(dst, a, c []float32)) {
	start := time.Since(b.t0)
	out := b.value(2, n)
	kernel(out, b.value(0, n), b.value(1, n))
	if len(b.events) == cap(b.events) {
		b.events = b.events[:0] // exec's slice grows for the whole run; appends cost the same
	}
	b.events = append(b.events, opEvent{Step: 1, Phase: "forward", Kind: "act", Module: "layers.0.mlp.act",
		Start: start, End: time.Since(b.t0)})
	b.free(2)
}

// measureElementwise times the bandwidth kernels alone and as exec runs them, over sizes.
func measureElementwise(ctx context.Context, sizes []int, s sampler) ([]ElemPoint, error) {
	rng := kernels.NewRand(seed + 1)
	var out []ElemPoint
	for _, n := range sizes {
		copies := max(1, rotation/n)
		pool := make([]float32, copies*n)
		kernels.FillUniform(pool, rng, -1, 1)
		bb, dst := make([]float32, n), make([]float32, n)
		kernels.FillUniform(bb, rng, -1, 1)
		for _, k := range elemKernels {
			// in returns the input of the next call: always the first copy, or the next copy
			// of the pool for a branchy kernel.
			next := 0
			in := func() []float32 {
				if !k.branchy {
					return pool[:n]
				}
				next = (next + 1) % copies
				return pool[next*n : (next+1)*n]
			}
			alone, err := s.seconds(ctx, func() { k.run(dst, in(), bb) })
			if err != nil {
				return nil, err
			}
			book := newOpBook()
			book.vals[1] = bb
			book.vals[0] = pool[:n]
			asExec, err := s.seconds(ctx, func() {
				if k.branchy {
					book.vals[0] = in()
				}
				book.op(n, k.run)
			})
			if err != nil {
				return nil, err
			}
			out = append(out, ElemPoint{Kernel: k.name, Elems: n, Bytes: units.Bytes(k.bytes * n),
				KernelTime: units.Seconds(alone), AsExec: units.Seconds(asExec)})
		}
	}
	return out, nil
}

// fitLine fits time = overhead + bytes/bandwidth (fit2) to the points of pts that keep selects,
// taking the time from at; it returns 1/bandwidth, the overhead and the fit's errors.
func fitLine(pts []ElemPoint, keep func(ElemPoint) bool, at func(ElemPoint) units.Seconds) (inv, c float64, f Fit) {
	var by, one, t []float64
	for _, p := range pts {
		if keep(p) {
			by, one, t = append(by, float64(p.Bytes)), append(one, 1), append(t, float64(at(p)))
		}
	}
	inv, c = fit2(by, one, t)
	if !(inv > 0) {
		// Time did not grow with size (cannot happen with real timings): use the best rate.
		for i := range t {
			inv = max(inv, t[i]/by[i])
		}
		c = 0
	}
	errs := make([]float64, len(t))
	for i := range t {
		errs[i] = relErr(inv*by[i]+c, t[i])
	}
	return inv, c, summarise(errs)
}

// fitElementwise fits the profile's line to the fitted kernels as exec runs them, the same line
// to them alone, and a line to each kernel as exec runs it; it fills each point's model time
// (the profile's price, whatever the kernel).
func fitElementwise(pts []ElemPoint) ElemFit {
	asExec := func(p ElemPoint) units.Seconds { return p.AsExec }
	fitted := func(p ElemPoint) bool { return fittedKernel(p.Kernel) }
	var e ElemFit
	inv, c, f := fitLine(pts, fitted, asExec)
	e.Bandwidth, e.Overhead, e.Fit = units.BytesPerSecond(1/inv), units.Seconds(c), f
	kinv, kc, kf := fitLine(pts, fitted, func(p ElemPoint) units.Seconds { return p.KernelTime })
	e.KernelBW, e.KernelOverhead, e.KernelFit = units.BytesPerSecond(1/kinv), units.Seconds(kc), kf
	for _, k := range elemKernels {
		ki, kc, kf := fitLine(pts, func(p ElemPoint) bool { return p.Kernel == k.name }, asExec)
		if kf.Points > 0 {
			e.ByKernel = append(e.ByKernel, ElemKernelFit{Kernel: k.name, Bandwidth: units.BytesPerSecond(1 / ki), Overhead: units.Seconds(kc), Fit: kf})
		}
	}
	for i := range pts {
		m := inv*float64(pts[i].Bytes) + c
		pts[i].Model = units.Seconds(m)
		pts[i].RelErr = relErr(m, float64(pts[i].AsExec))
	}
	return e
}

// measureBookkeeping times exec's per-op bookkeeping alone (an op of zero elements with no
// kernel: make of length 0 allocates nothing) and make([]float32, n) over sizes.
func measureBookkeeping(ctx context.Context, sizes []int, s sampler) (Bookkeeping, error) {
	var bk Bookkeeping
	book := newOpBook()
	book.vals[0], book.vals[1] = nil, nil
	fixed, err := s.seconds(ctx, func() { book.op(0, func(_, _, _ []float32) {}) })
	if err != nil {
		return bk, err
	}
	bk.Fixed = units.Seconds(fixed)
	var by, one, t []float64
	for _, n := range sizes {
		d, err := s.seconds(ctx, func() { sink = make([]float32, n) })
		if err != nil {
			return bk, err
		}
		by, one, t = append(by, 4*float64(n)), append(one, 1), append(t, d)
	}
	sink = nil
	inv, c := fit2(by, one, t)
	bk.AllocFixed = units.Seconds(c)
	if inv > 0 {
		bk.AllocBandwidth = units.BytesPerSecond(1 / inv)
	}
	errs := make([]float64, len(t))
	for i := range t {
		errs[i] = relErr(inv*by[i]+c, t[i])
	}
	bk.AllocFit = summarise(errs)
	return bk, nil
}
