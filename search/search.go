package search

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Objectives.
const (
	Time     = "time"
	Memory   = "memory"
	Comm     = "comm"
	Balanced = "balanced"
)

// Objectives lists the objectives Rank accepts.
var Objectives = []string{Time, Memory, Comm, Balanced}

// Rejection reasons the search adds to those of strategies.Enumerate.
const (
	RejectOOM       = "out of memory"
	RejectNotPriced = "not priced by the closed form"
)

// Eval is what the search keeps of one candidate's prediction.
type Eval struct {
	// Priced is false when the closed form could not price the candidate. Bound is true while
	// Step (and TokensPerS, MFU) come from a lower bound of a pipeline's step, not its timeline
	// (costmodel's Quick): Refine makes them exact.
	Priced, Bound bool
	Feasible      bool
	Step          units.Seconds
	// Peak is the memory per device; while PeakBound, a lower bound of it (an infeasible
	// candidate whose parameters, gradients and optimizer state alone exceed the device, whose
	// activations the closed form did not price): SmallestPeak makes the smallest exact.
	Peak      units.Bytes
	PeakBound bool
	// SlowBytes is the comm objective: bytes per device per step over the slowest link.
	SlowBytes units.Bytes
	// CommBytes per device per step by mesh dimension, indexed like strategies.DimOrder.
	CommBytes  [costmodel.NumDims]units.Bytes
	TokensPerS float64
	MFU        float64
}

// TotalBytes is the bytes a device sends per step on all mesh dimensions.
func (e *Eval) TotalBytes() units.Bytes {
	var s units.Bytes
	for _, b := range e.CommBytes {
		s += b
	}
	return s
}

// Evaluator prices the candidates of one space for one model on one hardware. It is read-only
// once made: EvaluateRange may run concurrently on disjoint ranges.
type Evaluator struct {
	Model *model.Model
	HW    *hardware.Hardware
	Space *strategies.Space
	GPUs  int
	// Derived is the closed form derived from the Program (costmodel.Derived), with its pieces
	// memoized across the search.
	Derived  *costmodel.Derived
	lowerer  *program.Lowerer // lowers whole Programs for the simulator and the rows
	slowest  int              // index of the slowest level the job's devices span
	nodeSize int
	// workers bounds the goroutines that refine, simulate and price rows (0: one per CPU; Plan
	// sets Request.Workers): a study running plans side by side asks each for one, and each
	// simulation of a large pipeline holds hundreds of MB (the llama3 study peaked at 1.7 GB
	// with two plans each simulating on two goroutines).
	workers int
}

// NewEvaluator returns an Evaluator of space for m on hw. It fails when m is invalid or hw lacks
// the precision's peak.
func NewEvaluator(m *model.Model, hw *hardware.Hardware, space *strategies.Space, gpus int) (*Evaluator, error) {
	der, err := costmodel.NewDerived(m, hw)
	if err != nil {
		return nil, err
	}
	dtype := "bf16"
	if space.Base.Precision == strategies.PrecisionFP32 {
		dtype = "fp32"
	}
	if _, err := hw.PeakFor(dtype); err != nil {
		return nil, err
	}
	if err := costmodel.CheckFlash(space.Base, hw); err != nil {
		return nil, err
	}
	ev := &Evaluator{Model: m, HW: hw, Space: space, GPUs: gpus, Derived: der, lowerer: program.NewLowerer(m), slowest: hw.LevelFor(max(gpus, 1))}
	if len(hw.Levels) > 1 {
		ev.nodeSize = hw.Levels[0].Size
	}
	return ev, nil
}

// Levels returns, for a mesh, the index of the topology level each dimension's groups reach
// (indexed like strategies.DimOrder), -1 for a dimension of size 1. The groups are those
// costmodel prices: tp consecutive devices; cp every tp-th; the data-parallel gradient group dp x
// cp every tp-th; a pipeline send between devices dp x cp x tp apart.
func (ev *Evaluator) Levels(ms strategies.Mesh) [costmodel.NumDims]int {
	return levels(ev.HW, ms)
}

