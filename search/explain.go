package search

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Label is how the planner prints a strategy: complete and canonical (strategies.Short), so
// that pasted into tpsim predict or sim it prices the same strategy.
func Label(st strategies.Strategy) string { return st.Short() }

// Explain says why the first of top won, in the terms of the classic guidance, with numbers:
// the model's size against device memory (does plain data parallel fit), the hardware (tensor
// parallel inside a node's fast links, data parallel across nodes), and the requirement (what the
// runner-up and the best of the other objective would save and cost). top is res.Top, possibly
// reordered by Rerank. With no feasible candidate it says why none is.
func Explain(ev *Evaluator, evals []Eval, res *Result, top []int) []string {
	lines, _ := explainNamed(ev, evals, res, top)
	return lines
}

// explainNamed is Explain and the candidates it names.
func explainNamed(ev *Evaluator, evals []Eval, res *Result, top []int) ([]string, []int) {
	x := explainer{ev: ev, evals: evals, res: res}
	lines := x.explain(top)
	return lines, x.used
}

func (x *explainer) explain(top []int) []string {
	res := x.res
	if res.Feasible == 0 || len(top) == 0 {
		return x.none()
	}
	var out []string
	w := top[0]
	out = append(out, x.winner(w))
	out = append(out, x.modelSize(w))
	out = append(out, x.hardware(w))
	out = append(out, x.requirement(top)...)
	out = append(out, x.counts())
	return out
}

type explainer struct {
	ev    *Evaluator
	evals []Eval
	res   *Result
	used  []int // the candidates named
}

func (x *explainer) st(i int) strategies.Strategy {
	x.used = append(x.used, i)
	return x.ev.Space.Strategy(i)
}

// gib prints bytes in GiB, or MiB below one GiB.
func gib(b units.Bytes) string {
	if math.Abs(b.GiB()) < 1 {
		return fmt.Sprintf("%.0f MiB", float64(b)/float64(units.MiB))
	}
	return fmt.Sprintf("%.1f GiB", b.GiB())
}

// pct is how much a differs from b, as a percentage of b, or as a factor from twice on.
func pct(a, b float64) string {
	r := math.Max(a, b) / math.Min(a, b)
	if r >= 2 {
		return fmt.Sprintf("%.3g x", r)
	}
	return fmt.Sprintf("%.1f%%", 100*math.Abs(a/b-1))
}

func (x *explainer) devMem() units.Bytes { return x.ev.HW.Device.Memory }

func (x *explainer) winner(w int) string {
	e := &x.evals[w]
	what := map[string]string{Time: "the least step time", Memory: "the least peak memory per device",
		Comm: "the fewest bytes per device over the slowest link", Balanced: "the best balance of step time and memory: the least max(step / fastest step, peak / smallest peak)"}[x.res.Objective]
	return fmt.Sprintf("Winner for objective %s (%s): %s, %s per step, %s tokens/s, MFU %.1f%%, peak %s of %s per device.",
		x.res.Objective, what, Label(x.st(w)), e.Step, strconv.FormatFloat(math.Round(e.TokensPerS), 'f', -1, 64), 100*e.MFU, gib(e.Peak), gib(x.devMem()))
}

// modelSize compares the model states with device memory and says whether plain data parallel
// (a whole replica per device, no sharding) fits.
func (x *explainer) modelSize(w int) string {
	m, hw := x.ev.Model, x.ev.HW
	base := x.ev.Space.Base
	params := m.Params()
	// Rajbhandari et al. 2020 §3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per parameter.
	per := 16
	switch {
	case base.Precision == strategies.PrecisionFP32 && base.Optimizer == strategies.OptimizerAdam:
		per = 16
	case base.Precision == strategies.PrecisionFP32:
		per = 8
	case base.Optimizer == strategies.OptimizerSGD:
		per = 8
	}
	states := units.Bytes(float64(params) * float64(per))
	var b strings.Builder
	fmt.Fprintf(&b, "Model against memory: %s has %.3gB parameters; weights, gradients and optimizer state take %d bytes per parameter (%s %s; Rajbhandari et al. 2020 §3.1), %s, against %s per %s. ",
		m.Name, float64(params)/1e9, per, base.Precision, base.Optimizer, gib(states), gib(hw.Device.Memory), hw.Name)
	// Plain data parallel: dp = all devices, nothing else split or sharded.
	plain := func(i int) bool {
		c := x.ev.Space.Candidates[i]
		return c.TP == 1 && c.PP == 1 && c.CP == 1 && c.ZeRO == 0
	}
	best := -1
	for i := range x.ev.Space.Candidates {
		if plain(i) && x.evals[i].Feasible && (best < 0 || x.evals[i].Step < x.evals[best].Step) {
			best = i
		}
	}
	smallest := x.ev.SmallestPeak(x.evals, plain)
	ws := x.evals[w]
	switch {
	case smallest < 0:
		fmt.Fprintf(&b, "Plain data parallel (dp=%d alone) is not in the search space here (fixed knobs or the global batch exclude it).", x.ev.GPUs)
	case best < 0:
		fmt.Fprintf(&b, "Plain data parallel (every device a full replica, dp=%d) does not fit: even its smallest form (%s) needs %s per device. ",
			x.ev.GPUs, Label(x.st(smallest)), gib(x.evals[smallest].Peak))
		fmt.Fprintf(&b, "The winner brings it to %s by %s.", gib(ws.Peak), x.howSplit(w))
	case best == w:
		fmt.Fprintf(&b, "Plain data parallel fits (%s per device) and is the winner.", gib(x.evals[best].Peak))
	default:
		e := x.evals[best]
		rel := "slower"
		if e.Step < ws.Step {
			rel = "faster"
		}
		fmt.Fprintf(&b, "Plain data parallel fits: its best form, %s, needs %s per device and is %s %s than the winner (%s per step), which %s.",
			Label(x.st(best)), gib(e.Peak), pct(float64(e.Step), float64(ws.Step)), rel, ws.Step, x.howSplit(w))
	}
	return b.String()
}

