package search

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Sim modes of a Request: when the planner re-ranks its top candidates with the simulator.
const (
	SimAuto = "auto" // the longest prefix of the top whose timelines fit SimBudget events
	SimOn   = "on"   // every top candidate
	SimOff  = "off"  // none: the closed form's ranking
)

// SimBudget is the most simulator events (SimEvents) SimAuto spends: about 2 s of one core at
// the simulator's 0.6 us per event (a pipeline's task is one event, so
// the 50 best of GPT-3 175B on 256 GPUs take 466,000, estimated at 523,000; ZeRO-3 with overlap
// is op by op and takes far more).
const SimBudget = 3_000_000

// DefaultSimTop is how many of the closed form's best candidates the planner simulates.
const DefaultSimTop = 50

// Request is one planning question: a model on GPUs devices, ranked by Objective.
type Request struct {
	GPUs        int
	GlobalBatch int // 0: the model's default
	Seq         int // 0: the model's default
	Objective   string
	Top         int // how many of the best candidates to keep
	Fix         strategies.Fix
	Sim         string // SimAuto, SimOn or SimOff ("" is SimAuto)
	// SimTop is how many of the closed form's best candidates the simulator re-ranks (0:
	// DefaultSimTop); the winner is the simulator's best of them.
	SimTop int
	// Workers is the number of goroutines that price candidates (0: one per CPU). The result
	// does not depend on it.
	Workers int
}

// Entry is one of the top candidates: the keys of `tpsim predict --json`, its rank, and the
// simulated step time when the simulator re-ranked it.
type Entry struct {
	Rank int `json:"rank"`
	*costmodel.Result
	SimStep *float64 `json:"sim_step_s,omitempty"`
}

// Point is one candidate of the Pareto front.
type Point struct {
	Strategy string  `json:"strategy"`
	Step     float64 `json:"step_s"`
	Peak     float64 `json:"peak_bytes"`
}

// Output is a finished plan as `tpsim plan --json` prints it.
type Output struct {
	Model       string         `json:"model"`
	Hardware    string         `json:"hardware"`
	GPUs        int            `json:"gpus"`
	GlobalBatch int            `json:"global_batch"`
	Seq         int            `json:"seq"`
	Objective   string         `json:"objective"`
	Fix         string         `json:"fix"`
	Searched    int            `json:"searched"`
	Feasible    int            `json:"feasible"`
	Rejected    map[string]int `json:"rejected"`
	Top         []Entry        `json:"top"`
	Front       []Point        `json:"pareto_front"`
	Simulated   int            `json:"simulated"`
	// TimeSource names where the step times that rank the candidates, draw the Pareto front and
	// pick the winner come from.
	TimeSource string `json:"time_source"`
	// Assumed are the software knobs the user left unset and the planner took from the stack
	// the hardware runs (DefaultStack), one line each with its source; they open the explanation.
	Assumed     []string `json:"assumed,omitempty"`
	Explanation string   `json:"explanation"`
}

// Planned is a finished search with everything its outputs need.
type Planned struct {
	Ev    *Evaluator
	Evals []Eval
	Res   *Result
	Order []int // the top candidates in their final order (re-ranked by the simulator when it ran)
	Out   *Output
}