func levels(hw *hardware.Hardware, ms strategies.Mesh) [costmodel.NumDims]int {
	out := [costmodel.NumDims]int{-1, -1, -1, -1}
	if ms.TP > 1 {
		out[costmodel.IndexTP] = hw.LevelFor(ms.TP)
	}
	if ms.CP > 1 {
		out[costmodel.IndexCP] = hw.LevelFor((ms.CP-1)*ms.TP + 1)
	}
	if g := ms.DP * ms.CP; g > 1 && ms.DP > 1 {
		out[costmodel.IndexDP] = hw.LevelFor((g-1)*ms.TP + 1)
	}
	if ms.PP > 1 {
		out[costmodel.IndexPP] = hw.LevelFor(ms.DP*ms.CP*ms.TP + 1)
	}
	return out
}

// EvaluateRange prices candidates lo..hi-1 of the space into out[0..hi-lo-1]. A pipeline's step
// is a lower bound of its timeline (Eval.Bound; Refine and RankExact make it exact).
//
// A candidate that does not fit in memory keeps only its memory: Priced, not Feasible, Peak
// (step time and bytes stay zero). Below ZeRO-3 overlap changes time, never memory (costmodel
// prices the same bytes live either way), so an overlap=off candidate right after its
// overlap=on twin, which did not fit, does not fit either, with the same peak, and is not priced
// again: most of a large search is out of memory, and this halves the work for it. (Under ZeRO-3
// the overlapping twin also holds its prefetched units' parameters, so both are priced.) The
// result does not depend on where a range starts: a twin whose overlap=on candidate lies before
// lo is priced, and kept the same way.
//
// It panics if the range is out of the space or out is shorter than the range.
func (ev *Evaluator) EvaluateRange(lo, hi int, out []Eval) {
	if lo < 0 || hi > len(ev.Space.Candidates) || lo > hi || len(out) < hi-lo {
		panic(fmt.Sprintf("search: EvaluateRange(%d, %d) over %d candidates into %d", lo, hi, len(ev.Space.Candidates), len(out)))
	}
	base := ev.Space.Base
	cands := ev.Space.Candidates
	for i := lo; i < hi; i++ {
		c := cands[i]
		o := &out[i-lo]
		if i > lo && c.ZeRO != 3 && isTwin(cands[i-1], c) {
			if prev := &out[i-1-lo]; prev.Priced && !prev.Feasible {
				*o = Eval{Priced: true, Peak: prev.Peak, PeakBound: prev.PeakBound}
				continue
			}
		}
		t, err := ev.Derived.Quick(c.Strategy(base))
		if err != nil {
			*o = Eval{}
			continue
		}
		if !t.Feasible {
			*o = Eval{Priced: true, Peak: t.Memory.Peak, PeakBound: t.PeakBound}
			continue
		}
		*o = Eval{Priced: true, Bound: t.Bound, Feasible: true, Step: t.Time.Step, Peak: t.Memory.Peak, CommBytes: t.CommBytes,
			TokensPerS: t.TokensPerS, MFU: t.MFU}
		lv := levels(ev.HW, strategies.Mesh{PP: int(c.PP), DP: int(c.DP), CP: int(c.CP), TP: int(c.TP)})
		for d := range costmodel.NumDims {
			if lv[d] == ev.slowest {
				o.SlowBytes += t.CommBytes[d]
			}
		}
	}
}

// SmallestPeak returns the priced candidate of evals with the least memory per device among
// those keep accepts (all when keep is nil), -1 when there is none. Peaks that are lower bounds
// (Eval.PeakBound) are made exact, in increasing order, until no bound left is below the
// smallest exact peak; evals keeps them.
func (ev *Evaluator) SmallestPeak(evals []Eval, keep func(i int) bool) int {
	var cands []int
	for i := range evals {
		if evals[i].Priced && (keep == nil || keep(i)) {
			cands = append(cands, i)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return evals[cands[a]].Peak < evals[cands[b]].Peak })
	best := -1
	for _, i := range cands {
		e := &evals[i]
		if best >= 0 && e.Peak > evals[best].Peak {
			break // every later peak, bound or exact, is at least this one
		}
		if e.PeakBound {
			t, err := ev.Derived.Totals(ev.Space.Strategy(i))
			if err != nil {
				continue
			}
			e.Peak, e.PeakBound = t.Memory.Peak, false
		}
		if best < 0 || e.Peak < evals[best].Peak || e.Peak == evals[best].Peak && i < best {
			best = i
		}
	}
	return best
}