// howSplit says how strategy i divides the model states.
func (x *explainer) howSplit(i int) string {
	st := x.st(i)
	var ways []string
	if st.Mesh.TP > 1 {
		ways = append(ways, fmt.Sprintf("splitting each layer over tp=%d", st.Mesh.TP))
	}
	if st.Mesh.PP > 1 {
		ways = append(ways, fmt.Sprintf("splitting the layers into pp=%d stages", st.Mesh.PP))
	}
	if st.ZeRO > 0 {
		what := map[int]string{1: "optimizer state", 2: "optimizer state and gradients", 3: "optimizer state, gradients and weights"}[st.ZeRO]
		ways = append(ways, fmt.Sprintf("sharding the %s over dp=%d (ZeRO-%d)", what, st.Mesh.DP*st.Mesh.CP, st.ZeRO))
	}
	if st.Recompute != strategies.RecomputeNone {
		ways = append(ways, string(st.Recompute)+" activation recomputation")
	}
	if st.SP {
		ways = append(ways, "sequence parallelism")
	}
	if len(ways) == 0 {
		return "keeping a whole replica per device"
	}
	return joinAnd(ways)
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// hardware says where each mesh dimension of the winner runs.
func (x *explainer) hardware(w int) string {
	hw := x.ev.HW
	st := x.st(w)
	e := &x.evals[w]
	lv := x.ev.Levels(st.Mesh)
	var b strings.Builder
	lvDesc := func(l int) string {
		L := hw.Levels[l]
		return fmt.Sprintf("%s (%.0f GB/s per device)", L.Name, float64(L.Bandwidth)/1e9)
	}
	node := x.ev.nodeSize
	if node <= 0 || x.ev.GPUs <= node {
		fmt.Fprintf(&b, "Hardware: all %d devices share one level, %s, so every mesh dimension runs on the same links and the choice turns on memory and bytes moved, not on which link carries them. ", x.ev.GPUs, lvDesc(x.ev.slowest))
	} else {
		fmt.Fprintf(&b, "Hardware: a node holds %d devices on %s; the %d devices span %d nodes, joined by %s. ",
			node, lvDesc(0), x.ev.GPUs, (x.ev.GPUs+node-1)/node, lvDesc(x.ev.slowest))
	}
	names := strategies.DimOrder // indexed like costmodel.IndexPP..costmodel.IndexTP
	what := map[strategies.Dim]string{strategies.DimTP: "tensor-parallel activation collectives", strategies.DimDP: "data-parallel gradient (and ZeRO) collectives",
		strategies.DimPP: "pipeline sends", strategies.DimCP: "context-parallel key/value exchanges"}
	var parts []string
	for _, d := range []int{costmodel.IndexTP, costmodel.IndexCP, costmodel.IndexDP, costmodel.IndexPP} {
		if lv[d] < 0 {
			continue
		}
		n := names[d]
		parts = append(parts, fmt.Sprintf("%s=%d: %s, %s per device per step over %s", n, st.Mesh.Size(n), what[n], e.CommBytes[d], hw.Levels[lv[d]].Name))
	}
	if len(parts) == 0 {
		b.WriteString("the winner uses one device per replica with no communication but what its mesh needs (none).")
		return b.String()
	}
	b.WriteString("The winner's " + strings.Join(parts, "; ") + ". ")
	if node > 0 && x.ev.GPUs > node {
		switch {
		case st.Mesh.TP > 1 && lv[costmodel.IndexTP] == 0:
			fmt.Fprintf(&b, "Tensor parallel stays inside a node (tp=%d <= %d), where its per-layer collectives have the fast links", st.Mesh.TP, node)
			if lv[costmodel.IndexDP] > 0 {
				b.WriteString("; data parallel, which communicates once per step, crosses nodes")
			}
			b.WriteString(", as the classic guidance says.")
		case st.Mesh.TP > 1:
			fmt.Fprintf(&b, "Tensor parallel spans nodes (tp=%d > %d devices per node), against the classic guidance; ", st.Mesh.TP, node)
			if alt := x.bestWith(func(c strategies.Candidate) bool { return int(c.TP) <= node }); alt >= 0 {
				fmt.Fprintf(&b, "the best strategy that keeps tp inside a node, %s, takes %s and needs %s per device.", Label(x.st(alt)), x.evals[alt].Step, gib(x.evals[alt].Peak))
			} else {
				b.WriteString("no strategy with tp inside a node fits.")
			}
		default:
			b.WriteString("There is no tensor parallelism to keep inside a node.")
		}
	}
	return b.String()
}

// bestWith returns the feasible candidate with the best objective among those keep accepts, -1 if none.
func (x *explainer) bestWith(keep func(strategies.Candidate) bool) int {
	r := &ranker{evals: x.evals, objective: x.res.Objective}
	if x.res.Fastest >= 0 {
		r.best = [2]float64{float64(x.evals[x.res.Fastest].Step), float64(x.evals[x.res.Smallest].Peak)}
	}
	best := -1
	for i, c := range x.ev.Space.Candidates {
		if !x.evals[i].Priced || !x.evals[i].Feasible || !keep(c) {
			continue
		}
		if best < 0 || r.less(i, best) {
			best = i
		}
	}
	return best
}

// compare says what b saves and costs against a.
func (x *explainer) compare(a, b int) string {
	ea, eb := &x.evals[a], &x.evals[b]
	var s []string
	switch {
	case eb.Step > ea.Step:
		s = append(s, fmt.Sprintf("is %s slower (%s per step)", pct(float64(eb.Step), float64(ea.Step)), eb.Step))
	case eb.Step < ea.Step:
		s = append(s, fmt.Sprintf("is %s faster (%s per step)", pct(float64(eb.Step), float64(ea.Step)), eb.Step))
	default:
		s = append(s, "takes the same step time")
	}
	switch {
	case eb.Peak < ea.Peak:
		s = append(s, fmt.Sprintf("saves %s of memory per device (%s)", gib(ea.Peak-eb.Peak), gib(eb.Peak)))
	case eb.Peak > ea.Peak:
		s = append(s, fmt.Sprintf("needs %s more memory per device (%s)", gib(eb.Peak-ea.Peak), gib(eb.Peak)))
	default:
		s = append(s, "needs the same memory")
	}
	ta, tb := ea.TotalBytes(), eb.TotalBytes()
	switch {
	case tb < ta:
		s = append(s, fmt.Sprintf("sends %s less per device per step", ta-tb))
	case tb > ta:
		s = append(s, fmt.Sprintf("sends %s more per device per step", tb-ta))
	}
	if slow := x.ev.HW.Levels[x.ev.slowest].Name; eb.SlowBytes != ea.SlowBytes && x.ev.slowest > 0 {
		if eb.SlowBytes < ea.SlowBytes {
			s = append(s, fmt.Sprintf("%s less over %s", ea.SlowBytes-eb.SlowBytes, slow))
		} else {
			s = append(s, fmt.Sprintf("%s more over %s", eb.SlowBytes-ea.SlowBytes, slow))
		}
	}
	return joinAnd(s)
}

// requirement compares the winner with the runner-up, with the best strategy of a different mesh
// when the runner-up shares the winner's, and with the best of the other side of the trade-off.
func (x *explainer) requirement(top []int) []string {
	w := top[0]
	var out []string
	if len(top) > 1 {
		r := top[1]
		out = append(out, fmt.Sprintf("Runner-up: %s %s.", Label(x.st(r)), x.compare(w, r)))
		wm := x.ev.Space.Candidates[w]
		if c := x.ev.Space.Candidates[r]; c.PP == wm.PP && c.DP == wm.DP && c.CP == wm.CP && c.TP == wm.TP {
			alt := x.bestWith(func(c strategies.Candidate) bool {
				return c.PP != wm.PP || c.DP != wm.DP || c.CP != wm.CP || c.TP != wm.TP
			})
			if alt >= 0 {
				out = append(out, fmt.Sprintf("The best strategy on another mesh, %s, %s.", Label(x.st(alt)), x.compare(w, alt)))
			}
		}
	} else {
		out = append(out, "No other strategy is feasible.")
	}
	f, s := x.res.Fastest, x.res.Smallest
	switch x.res.Objective {
	case Time:
		if s != w {
			out = append(out, fmt.Sprintf("If memory is what matters (--objective memory): %s %s.", Label(x.st(s)), x.compare(w, s)))
		} else {
			out = append(out, "The fastest strategy is also the one with the least memory: the objectives agree.")
		}
	default:
		if f != w {
			out = append(out, fmt.Sprintf("The fastest strategy, %s, %s: objective %s gives up that time for what the winner saves.",
				Label(x.st(f)), x.compare(w, f), x.res.Objective))
		} else {
			out = append(out, fmt.Sprintf("The winner is also the fastest strategy: objective %s and time agree here.", x.res.Objective))
		}
	}
	return out
}

func (x *explainer) counts() string {
	var parts []string
	for _, k := range strategies.SortedReasons(x.res.Rejected) {
		parts = append(parts, fmt.Sprintf("%s %d", k, x.res.Rejected[k]))
	}
	rej := "none rejected"
	if len(parts) > 0 {
		rej = "rejected: " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("Searched %d combinations, %d feasible; %s.", x.res.Searched, x.res.Feasible, rej)
}

// none says why no candidate is feasible.
func (x *explainer) none() []string {
	ev := x.ev
	var out []string
	if len(ev.Space.Candidates) == 0 {
		out = append(out, fmt.Sprintf("No strategy: every one of the %d combinations for %s on %d devices breaks a rule.", x.res.Searched, ev.Model.Name, ev.GPUs))
		out = append(out, x.hints()...)
		out = append(out, x.counts())
		return out
	}
	small := x.ev.SmallestPeak(x.evals, nil)
	if small < 0 {
		out = append(out, "No strategy could be priced by the closed-form model.")
	} else {
		out = append(out, fmt.Sprintf("No strategy fits in %s per %s device: the smallest, %s, needs %s per device. Use more devices, a device with more memory, a smaller global batch or sequence, or fewer fixed knobs.",
			gib(x.devMem()), ev.HW.Name, Label(x.st(small)), gib(x.evals[small].Peak)))
	}
	out = append(out, x.counts())
	return out
}

// hints turns the main rejection reasons into what to change.
func (x *explainer) hints() []string {
	ev := x.ev
	t := ev.Model.Transformer
	base := ev.Space.Base
	var out []string
	rej := x.res.Rejected
	if t != nil {
		maxTP, maxPP, maxCP := 1, 1, 1
		var tps []string
		g := gcd(gcd(t.Heads, t.KVHeads), gcd(t.FFN, t.Vocab))
		for d := 1; d <= g; d++ {
			if g%d == 0 {
				maxTP = d
				tps = append(tps, strconv.Itoa(d))
			}
		}
		var pps []string
		for d := 1; d <= t.Layers; d++ {
			if t.Layers%d == 0 {
				maxPP = d
				pps = append(pps, strconv.Itoa(d))
			}
		}
		maxCP = base.Seq
		if rej[strategies.RejectHeads]+rej[strategies.RejectFFN]+rej[strategies.RejectVocab] > 0 {
			out = append(out, fmt.Sprintf("tp must divide the %d heads, %d key/value heads, MLP width %d and vocabulary %d: tp in {%s}.",
				t.Heads, t.KVHeads, t.FFN, t.Vocab, strings.Join(tps, ",")))
		}
		if rej[strategies.RejectLayers] > 0 {
			out = append(out, fmt.Sprintf("pp must divide the %d layers: pp in {%s}.", t.Layers, strings.Join(pps, ",")))
		}
		limit := float64(maxTP) * float64(maxPP) * float64(maxCP) * float64(base.GBS)
		if float64(ev.GPUs) > limit {
			out = append(out, fmt.Sprintf("More devices than the model can use: at most tp %d x pp %d x cp %d x dp %d (one sample per replica of the global batch) = %.0f.",
				maxTP, maxPP, maxCP, base.GBS, limit))
		}
	}
	if rej[strategies.RejectBatch] > 0 {
		out = append(out, fmt.Sprintf("dp x mbs must divide the global batch %d; the data-parallel sizes this mesh allows do not. Use a global batch that is a multiple of the data-parallel size (e.g. of %d), or fix tp/pp so that dp divides %d.",
			base.GBS, ev.GPUs, base.GBS))
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