// Plan enumerates, prices, ranks, simulates and explains: the whole planner.
func Plan(m *model.Model, hw *hardware.Hardware, req Request) (*Planned, error) {
	fix, assumed := DefaultStack(m, hw, req.Fix)
	space, err := strategies.Enumerate(m, req.GPUs, strategies.EnumerateOptions{GBS: req.GlobalBatch, Seq: req.Seq, Fix: fix})
	if err != nil {
		return nil, err
	}
	ev, err := NewEvaluator(m, hw, space, req.GPUs)
	if err != nil {
		return nil, err
	}
	ev.workers = req.Workers
	evals := EvaluateParallel(ev, req.Workers)
	simTop := req.SimTop
	if simTop <= 0 {
		simTop = DefaultSimTop
	}
	if req.Sim == SimOff {
		simTop = 0
	}
	res, err := RankExact(ev, evals, req.Objective, max(req.Top, simTop))
	if err != nil {
		return nil, err
	}
	order := res.Top
	sims := simulateTop(ev, res, req.Sim, simTop)
	nsim := 0
	for _, s := range sims {
		if s > 0 {
			nsim++
		}
	}
	source := "closed form (the simulator re-ranked none)"
	if nsim >= 2 {
		order = Rerank(res, evals, sims)
		// One time source for the ranking, the front, the figure and the winner: the simulated
		// step where the simulator ran, the closed form's elsewhere.
		for j, s := range sims {
			if e := &evals[res.Top[j]]; s > 0 && e.Step > 0 {
				k := float64(e.Step) / float64(s)
				e.Step, e.TokensPerS, e.MFU = s, e.TokensPerS*k, e.MFU*k
			}
		}
		res.Front, res.Fastest = ParetoFront(evals), fastest(evals)
		source = fmt.Sprintf("simulator for the closed form's best %d, closed form for the rest", nsim)
		if err := refineNamed(ev, evals, res, order); err != nil {
			return nil, err
		}
	}
	order = order[:min(len(order), req.Top)]
	out := &Output{Model: m.Name, Hardware: hw.Name, GPUs: req.GPUs, GlobalBatch: space.Base.GBS, Seq: space.Base.Seq,
		Objective: res.Objective, Fix: req.Fix.String(), Searched: res.Searched, Feasible: res.Feasible, Rejected: res.Rejected,
		Top: []Entry{}, Front: []Point{}, Simulated: nsim, TimeSource: source, Assumed: assumed}
	lows := &lowerings{low: ev.lowerer}
	simOf := map[int]units.Seconds{}
	for j, s := range sims {
		if s > 0 {
			simOf[res.Top[j]] = s
		}
	}
	// The rows are what tpsim predict prints for their strategies, to the byte; each is lowered
	// and priced on its own, so in parallel, into its own entry.
	rows := make([]*costmodel.Result, len(order))
	errs := make([]error, len(order))
	parallelEach(ev.workers, len(order), func(r int) {
		p, err := lows.get(space.Strategy(order[r]))
		if err == nil {
			rows[r], err = costmodel.Predict(p, hw)
		}
		errs[r] = err
	})
	for r, i := range order {
		if errs[r] != nil {
			return nil, errs[r]
		}
		e := Entry{Rank: r + 1, Result: rows[r]}
		if s, ok := simOf[i]; ok {
			v := float64(s)
			e.SimStep = &v
		}
		out.Top = append(out.Top, e)
	}
	for _, i := range res.Front {
		out.Front = append(out.Front, Point{Strategy: Label(space.Strategy(i)), Step: float64(evals[i].Step), Peak: float64(evals[i].Peak)})
	}
	lines := append(assumed, Explain(ev, evals, res, order)...)
	lines = append(lines, simNote(ev, res, sims, req.Sim), "Step times: "+source+".")
	out.Explanation = strings.Join(lines, "\n")
	return &Planned{Ev: ev, Evals: evals, Res: res, Order: order, Out: out}, nil
}

// RankExact is Rank where every candidate the result names (the top, the Pareto front, the
// fastest and the smallest, and those Explain names) has its exact step: the search prices
// pipelines with a lower bound of the step first (Eval.Bound), and RankExact refines the
// candidates it is about to name and ranks again, until it names only exact ones. An exact step
// is never below its bound, so a candidate left with its bound could not have been named.
func RankExact(ev *Evaluator, evals []Eval, objective string, k int) (*Result, error) {
	for {
		res, err := Rank(ev.Space, evals, objective, k)
		if err != nil {
			return nil, err
		}
		_, used := explainNamed(ev, evals, res, res.Top)
		named := append(append(append(used, res.Top...), res.Front...), res.Fastest, res.Smallest)
		var need []int
		for _, i := range named {
			if i >= 0 && evals[i].Bound {
				need = append(need, i)
			}
		}
		if len(need) == 0 {
			return res, nil
		}
		ev.Refine(evals, need)
	}
}

// refineNamed makes exact every bound among the candidates the result and the explanation of
// order name (see RankExact), recomputing the front when a refinement moved one.
func refineNamed(ev *Evaluator, evals []Eval, res *Result, order []int) error {
	for {
		_, used := explainNamed(ev, evals, res, order)
		var need []int
		for _, i := range append(append(used, res.Front...), res.Fastest, res.Smallest) {
			if i >= 0 && evals[i].Bound {
				need = append(need, i)
			}
		}
		if len(need) == 0 {
			return nil
		}
		ev.Refine(evals, need)
		res.Front, res.Fastest = ParetoFront(evals), fastest(evals)
	}
}

// fastest is the feasible candidate with the least step (ties: the first), -1 if none.
func fastest(evals []Eval) int {
	f := -1
	for i := range evals {
		if e := &evals[i]; e.Priced && e.Feasible && (f < 0 || e.Step < evals[f].Step) {
			f = i
		}
	}
	return f
}

// Workers is the number of goroutines for n candidates.
func Workers(w, n int) int {
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	// Below a few thousand candidates a goroutine costs more than it saves.
	return max(1, min(w, n/4096))
}

