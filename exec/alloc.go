package exec

import "math"

// Memory categories, as in docs/architecture.md, "Memory categories".
const (
	CatParams      = "params"
	CatGrads       = "grads"
	CatOptimizer   = "optimizer"
	CatActivations = "activations"
	CatWorkspace   = "workspace"
	CatComm        = "comm"
)

// Categories lists the memory categories in report order.
var Categories = []string{CatParams, CatGrads, CatOptimizer, CatActivations, CatWorkspace, CatComm}

// allocator hands out every buffer the kernels and collectives of one rank read and write, counts
// the bytes of each slice it hands out and takes back (len(b) x 4), and recycles freed buffers by
// length (a step allocates the same tensors as the last, so after the first step exec allocates
// nothing and the garbage collector has no work). It is used by one rank only.
//
// Parameters, gradients, optimizer state and communication buffers are counted in their category
// as they are taken. The buffers of a microbatch's values are not told their category: whether a
// value is an activation is observed, not declared. A value buffer still held when its
// microbatch's forward ends (the rank keeps it for the backward) is an activation; one taken and
// given back within a forward or a backward is workspace, with the kernels' scratch. The
// allocator logs those buffers' takes and gives and replays the log once the run is over, when
// every buffer's side of the boundary is known (peaks).
type allocator struct {
	live, peak map[string]int64
	total      int64
	peakTotal  int64
	f32s       pool[float32]
	i32s       pool[int32]
	// pooled is the bytes of the freed buffers the pools keep.
	pooled int64
	// log records value and scratch takes (+bytes) and gives (-bytes) in order; crossed[i] is
	// whether value buffer i was held across its microbatch's forward/backward boundary.
	log     []memEvent
	crossed []bool
	// act and ws are the activation and workspace bytes live after the settled part of the log,
	// and actPeak, wsPeak their peaks.
	act, ws, actPeak, wsPeak int64
}

// memEvent is one take (bytes > 0) or give (bytes < 0) of value buffer buf, or of kernel scratch
// (buf -1).
type memEvent struct {
	buf   int32
	bytes int64
}

// pool keeps freed buffers by length.
type pool[T float32 | int32] map[int][][]T

// get returns a buffer of n elements, recycled when one of that length was freed, zeroed when
// zero is set (a recycled one holds what its last user left otherwise).
func (p pool[T]) get(n int, zero bool) ([]T, bool) {
	if l := p[n]; len(l) > 0 {
		b := l[len(l)-1]
		p[n] = l[:len(l)-1]
		switch {
		case zero:
			clear(b)
		case poisonDirty:
			poison(b)
		}
		return b, true
	}
	return make([]T, n), false
}

// poisonDirty makes get fill a recycled buffer it does not zero with NaN (-1 for int32), so that
// a test sees any element a kernel leaves unwritten (TestDirtyOutputsAreOverwritten).
var poisonDirty = false

func poison[T float32 | int32](b []T) {
	var v T
	switch x := any(&v).(type) {
	case *float32:
		*x = float32(math.NaN())
	case *int32:
		*x = -1
	}
	for i := range b {
		b[i] = v
	}
}

func (p pool[T]) put(b []T) { p[len(b)] = append(p[len(b)], b) }

func newAllocator() *allocator {
	return &allocator{live: map[string]int64{}, peak: map[string]int64{}, f32s: pool[float32]{}, i32s: pool[int32]{}}
}

// getZero takes a buffer of n elements from p, keeping the pooled count, zeroed only when zero
// is set.
func getZero[T float32 | int32](a *allocator, p pool[T], n int, zero bool) []T {
	b, reused := p.get(n, zero)
	if reused {
		a.pooled -= int64(len(b)) * 4
	}
	return b
}

func put[T float32 | int32](a *allocator, p pool[T], b []T) {
	a.pooled += int64(len(b)) * 4
	p.put(b)
}

