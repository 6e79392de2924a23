package exec

// Memory categories, as in DESIGN.md.
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

// allocator accounts live bytes per category and their peaks, and recycles freed buffers by
// length (a step allocates the same tensors as the last, so after the first step exec allocates
// nothing and the garbage collector has no work). It is used by one rank only.
type allocator struct {
	live, peak map[string]int64
	total      int64
	peakTotal  int64
	f32s       pool[float32]
	i32s       pool[int32]
}

// pool keeps freed buffers by length.
type pool[T float32 | int32] map[int][][]T

// get returns a zeroed buffer of n elements, recycled when one of that length was freed.
func (p pool[T]) get(n int) []T {
	if l := p[n]; len(l) > 0 {
		b := l[len(l)-1]
		p[n] = l[:len(l)-1]
		clear(b)
		return b
	}
	return make([]T, n)
}

func (p pool[T]) put(b []T) { p[len(b)] = append(p[len(b)], b) }

func newAllocator() *allocator {
	return &allocator{live: map[string]int64{}, peak: map[string]int64{}, f32s: pool[float32]{}, i32s: pool[int32]{}}
}

// take returns a zeroed buffer of n elements from p (a's pool of that type) accounted to cat;
// both element types take 4 bytes.
func take[T float32 | int32](a *allocator, p pool[T], cat string, n int) []T {
	a.add(cat, int64(n)*4)
	return p.get(n)
}

// give frees b, which take returned from p for cat.
func give[T float32 | int32](a *allocator, p pool[T], cat string, b []T) {
	a.free(cat, int64(len(b))*4)
	p.put(b)
}

// f32 returns a zeroed buffer of n floats accounted to cat; putF32 frees it.
func (a *allocator) f32(cat string, n int) []float32 { return take(a, a.f32s, cat, n) }
func (a *allocator) putF32(cat string, b []float32)  { give(a, a.f32s, cat, b) }

// i32 returns a zeroed buffer of n int32 accounted to cat; putI32 frees it.
func (a *allocator) i32(cat string, n int) []int32 { return take(a, a.i32s, cat, n) }
func (a *allocator) putI32(cat string, b []int32)  { give(a, a.i32s, cat, b) }

func (a *allocator) add(cat string, b int64) {
	a.live[cat] += b
	a.total += b
	a.peak[cat] = max(a.peak[cat], a.live[cat])
	a.peakTotal = max(a.peakTotal, a.total)
}

func (a *allocator) free(cat string, b int64) {
	a.live[cat] -= b
	a.total -= b
	if a.live[cat] < 0 {
		panic("exec: allocator freed more " + cat + " bytes than it allocated")
	}
}