// EvaluateParallel prices every candidate on at most w goroutines (0: one per CPU), each taking
// the next chunk of evalChunk candidates until none is left and writing its own part of one
// slice: the result is the same however it is split. Small chunks taken in turn keep both cores
// busy where the cost is uneven: a candidate whose per-layer configuration no other one priced
// before lowers it (costmodel.Derived), and those cluster in the space's order.
func EvaluateParallel(ev *Evaluator, w int) []Eval {
	n := len(ev.Space.Candidates)
	evals := make([]Eval, n)
	parallelEach(Workers(w, n), (n+evalChunk-1)/evalChunk, func(c int) {
		lo, hi := c*evalChunk, min((c+1)*evalChunk, n)
		ev.EvaluateRange(lo, hi, evals[lo:hi])
	})
	return evals
}

// evalChunk is the candidates EvaluateParallel prices per turn: a few milliseconds of work,
// against a few nanoseconds to take a turn.
const evalChunk = 512

// lowerings lowers each strategy once for the planner's simulations and rows; strategies that
// differ only in the overlap or the schedule share a Program (neither changes it).
type lowerings struct {
	low *program.Lowerer
	mu  sync.Mutex
	all map[strategies.Strategy]*lowering
}

type lowering struct {
	once sync.Once
	p    *program.Program
	err  error
}

// lowerKey is the strategy st lowers as: overlap and schedule change the Program's timeline, not
// the Program.
func lowerKey(st strategies.Strategy) strategies.Strategy {
	k := st
	k.Overlap, k.Schedule = true, strategies.Schedule1F1B
	if st.VPP > 1 {
		k.Schedule = strategies.ScheduleInterleaved
	}
	return k
}

// as is p carrying st's overlap and schedule (a shallow copy).
func as(p *program.Program, st strategies.Strategy) *program.Program {
	q := *p
	q.Strategy.Overlap, q.Strategy.Schedule = st.Overlap, st.Schedule
	return &q
}

// get returns st's Program (a shallow copy that carries st's overlap and schedule).
func (l *lowerings) get(st strategies.Strategy) (*program.Program, error) {
	k := lowerKey(st)
	l.mu.Lock()
	if l.all == nil {
		l.all = map[strategies.Strategy]*lowering{}
	}
	lw := l.all[k]
	if lw == nil {
		lw = &lowering{}
		l.all[k] = lw
	}
	l.mu.Unlock()
	lw.once.Do(func() { lw.p, lw.err = l.low.Lower(k) })
	if lw.err != nil {
		return nil, lw.err
	}
	return as(lw.p, st), nil
}

// simulateTop simulates the top candidates the mode allows, in parallel. A zero entry was not
// simulated. Candidates that lower to one Program (they differ only in overlap or schedule) are
// simulated one after the other on one lowering, which is dropped once they are done: the
// Programs of the whole top are never held at once.
func simulateTop(ev *Evaluator, res *Result, mode string, k int) []units.Seconds {
	n := simCount(ev, res.Top[:min(k, len(res.Top))], mode)
	sims := make([]units.Seconds, n)
	if n < 2 {
		return sims[:0]
	}
	var groups [][]int // indices into the top, by lowering, in the order of their first
	at := map[strategies.Strategy]int{}
	for j := 0; j < n; j++ {
		key := lowerKey(ev.Space.Strategy(res.Top[j]))
		g, ok := at[key]
		if !ok {
			g = len(groups)
			at[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], j)
	}
	parallelEach(ev.workers, len(groups), func(k int) {
		g := groups[k]
		first := ev.Space.Strategy(res.Top[g[0]])
		p, err := ev.lowerer.Lower(lowerKey(first))
		if err != nil {
			return
		}
		for _, j := range g {
			if s, err := simulateProgram(as(p, ev.Space.Strategy(res.Top[j])), ev.HW); err == nil {
				sims[j] = s
			}
		}
		program.Recycle(p) // the next lowering reuses its slices
	})
	return sims
}

// simCount is how many of the top candidates the mode simulates.
func simCount(ev *Evaluator, top []int, mode string) int {
	switch mode {
	case SimOff:
		return 0
	case SimOn:
		return len(top)
	}
	total := 0
	for j, i := range top {
		total += SimEvents(ev.Model, ev.Space.Strategy(i))
		if total > SimBudget {
			return j
		}
	}
	return len(top)
}

// simNote says what the simulator did.
func simNote(ev *Evaluator, res *Result, sims []units.Seconds, mode string) string {
	n := 0
	for _, s := range sims {
		if s > 0 {
			n++
		}
	}
	switch {
	case len(res.Top) < 2:
		return "Simulator: nothing to re-rank."
	case mode == SimOff:
		return "Simulator: off (--sim off); the ranking is the closed form's."
	case n < 2:
		need := SimEvents(ev.Model, ev.Space.Strategy(res.Top[0]))
		return fmt.Sprintf("Simulator: not run; the top candidates' timelines are too long for --sim auto (about %d events, %.1f s each): use --sim on to re-rank them.",
			need, float64(need)*0.6e-6)
	}
	return fmt.Sprintf("Simulator: re-ranked the top %d candidates by simulated step time (discrete-event timeline of the lowered Program).", n)
}