// isTwin reports whether b is a with overlap off.
func isTwin(a, b strategies.Candidate) bool {
	if !a.Overlap || b.Overlap {
		return false
	}
	a.Overlap = false
	return a == b
}

// Evaluate prices every candidate on one goroutine, every step exact.
func (ev *Evaluator) Evaluate() []Eval {
	out := make([]Eval, len(ev.Space.Candidates))
	ev.EvaluateRange(0, len(out), out)
	var all []int
	for i := range out {
		if out[i].Bound {
			all = append(all, i)
		}
	}
	ev.Refine(out, all)
	return out
}

// Refine replaces the lower bounds of evals[i] for i in idx by the pipeline's timeline.
func (ev *Evaluator) Refine(evals []Eval, idx []int) {
	var need []int
	for _, i := range idx {
		if evals[i].Bound {
			need = append(need, i)
		}
	}
	slices.Sort(need)
	need = slices.Compact(need) // each once: one goroutine per entry
	// Each candidate's timeline is its own and written to its own entry: the result does not
	// depend on which goroutine priced it.
	parallelEach(ev.workers, len(need), func(k int) {
		e := &evals[need[k]]
		t, err := ev.Derived.Totals(ev.Space.Candidates[need[k]].Strategy(ev.Space.Base))
		if err != nil {
			*e = Eval{}
			return
		}
		e.Bound, e.Step, e.TokensPerS, e.MFU = false, t.Time.Step, t.TokensPerS, t.MFU
	})
}

// parallelEach calls f(k) for k in 0..n-1 on at most w goroutines (0: one per CPU), each taking
// the next k in turn (on the caller's alone for fewer than 4 or one worker); f must write only
// what k owns, so the result does not depend on which goroutine ran which k.
func parallelEach(w, n int, f func(k int)) {
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	workers := min(w, n)
	if n < 4 || workers < 2 {
		for k := range n {
			f(k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
				f(k)
			}
		}()
	}
	wg.Wait()
}

// Result is a ranked search.
type Result struct {
	Objective string
	// Searched is the number of combinations considered; Feasible those that fit in memory.
	Searched, Feasible int
	// Rejected counts the others by reason: the rules of Strategy.Validate (strategies.RejectReasons)
	// and RejectOOM, RejectNotPriced.
	Rejected map[string]int
	// Top holds the indices of the best candidates by the objective, best first.
	Top []int
	// Front is the Pareto front of step time against peak memory: the feasible candidates no
	// other is at least as good as in both and better in one, by step time ascending.
	Front []int
	// Fastest and Smallest are the feasible candidates with the least step time and the least
	// peak memory (-1 when none is feasible).
	Fastest, Smallest int
	// Folded counts the candidates left out of Top as equal in every figure to the candidate
	// they differ from only in an option that changes nothing there (overlap=off with nothing to
	// overlap).
	Folded int
}

// ParseObjective checks an objective name.
func ParseObjective(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, o := range Objectives {
		if s == o {
			return s, nil
		}
	}
	return "", fmt.Errorf("search: objective %q is not valid; use one of %s", s, strings.Join(Objectives, ", "))
}

// ranker orders feasible candidates by an objective, totally: ties by step time, then index.
type ranker struct {
	evals     []Eval
	objective string
	best      [2]float64 // fastest step, smallest peak (balanced)
}

func (r *ranker) key(i int) float64 {
	e := &r.evals[i]
	switch r.objective {
	case Memory:
		return float64(e.Peak)
	case Comm:
		return float64(e.SlowBytes)
	case Balanced:
		return math.Max(float64(e.Step)/r.best[0], float64(e.Peak)/r.best[1])
	}
	return float64(e.Step)
}

func (r *ranker) less(i, j int) bool {
	if ki, kj := r.key(i), r.key(j); ki != kj {
		return ki < kj
	}
	ei, ej := &r.evals[i], &r.evals[j]
	if ei.Step != ej.Step {
		return ei.Step < ej.Step
	}
	if ei.Peak != ej.Peak {
		return ei.Peak < ej.Peak
	}
	return i < j
}

