package costmodel

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// linkKind is what an op of a forward or backward is to ZeRO-3's data-parallel link.
type linkKind uint8

const (
	linkMain   linkKind = iota // the main sequence: compute and the blocking collectives
	linkGather                 // a ZeRO-3 parameter all-gather, on the data-parallel link
	linkReduce                 // a ZeRO-3 gradient reduce-scatter, on the data-parallel link
)

// linkItem is one op of a phase as linkWalk reads it: its time on the critical path (a main op's
// compute, or its blocking collective less what Coster.Hidden hides) or on the link, and its
// prefetch unit (program.PrefetchUnit), numbered from 0 in order of appearance; layer says
// whether that unit is a transformer layer (Derived repeats those). Bytes is a gather's whole
// tensor (the buffer it fills).
type linkItem struct {
	d     units.Seconds
	bytes units.Bytes
	kind  linkKind
	layer bool
	unit  int32
}

// linkItems collects the ops of one phase of a ZeRO-3 stage for linkWalk as fbPiece prices them.
type linkItems struct {
	ids   map[string]int32
	items []linkItem
}

// add appends op, which takes d on the main sequence or the link.
func (l *linkItems) add(op *program.Op, d units.Seconds) {
	name := program.PrefetchUnit(op.Module)
	u, ok := l.ids[name]
	if !ok {
		u = int32(len(l.ids))
		l.ids[name] = u
	}
	it := linkItem{d: d, unit: u, layer: strings.HasPrefix(name, "layers.")}
	switch {
	case op.IsParamGather():
		it.kind, it.bytes = linkGather, op.FullBytes
	case op.Kind.IsComm() && op.Dim == strategies.DimDP:
		it.kind = linkReduce
	}
	l.items = append(l.items, it)
}

// unitGathers is a phase's gathers grouped by prefetch unit, in the order the units first
// gather: order[u] is unit u's rank among them (-1: it gathers nothing), first[k] the index of
// the k-th unit's first gather and bytes[k] what its gathers fill, next[i] the index of the
// gather after gather i of the same unit (-1: the last).
type unitGathers struct {
	order, first, next []int32
	bytes              []units.Bytes
}

func gatherUnits(items []linkItem) unitGathers {
	nu := int32(0)
	for i := range items {
		nu = max(nu, items[i].unit+1)
	}
	g := unitGathers{order: make([]int32, nu), next: make([]int32, len(items))}
	last := make([]int32, 0, nu) // per rank, its latest gather so far
	for i := range g.order {
		g.order[i] = -1
	}
	for i := range items {
		g.next[i] = -1
		if it := &items[i]; it.kind == linkGather {
			k := g.order[it.unit]
			if k < 0 {
				k = int32(len(g.first))
				g.order[it.unit] = k
				g.first = append(g.first, int32(i))
				g.bytes = append(g.bytes, 0)
				last = append(last, int32(i))
			} else {
				g.next[last[k]], last[k] = int32(i), int32(i)
			}
			g.bytes[k] += it.bytes
		}
	}
	return g
}

// held is ZeRO-3's parameter buffers in a phase: the most gathered (tp-local) parameter bytes
// held at once, those of the unit computing (FSDP gathers a unit whole and frees it once it has
// run) and of the ahead units after it whose gathers may already have run (prefetchAhead). They
// live during forward and backward, beside the activations (the gradient buckets, gradBuffer,
// live after them).
func (g *unitGathers) held(ahead int) units.Bytes {
	var held, w units.Bytes
	for k := range g.bytes {
		w += g.bytes[k]
		if k > ahead {
			w -= g.bytes[k-ahead-1]
		}
		held = max(held, w)
	}
	return held
}

// prefetchAhead is how many units' gathers may run ahead of the unit computing under st:
// Strategy.Prefetch when the gathers overlap compute, none when each blocks (overlap=off, as
// DeepSpeed's ZeRO-3 of 2021 and exec run them).
func prefetchAhead(st strategies.Strategy) int {
	if st.Overlap {
		return st.Prefetch
	}
	return 0
}

