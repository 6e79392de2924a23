package costmodel

import (
	"fmt"
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

// linkItems lists the ops of one phase of a ZeRO-3 stage for linkWalk.
func (c *Coster) linkItems(ops []program.Op, items []linkItem) []linkItem {
	ids := map[string]int32{}
	for i := range ops {
		op := &ops[i]
		name := program.PrefetchUnit(op.Module)
		u, ok := ids[name]
		if !ok {
			u = int32(len(ids))
			ids[name] = u
		}
		it := linkItem{unit: u, layer: len(name) > len("layers.") && name[:len("layers.")] == "layers."}
		switch {
		case !op.Kind.IsComm():
			it.d = c.Compute(op)
		case op.Dim == strategies.DimDP:
			it.d = c.Comm(op)
			it.kind = linkReduce
			if op.Kind == program.OpAllGather {
				it.kind, it.bytes = linkGather, op.FullBytes
			}
		default:
			d := c.Comm(op)
			it.d = d - c.Hidden(ops, i, d)
		}
		items = append(items, it)
	}
	return items
}

// gatherUnits groups a phase's gathers by prefetch unit, in the order the units first gather:
// order[u] is unit u's rank among them (-1: it gathers nothing) and gathers[k] the indices of the
// k-th unit's gathers.
func gatherUnits(items []linkItem) (order []int, gathers [][]int) {
	nu := 0
	for i := range items {
		nu = max(nu, int(items[i].unit)+1)
	}
	order = make([]int, nu)
	for i := range order {
		order[i] = -1
	}
	for i := range items {
		if it := &items[i]; it.kind == linkGather {
			if order[it.unit] < 0 {
				order[it.unit] = len(gathers)
				gathers = append(gathers, nil)
			}
			k := order[it.unit]
			gathers[k] = append(gathers[k], i)
		}
	}
	return order, gathers
}

// heldGathers is ZeRO-3's parameter buffers in a phase: the most gathered (tp-local) parameter
// bytes held at once, those of the unit computing (FSDP gathers a unit whole and frees it once
// it has run) and of the ahead units after it whose gathers may already have run
// (Strategy.Prefetch; counted with or without overlap, so that overlap changes time and never
// memory, as the search assumes). They live during forward and backward, beside the
// activations (the gradient buckets, gradBuffer, live after them).
func heldGathers(items []linkItem, gathers [][]int, ahead int) units.Bytes {
	var held units.Bytes
	for k := range gathers {
		var w units.Bytes
		for _, g := range gathers[k:min(len(gathers), k+ahead+1)] {
			for _, i := range g {
				w += items[i].bytes
			}
		}
		held = max(held, w)
	}
	return held
}

// linkWalk lays one microbatch's forward or backward out as the simulator does (sim's builder
// and engine.tryStart) and returns the data-parallel link time that the main sequence does not
// hide. The main ops run one after the other, each once the gathers before it (its parameters)
// have arrived. The link runs the gathers and reduce-scatters one at a time, in the order they
// become ready: a reduce-scatter when the op before it (its gradients' producer) ends; the
// gathers of the k-th unit to gather (gatherUnits) when unit k-depth starts (its first main op
// after its first gather starts), those of the first depth units with the phase. The phase ends
// when both the main sequence and the link are done: what the link adds is exposed, a
// backward's last reduce-scatters included (nothing carries into the next microbatch).
func linkWalk(items []linkItem, order []int, gathers [][]int, depth int) units.Seconds {
	ends := make([]units.Seconds, len(items)) // the gathers' ends, set when they are released
	var link units.Seconds                    // when the link is free
	release := func(k int, at units.Seconds) {
		for _, i := range gathers[k] {
			link = max(link, at) + items[i].d
			ends[i] = link
		}
	}
	for k := range min(depth, len(gathers)) {
		release(k, 0)
	}
	started := make([]bool, len(gathers))
	var t, main, wait units.Seconds
	for i := range items {
		it := &items[i]
		switch it.kind {
		case linkGather:
			wait = max(wait, ends[i])
		case linkReduce:
			link = max(link, t) + it.d
		default:
			s := max(t, wait)
			wait = 0
			if k := order[it.unit]; k >= 0 && !started[k] && gathers[k][0] < i {
				started[k] = true
				if k+depth < len(gathers) {
					release(k+depth, s)
				}
			}
			t = s + it.d
			main += it.d
		}
	}
	return max(t, link) - main
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
	// In each phase the second layer's items are [mid, hi), after the first's; units is the
	// number of unit ids used.
	mid, hi [2]int
	units   int32

	mu   sync.Mutex
	memo map[linkKey]linkResult
}

type linkKey struct {
	layers, prefetch int
	overlap          bool
}

// linkResult is what the walk gives a stage: its forward's and backward's exposed link time and
// its gather buffers.
type linkResult struct {
	f, b units.Seconds
	held units.Bytes
}

// newLinkTemplate lists stage s (of two layers) of Coster c's Program.
func newLinkTemplate(c *Coster, s *program.Stage) (*linkTemplate, error) {
	lt := &linkTemplate{memo: map[linkKey]linkResult{}}
	for ph, ops := range [2][]program.Op{s.Forward, s.Backward} {
		items := c.linkItems(ops, nil)
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

// walk is linkWalk and heldGathers of the stage of n layers under st's overlap and prefetch,
// memoized.
func (lt *linkTemplate) walk(n int, st strategies.Strategy) linkResult {
	k := linkKey{layers: n, prefetch: st.Prefetch, overlap: st.Overlap}
	lt.mu.Lock()
	r, ok := lt.memo[k]
	lt.mu.Unlock()
	if ok {
		return r
	}
	for ph, tmpl := range lt.phases {
		mid, hi := lt.mid[ph], lt.hi[ph]
		items := make([]linkItem, 0, len(tmpl)+(n-2)*(hi-mid))
		items = append(items, tmpl[:mid]...)
		for l := range n - 1 {
			for _, it := range tmpl[mid:hi] {
				if l > 0 {
					it.unit = lt.units + int32(l-1) // the layer's own unit
				}
				items = append(items, it)
			}
		}
		items = append(items, tmpl[hi:]...)
		order, gathers := gatherUnits(items)
		var e units.Seconds
		if st.Overlap {
			e = linkWalk(items, order, gathers, st.Prefetch)
		}
		if ph == 0 {
			r.f = e
		} else {
			r.b = e
		}
		r.held = max(r.held, heldGathers(items, gathers, st.Prefetch))
	}
	lt.mu.Lock()
	lt.memo[k] = r
	lt.mu.Unlock()
	return r
}
