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

// allocator accounts live bytes per category and their peaks. It is used by one rank only.
type allocator struct {
	live, peak map[string]int64
	total      int64
	peakTotal  int64
}

func newAllocator() *allocator {
	return &allocator{live: map[string]int64{}, peak: map[string]int64{}}
}

func (a *allocator) f32(cat string, n int) []float32 {
	a.add(cat, int64(n)*4)
	return make([]float32, n)
}

func (a *allocator) i32(cat string, n int) []int32 {
	a.add(cat, int64(n)*4)
	return make([]int32, n)
}

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