// linkWalk lays one microbatch's forward or backward out as the simulator does (sim's builder
// and engine.tryStart) and returns the data-parallel link time that the main sequence does not
// hide. The main ops run one after the other, each once the gathers before it (its parameters)
// have arrived. The link runs the gathers and reduce-scatters one at a time, in the order they
// become ready: a reduce-scatter when the op before it (its gradients' producer) ends; the
// gathers of the k-th unit to gather (gatherUnits) when unit k-depth starts (its first main op
// after its first gather starts), those of the first depth units with the phase. The phase ends
// when both the main sequence and the link are done: what the link adds is exposed, a
// backward's last reduce-scatters included (nothing carries into the next microbatch). While the
// link runs, the main sequence advances at 1/(1+sigma) of its speed (Coster.OverlapSlowdown):
// every item on the link was released at or before the main op now starting, so the link is
// busy without a gap from that op's start until it is free (slowedBy); the lengthening counts
// as exposed.
func linkWalk(items []linkItem, g *unitGathers, depth int, sigma float64) units.Seconds {
	e, _, _ := linkWalkBlocks(items, g, depth, linkBlocks{}, sigma)
	return e
}

// linkBlocks marks count repeated blocks of size items from start (Derived's layers, each its
// own prefetch unit) for linkWalkBlocks.
type linkBlocks struct{ start, size, count int }

// linkWalkBlocks is linkWalk, and where the walk reaches a steady state among the blocks of b
// (the link's and every released gather's times relative to the main sequence the same at two
// block boundaries, with the gathers it has released all in blocks), what each block adds to
// the exposed time: from there every block repeats, so a stage of more blocks is exposed that
// much more per block (Derived walks a few layers and extrapolates).
func linkWalkBlocks(items []linkItem, g *unitGathers, depth int, b linkBlocks, sigma float64) (exposed, perBlock units.Seconds, steady bool) {
	ends := make([]units.Seconds, len(items)) // the gathers' ends, set when they are released
	for i := range ends {
		ends[i] = -1
	}
	var link units.Seconds // when the link is free
	release := func(k int, at units.Seconds) {
		for i := g.first[k]; i >= 0; i = g.next[i] {
			link = max(link, at) + items[i].d
			ends[i] = link
		}
	}
	n := len(g.first)
	for k := range min(depth, n) {
		release(k, 0)
	}
	started := make([]bool, n)
	var t, main, wait units.Seconds
	// At the last block boundary: t - main, and the state (the link's and the released
	// gathers' times relative to the main sequence).
	var prevE units.Seconds
	var prevState, state []units.Seconds
	for i := range items {
		// A boundary whose released gathers (depth blocks ahead at most) all lie in blocks.
		if k := i - b.start; b.size > 0 && !steady && k >= 0 && k%b.size == 0 && k/b.size+depth+1 <= b.count {
			state = append(state[:0], link-t, wait)
			for j := i; j < i+(depth+1)*b.size; j++ {
				if ends[j] >= 0 {
					state = append(state, units.Seconds(j-i), ends[j]-t)
				}
			}
			if k > 0 && sameState(prevState, state, t) {
				// Every block from here shifts the main sequence, the link and the released
				// gathers alike: the exposed time grows by what this block added to t - main.
				steady, perBlock = true, (t-main)-prevE
			}
			prevE = t - main
			prevState, state = state, prevState
		}
		it := &items[i]
		switch it.kind {
		case linkGather:
			wait = max(wait, ends[i])
		case linkReduce:
			link = max(link, t) + it.d
		default:
			s := max(t, wait)
			wait = 0
			if k := int(g.order[it.unit]); k >= 0 && !started[k] && int(g.first[k]) < i {
				started[k] = true
				if k+depth < n {
					release(k+depth, s)
				}
			}
			t = s + slowedBy(it.d, link-s, sigma)
			main += it.d
		}
	}
	return max(t, link) - main, perBlock, steady
}