// Rank counts, ranks and keeps the top k of evals (one per candidate of space, in order) by
// objective, and finds the Pareto front. It returns an error for an unknown objective or k < 1.
func Rank(space *strategies.Space, evals []Eval, objective string, k int) (*Result, error) {
	objective, err := ParseObjective(objective)
	if err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("search: top %d; keep at least 1", k)
	}
	if len(evals) != len(space.Candidates) {
		return nil, fmt.Errorf("search: %d evaluations for %d candidates", len(evals), len(space.Candidates))
	}
	res := &Result{Objective: objective, Searched: space.Searched, Rejected: map[string]int{}, Fastest: -1, Smallest: -1}
	for k, v := range space.Rejected {
		res.Rejected[k] = v
	}
	r := &ranker{evals: evals, objective: Time}
	byMem := &ranker{evals: evals, objective: Memory}
	var unpriced, oom int
	for i := range evals {
		e := &evals[i]
		switch {
		case !e.Priced:
			unpriced++
			continue
		case !e.Feasible:
			oom++
			continue
		}
		res.Feasible++
		if res.Fastest < 0 || r.less(i, res.Fastest) {
			res.Fastest = i
		}
		if res.Smallest < 0 || byMem.less(i, res.Smallest) {
			res.Smallest = i
		}
	}
	if unpriced > 0 {
		res.Rejected[RejectNotPriced] += unpriced
	}
	if oom > 0 {
		res.Rejected[RejectOOM] += oom
	}
	if res.Feasible == 0 {
		return res, nil
	}
	r.objective = objective
	r.best = [2]float64{float64(evals[res.Fastest].Step), float64(evals[res.Smallest].Peak)}
	// The top k by insertion into a sorted list: the order is total, so the result is unique. A
	// candidate with overlap off that prices exactly as its overlap-on twin (nothing to overlap)
	// is folded into the twin: one row.
	top := make([]int, 0, k)
	for i := range evals {
		if !evals[i].Feasible || !evals[i].Priced {
			continue
		}
		if i > 0 && isTwin(space.Candidates[i-1], space.Candidates[i]) && evals[i-1] == evals[i] {
			res.Folded++
			continue
		}
		if len(top) == k && !r.less(i, top[k-1]) {
			continue
		}
		at := sort.Search(len(top), func(j int) bool { return r.less(i, top[j]) })
		if len(top) < k {
			top = append(top, 0)
		}
		copy(top[at+1:], top[at:len(top)-1])
		top[at] = i
	}
	res.Top = top
	res.Front = ParetoFront(evals)
	return res, nil
}

// ParetoFront returns the feasible candidates that no other dominates in (step time, peak
// memory), by step time ascending; of candidates equal in both, the first in the enumeration.
func ParetoFront(evals []Eval) []int {
	idx := make([]int, 0, len(evals))
	for i := range evals {
		if evals[i].Priced && evals[i].Feasible {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool {
		ea, eb := &evals[idx[a]], &evals[idx[b]]
		if ea.Step != eb.Step {
			return ea.Step < eb.Step
		}
		if ea.Peak != eb.Peak {
			return ea.Peak < eb.Peak
		}
		return idx[a] < idx[b]
	})
	var front []int
	minPeak := units.Bytes(math.Inf(1))
	for _, i := range idx {
		if evals[i].Peak < minPeak {
			front = append(front, i)
			minPeak = evals[i].Peak
		}
	}
	return front
}

// Rerank reorders the top candidates by the objective with step times from the simulator:
// sim[j] replaces the step time of res.Top[j] (sim[j] <= 0: keep the closed form's). Only the
// first len(sim) entries of Top move, among themselves. It returns the new order of Top.
func Rerank(res *Result, evals []Eval, sim []units.Seconds) []int {
	n := min(len(sim), len(res.Top))
	if n < 2 {
		return res.Top
	}
	local := make([]Eval, n)
	for j := 0; j < n; j++ {
		local[j] = evals[res.Top[j]]
		if sim[j] > 0 {
			local[j].Step = sim[j]
		}
	}
	r := &ranker{evals: local, objective: res.Objective}
	if res.Fastest >= 0 {
		r.best = [2]float64{float64(evals[res.Fastest].Step), float64(evals[res.Smallest].Peak)}
	}
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return r.less(order[a], order[b]) })
	out := append([]int(nil), res.Top...)
	for j, o := range order {
		out[j] = res.Top[o]
	}
	return out
}