// take returns a zeroed buffer of n elements from p (a's pool of that type) accounted to cat;
// both element types take 4 bytes.
func take[T float32 | int32](a *allocator, p pool[T], cat string, n int) []T {
	return takeZero(a, p, cat, n, true)
}

// takeZero is take, zeroing the buffer only when zero is set.
func takeZero[T float32 | int32](a *allocator, p pool[T], cat string, n int, zero bool) []T {
	b := getZero(a, p, n, zero)
	a.add(cat, int64(len(b))*4)
	return b
}

// give frees b, which take returned from p for cat.
func give[T float32 | int32](a *allocator, p pool[T], cat string, b []T) {
	a.free(cat, int64(len(b))*4)
	put(a, p, b)
}

// takeValue returns a buffer of n elements for a value of a microbatch (zeroed when zero is
// set), and its number in the log; giveValue frees it.
func takeValue[T float32 | int32](a *allocator, p pool[T], n int, zero bool) ([]T, int32) {
	b := getZero(a, p, n, zero)
	id := int32(len(a.crossed))
	a.crossed = append(a.crossed, false)
	bytes := int64(len(b)) * 4
	a.log = append(a.log, memEvent{id, bytes})
	a.total += bytes
	a.peakTotal = max(a.peakTotal, a.total)
	return b, id
}

func giveValue[T float32 | int32](a *allocator, p pool[T], id int32, b []T) {
	bytes := int64(len(b)) * 4
	a.log = append(a.log, memEvent{id, -bytes})
	a.total -= bytes
	put(a, p, b)
}

// f32 returns a zeroed buffer of n floats accounted to cat; putF32 frees it.
func (a *allocator) f32(cat string, n int) []float32 { return take(a, a.f32s, cat, n) }

// f32Out is f32 for a buffer its user overwrites whole (a collective's output): not zeroed.
func (a *allocator) f32Out(cat string, n int) []float32 { return takeZero(a, a.f32s, cat, n, false) }
func (a *allocator) putF32(cat string, b []float32)     { give(a, a.f32s, cat, b) }

// i32 returns a zeroed buffer of n int32 accounted to cat; putI32 frees it.
func (a *allocator) i32(cat string, n int) []int32 { return take(a, a.i32s, cat, n) }
func (a *allocator) putI32(cat string, b []int32)  { give(a, a.i32s, cat, b) }

func (a *allocator) add(cat string, b int64) {
	if cat == CatWorkspace {
		a.log = append(a.log, memEvent{-1, b})
	} else {
		a.live[cat] += b
		a.peak[cat] = max(a.peak[cat], a.live[cat])
	}
	a.total += b
	a.peakTotal = max(a.peakTotal, a.total)
}

func (a *allocator) free(cat string, b int64) {
	if cat == CatWorkspace {
		a.log = append(a.log, memEvent{-1, -b})
	} else {
		a.live[cat] -= b
		if a.live[cat] < 0 {
			panic("exec: allocator freed more " + cat + " bytes than it allocated")
		}
	}
	a.total -= b
}

// settle replays the log into the activation and workspace counts and empties it. The rank calls
// it at the end of each forward, once it has marked what it keeps: forwards do not interleave on
// a rank, so every buffer taken so far has its side of the boundary known by then (one taken in a
// backward never crosses it).
func (a *allocator) settle() {
	for _, e := range a.log {
		if e.buf >= 0 && a.crossed[e.buf] {
			a.act += e.bytes
			a.actPeak = max(a.actPeak, a.act)
		} else {
			a.ws += e.bytes
			a.wsPeak = max(a.wsPeak, a.ws)
		}
	}
	a.log = a.log[:0]
}

// peaks returns the peak of every category: the fixed ones as counted, activations and workspace
// from the log.
func (a *allocator) peaks() map[string]int64 {
	a.settle()
	out := map[string]int64{}
	for _, c := range Categories {
		out[c] = a.peak[c]
	}
	out[CatActivations], out[CatWorkspace] = a.actPeak, a.wsPeak
	out["peak"] = a.peakTotal
	return out
}