// sameState reports whether two block-boundary states of linkWalkBlocks agree to rounding (a
// relative 1e-12 of the main sequence's time t).
func sameState(a, b []units.Seconds, t units.Seconds) bool {
	if len(a) != len(b) {
		return false
	}
	tol := 1e-12 * max(t, 1e-9)
	for i := range a {
		if d := a[i] - b[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// linkTemplate is a ZeRO-3 stage of two layers, its forward and backward as linkItems lists
// them, from which Derived walks the stage of any number n of layers: the ops before the layers,
// the first layer listed, the second n-1 times (each its own prefetch unit), the ops after them.
// The second layer listed is the one between a layer and the stage's edge, as every layer of a
// longer stage but the first listed (in the backward the last layer, whose output gradient has a
// single consumer); the first is the one next to the head in the backward, or to the embedding
// in the forward, as in a stage of any length (TestDerivedEqualsPredictOnWholeSpaces).
type linkTemplate struct {
	phases [2][]linkItem
	sigma  float64 // Coster.OverlapSlowdown
	// In each phase the second layer's items are [mid, hi), after the first's; units is the
	// number of unit ids used.
	mid, hi [2]int
	units   int32

	mu   sync.Mutex
	memo map[linkKey]linkResult
}

type linkKey struct{ layers, prefetch int }

// linkResult is what the walk gives a stage: its forward's and backward's exposed link time
// (under overlap) and its gather buffers with and without overlap (prefetchAhead).
type linkResult struct {
	f, b                  units.Seconds
	heldOverlap, heldNone units.Bytes
}

// newLinkTemplate makes the template of a stage of two layers from its phases' items
// (Coster.fbPieceLinks).
func newLinkTemplate(phases [2][]linkItem, sigma float64) (*linkTemplate, error) {
	lt := &linkTemplate{memo: map[linkKey]linkResult{}, sigma: sigma}
	for ph, items := range phases {
		// The layers' items: two runs, one unit each, with nothing else between or among them.
		runs := []int{}
		for i := range items {
			lt.units = max(lt.units, items[i].unit+1)
			if items[i].layer && (i == 0 || !items[i-1].layer || items[i-1].unit != items[i].unit) {
				runs = append(runs, i)
			}
		}
		end := len(runs)
		if end > 0 {
			end = runs[len(runs)-1]
			for end < len(items) && items[end].layer {
				end++
			}
		}
		if len(runs) != 2 {
			return nil, fmt.Errorf("costmodel: the two-layer Program's %s phase has %d runs of layer ops, not two; it cannot be repeated for the link's walk", []string{"forward", "backward"}[ph], len(runs))
		}
		lt.phases[ph], lt.mid[ph], lt.hi[ph] = items, runs[1], end
	}
	return lt, nil
}

// walk is linkWalk and the held gathers of the stage of n layers at st's prefetch, memoized
// (the exposed times serve only a strategy that overlaps; the buffers either). It walks a few
// layers first: where the walk settles into a steady state among them, the stage of n layers is
// exposed that much more per further layer and holds the same buffers (every window of
// prefetched units is among them); else it walks all n.
func (lt *linkTemplate) walk(n int, st strategies.Strategy) linkResult {
	k := linkKey{layers: n, prefetch: st.Prefetch}
	lt.mu.Lock()
	r, ok := lt.memo[k]
	lt.mu.Unlock()
	if ok {
		return r
	}
	depth := st.Prefetch
	short := depth + 8
	for ph := range lt.phases {
		w := lt.walkLayers(ph, min(n, short), depth)
		if n > short {
			if w.steady {
				w.exposed += units.Seconds(n-short) * w.perLayer
			} else {
				w = lt.walkLayers(ph, n, depth)
			}
		}
		if ph == 0 {
			r.f = w.exposed
		} else {
			r.b = w.exposed
		}
		r.heldOverlap, r.heldNone = max(r.heldOverlap, w.heldOverlap), max(r.heldNone, w.heldNone)
	}
	lt.mu.Lock()
	lt.memo[k] = r
	lt.mu.Unlock()
	return r
}

// held is the result's gather buffers under st (prefetchAhead).
func (r linkResult) held(st strategies.Strategy) units.Bytes {
	if prefetchAhead(st) > 0 {
		return r.heldOverlap
	}
	return r.heldNone
}

// phaseWalk is one phase's walk: exposed link time, and where it settled, what each further
// layer adds; its gather buffers with prefetch and without.
type phaseWalk struct {
	exposed, perLayer     units.Seconds
	steady                bool
	heldOverlap, heldNone units.Bytes
}

// walkLayers walks phase ph (0 forward, 1 backward) of the stage of n layers: the template's
// ops before its second layer, that layer's n-1 times (each its own unit), the ops after it.
func (lt *linkTemplate) walkLayers(ph, n, depth int) phaseWalk {
	tmpl, mid, hi := lt.phases[ph], lt.mid[ph], lt.hi[ph]
	items := make([]linkItem, 0, len(tmpl)+(n-2)*(hi-mid))
	items = append(items, tmpl[:mid]...)
	for l := range n - 1 {
		for _, it := range tmpl[mid:hi] {
			if l > 0 {
				it.unit = lt.units + int32(l-1)
			}
			items = append(items, it)
		}
	}
	items = append(items, tmpl[hi:]...)
	g := gatherUnits(items)
	var w phaseWalk
	w.exposed, w.perLayer, w.steady = linkWalkBlocks(items, &g, depth, linkBlocks{start: mid, size: hi - mid, count: n - 1}, lt.sigma)
	w.heldOverlap, w.heldNone = g.held(depth), g.held(0)
	return w
}
