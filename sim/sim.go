package sim

import (
	"math"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Coster prices one op.
type Coster interface {
	Compute(op *program.Op) units.Seconds
	Comm(op *program.Op) units.Seconds
	// Hidden is the part of comm, the time of collective ops[i], that runs under a neighbouring
	// op's product and so stays off the rank's main sequence (costmodel.Coster.Hidden).
	Hidden(ops []program.Op, i int, comm units.Seconds) units.Seconds
	// OverlapSlowdown is σ: while one of a rank's asynchronous collectives runs, the rank's
	// main sequence advances at 1/(1+σ) of its speed (costmodel.Coster.OverlapSlowdown).
	OverlapSlowdown() float64
}

// Options tune a simulation.
type Options struct {
	// Cores, when positive, is the number of processor cores all ranks share (the host machine):
	// compute ops of all Replicas of every simulated rank share them by processor sharing, and
	// the Coster must then price ops as if each rank ran alone.
	Cores int
	// Spans keeps every op's interval in the Result (needed for traces and timelines).
	Spans bool
	// NoCriticalPath leaves Result.CriticalPath empty, for callers that read the step and its
	// breakdown only: a large pipeline's path is about a million spans (160 MB for Llama 3 405B
	// on 64 H200, which the planner's re-ranking threw away five times a plan).
	NoCriticalPath bool
}

// Span is one op instance on the timeline.
type Span struct {
	Rank   int    // pipeline rank
	Stream string // "compute" or "comm"
	// Async is true for ops of the communication stream that run beside the main sequence.
	Async bool
	// Task is true for a span that stands for a whole forward or backward task (without Spans
	// the simulator lays out such a task as one node when none of its ops overlaps another);
	// Kind and Module are those of its last op.
	Task   bool
	Dim    strategies.Dim
	Stage  int // virtual stage (model chunk)
	Micro  int // microbatch, -1 for optimizer ops
	Phase  program.Phase
	Kind   program.OpKind
	Module string
	Start  units.Seconds
	End    units.Seconds
}

// Result is a simulated step.
type Result struct {
	Step units.Seconds
	// The breakdown of the critical rank's step: Compute + CommExposed + Bubble + Optimizer = Step.
	Compute, CommExposed, Bubble, Optimizer units.Seconds
	// CriticalRank is the pipeline rank that finishes last.
	CriticalRank int
	// Utilization is, per pipeline rank, the fraction of the step its compute stream is busy.
	Utilization []float64
	// CriticalPath lists, from first to last, the ops whose ends set the step time.
	CriticalPath []Span
	Spans        []Span
	// Events is the number of events processed.
	Events int
}

// node is one op instance.
type node struct {
	op      *program.Op
	rank    int
	stage   int
	micro   int
	async   bool // on its rank's link for its mesh dimension, off the main sequence
	cost    units.Seconds
	compute bool // compute op (shares cores)
	// task: the node stands for a whole forward or backward task (op is its last op), of
	// computePart compute and commPart communication on the main sequence.
	task                  bool
	computePart, commPart units.Seconds

	deps    []int // nodes that must end before this one starts
	waiters []int
	pending int

	ready    units.Seconds // all deps done
	start    units.Seconds
	end      units.Seconds
	critDep  int // dep that ended last (-1 none)
	done     bool
	started  bool
	queued   bool    // its end is in the event queue (processor sharing)
	remain   float64 // remaining work at full speed (processor sharing, overlap slowdown)
	lastTick units.Seconds
	// A main-sequence node under an overlap slowdown (engine.retime): rate is its speed now,
	// slowed whether it ran slower at some time, and its end moves with the rate.
	rate   float64
	slowed bool
}

type event struct {
	t   units.Seconds
	seq int
	n   int // node that ends
}

// eventHeap is a binary min-heap of events by (t, seq); seq is unique, so the order in which
// events leave it is fixed by their keys alone.
type eventHeap []event

func (h eventHeap) Len() int { return len(h) }

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(ev event) { *h = heapPush(*h, ev, eventHeap.less) }

func (h *eventHeap) pop() event {
	var top event
	*h, top = heapPop(*h, eventHeap.less)
	return top
}

// heapPush appends x to q, a binary min-heap by less(q, i, j), and restores the heap order.
func heapPush[T any, Q ~[]T](q Q, x T, less func(q Q, i, j int) bool) Q {
	q = append(q, x)
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2
		if !less(q, j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
	return q
}

// heapPop removes and returns the least element of the binary min-heap q (less as for heapPush).
func heapPop[T any, Q ~[]T](q Q, less func(q Q, i, j int) bool) (Q, T) {
	n := len(q) - 1
	top := q[0]
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && less(q, r, j) {
			j = r
		}
		if !less(q, j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	return q, top
}

// Simulate lays one step of p out on a timeline, pricing ops with c.
func Simulate(p *program.Program, c Coster, opt Options) (*Result, error) {
	st := p.Strategy
	pp := st.Mesh.PP
	b := &builder{p: p, c: c, opt: opt}
	var tasks []program.Task
	for r := 0; r < pp; r++ {
		var err error
		if tasks, err = program.AppendSchedule(tasks[:0], st.Schedule, pp, st.VPP, p.Microbatches, r); err != nil {
			return nil, err
		}
		b.rank(r, tasks)
	}
	b.link()
	s := &engine{nodes: b.nodes, main: b.main, opt: opt, replicas: st.Mesh.Devices() / pp}
	if opt.Cores == 0 {
		s.sigma = c.OverlapSlowdown()
	}
	s.run()
	return s.result(p, opt), nil
}

type p2pKey struct {
	from, to, micro int
	phase           program.Phase
}

// recv is a pipeline receive waiting for the send of key.
type recv struct {
	node int
	key  p2pKey
}

func (b *builder) send(k p2pKey, id int) {
	i := (k.from*2+int(k.phase))*b.p.Microbatches + k.micro
	b.sends[i], b.sendTo[i] = id+1, k.to
}

type builder struct {
	p     *program.Program
	c     Coster
	opt   Options
	nodes []*node
	main  [][]int // per rank, main-sequence node ids in order
	// sends[(from*2+phase)*m+micro] is 1 + the node of stage from's send of that microbatch's
	// phase (its peer in sendTo); recvs lists the receives, linked to their sends by link.
	sends  []int
	sendTo []int
	recvs  []recv
	tasks  []taskCostT // per stage and phase (2 s + phase), priced on first use
	slab   []node
	// depSlab holds the first two dependencies of nodes (dep).
	depSlab []int
}

// alloc places n in the builder's slab of nodes (one allocation per 1024 of them).
func (b *builder) alloc(n node) *node {
	if len(b.slab) == cap(b.slab) {
		b.slab = make([]node, 0, 1024)
	}
	b.slab = append(b.slab, n)
	return &b.slab[len(b.slab)-1]
}

// dep makes n wait for node d (nothing for d < 0, no node). A node's first dependencies share one slab (most nodes have one
// or two: the op before and a pipeline send); more move to a slice of their own.
func (b *builder) dep(n *node, d int) {
	if d < 0 {
		return
	}
	if n.deps == nil {
		if len(b.depSlab)+2 > cap(b.depSlab) {
			b.depSlab = make([]int, 0, 2048)
		}
		i := len(b.depSlab)
		b.depSlab = b.depSlab[:i+2]
		n.deps = b.depSlab[i : i : i+2]
	}
	n.deps = append(n.deps, d)
}

func (b *builder) add(n *node) int {
	n.critDep = -1
	b.nodes = append(b.nodes, n)
	return len(b.nodes) - 1
}

// rankLayout is what laying out one rank's step (builder.rank) carries from task to task.
type rankLayout struct {
	r int
	// main is the rank's main sequence, prev its last node (-1 before the first).
	main []int
	prev int
	// gathers are the ZeRO-3 gathers in flight that the next op of the main sequence waits for;
	// buckets the gradient reductions (DDP buckets, ZeRO-3 reduce-scatters) the update waits for.
	gathers, buckets []int
	// lastGrad maps each parameter to the node that produces its gradient last: in the last
	// backward of its chunk, which the DDP buckets wait for.
	lastGrad map[string]int
	// The ZeRO-3 prefetch units of the task being laid out (builder.opNodes).
	unitStart [][]int
	unitOf    map[string]int
}

// push appends node id to the main sequence.
func (l *rankLayout) push(id int) {
	l.main = append(l.main, id)
	l.prev = id
}

// noteGrads records node id as the producer of the gradients of op's weight and bias.
func (l *rankLayout) noteGrads(op *program.Op, id int) {
	if op.Param != "" {
		l.lastGrad[op.Param] = id
	}
	if op.Bias != "" {
		l.lastGrad[op.Bias] = id
	}
}

// rank lays out the step of pipeline rank r, whose forward and backward tasks are tasks in the
// schedule's order: a node for each task whose ops run one after the other (wholeTask), else
// for each op (opNodes), then the optimizer phase of each of its chunks (optimizerNodes).
func (b *builder) rank(r int, tasks []program.Task) {
	if b.sends == nil {
		n := 2 * len(b.p.Stages) * b.p.Microbatches
		b.sends, b.sendTo = make([]int, n), make([]int, n)
		b.recvs = make([]recv, 0, len(tasks)*b.p.Strategy.Mesh.PP)
	}
	p, st := b.p, b.p.Strategy
	pp := st.Mesh.PP
	l := &rankLayout{r: r, prev: -1, lastGrad: map[string]int{}, unitOf: map[string]int{}}
	// The last backward of each chunk (its gradients feed the DDP buckets op by op).
	lastB := make([]int, st.VPP)
	for i, t := range tasks {
		if t.Backward {
			lastB[t.Chunk] = i
		}
	}
	for ti, t := range tasks {
		s := p.Stages[t.Chunk*pp+r]
		phase := program.Forward
		if t.Backward {
			phase = program.Backward
		}
		lastBackward := t.Backward && ti == lastB[t.Chunk]
		if !b.opt.Spans && b.opt.Cores == 0 && len(l.gathers) == 0 && b.wholeTask(l, s, t, phase, lastBackward) {
			continue
		}
		b.opNodes(l, s, t, phase)
	}
	b.optimizerNodes(l)
	b.main = append(b.main, l.main)
}

// wholeTask lays out task t of stage s (phase) when no op of it overlaps another, and reports
// whether it did: one node for all of it, from its receive (first op) to its send (last op),
// lasting as its ops one after the other; the chunk's last backward under DDP overlap, whose
// gradients the buckets wait for, as one node for each run of ops up to a bucket's last gradient
// (segments).
func (b *builder) wholeTask(l *rankLayout, s *program.Stage, t program.Task, phase program.Phase, lastBackward bool) bool {
	tc := b.taskCost(s, phase)
	if !tc.ok {
		return false
	}
	if lastBackward && b.p.Strategy.Overlap {
		for _, id := range b.segments(l, s, t) {
			b.dep(b.nodes[id], l.prev)
			l.push(id)
		}
		return true
	}
	ops := s.Forward
	if t.Backward {
		ops = s.Backward
	}
	n := b.alloc(node{op: &ops[len(ops)-1], rank: l.r, stage: s.Index, micro: t.Micro, task: true,
		cost: tc.compute + tc.comm, computePart: tc.compute, commPart: tc.comm})
	id := b.add(n)
	b.dep(n, l.prev)
	if first := &ops[0]; first.Kind == program.OpRecv {
		b.recvs = append(b.recvs, recv{id, p2pKey{first.Peer, s.Index, t.Micro, phase}})
	}
	if last := &ops[len(ops)-1]; last.Kind == program.OpSend {
		b.send(p2pKey{s.Index, last.Peer, t.Micro, phase}, id)
	}
	// Not the chunk's last backward (or nothing overlaps the buckets, which then wait for the
	// whole backward).
	l.push(id)
	return true
}

// opNode is a node for op of stage s on rank r in microbatch micro (-1: the optimizer phase),
// priced by the cost model: a compute op's time, or a communication op's.
func (b *builder) opNode(op *program.Op, r int, s *program.Stage, micro int) *node {
	n := b.alloc(node{op: op, rank: r, stage: s.Index, micro: micro})
	if op.Kind.IsComm() {
		n.cost = b.c.Comm(op)
	} else {
		n.cost = b.c.Compute(op)
		n.compute = true
	}
	return n
}

// opNodes lays out task t of stage s (phase) op by op: the main sequence in order, with
// ZeRO-3's gathers and reduce-scatters beside it. Prefetch (Strategy.Prefetch): the gathers of
// the task's k-th unit (program.PrefetchUnit, counted as their gathers appear) may start once
// unit k-Prefetch has started, its first op after the gathers it waits for (unitStart: the
// nodes that op waits for); the first Prefetch units' once the task has started.
func (b *builder) opNodes(l *rankLayout, s *program.Stage, t program.Task, phase program.Phase) {
	st := b.p.Strategy
	ops := s.Forward
	if t.Backward {
		ops = s.Backward
	}
	taskStart := l.prev
	l.unitStart = l.unitStart[:0]
	clear(l.unitOf)
	for i := range ops {
		op := &ops[i]
		n := b.opNode(op, l.r, s, t.Micro)
		if op.Kind.IsComm() {
			n.cost -= b.c.Hidden(ops, i, n.cost) // what the ops beside it hide
		}
		async := op.Dim == strategies.DimDP && st.Overlap && op.Kind.IsComm()
		id := b.add(n)
		if async && op.Kind == program.OpReduceScatter {
			// ZeRO-3 gradient reduction: it may start once the backward op before it has
			// produced the module's gradients and runs beside the next ones, on the data-parallel
			// link that the gathers use too (engine.tryStart); the update waits for it.
			n.async = true
			b.dep(n, l.prev)
			l.buckets = append(l.buckets, id)
			continue
		}
		if async {
			// ZeRO-3 prefetch: the gather may start once the unit Prefetch before its own has
			// started; the next op of the main sequence (the one that uses the parameters)
			// waits for it.
			n.async = true
			u, ok := l.unitOf[program.PrefetchUnit(op.Module)]
			if !ok {
				u = len(l.unitStart)
				l.unitOf[program.PrefetchUnit(op.Module)] = u
				l.unitStart = append(l.unitStart, nil)
			}
			if k := u - st.Prefetch; k >= 0 {
				for _, d := range l.unitStart[k] {
					b.dep(n, d)
				}
			} else {
				b.dep(n, taskStart)
			}
			l.gathers = append(l.gathers, id)
			continue
		}
		if len(l.unitOf) > 0 { // a ZeRO-3 unit has gathered: this op may start one
			if u, ok := l.unitOf[program.PrefetchUnit(op.Module)]; ok && l.unitStart[u] == nil {
				l.unitStart[u] = append(append(make([]int, 0, 1+len(l.gathers)), l.prev), l.gathers...)
			}
		}
		b.dep(n, l.prev)
		for _, g := range l.gathers {
			b.dep(n, g)
		}
		l.gathers = l.gathers[:0]
		switch op.Kind {
		case program.OpSend:
			b.send(p2pKey{s.Index, op.Peer, t.Micro, phase}, id)
		case program.OpRecv:
			b.recvs = append(b.recvs, recv{id, p2pKey{op.Peer, s.Index, t.Micro, phase}})
		}
		if t.Backward {
			l.noteGrads(op, id)
		}
		l.push(id)
	}
}

// optimizerNodes lays out the optimizer phase of every chunk of the rank: under DDP overlap each
// bucket's reduction starts once the last backward has produced all its gradients, beside the
// main sequence; the rest waits for every gradient reduction and any gather still in flight.
func (b *builder) optimizerNodes(l *rankLayout) {
	p, st := b.p, b.p.Strategy
	for c := 0; c < st.VPP; c++ {
		s := p.Stages[c*st.Mesh.PP+l.r]
		for i := range s.Optimizer {
			op := &s.Optimizer[i]
			n := b.opNode(op, l.r, s, -1)
			bucket := op.Dim == strategies.DimDP && (op.Kind == program.OpAllReduce || op.Kind == program.OpReduceScatter)
			id := b.add(n)
			if bucket && st.Overlap {
				n.async = true
				for _, name := range op.Params {
					if g, ok := l.lastGrad[name]; ok {
						b.dep(n, g)
					}
				}
				l.buckets = append(l.buckets, id)
				continue
			}
			b.dep(n, l.prev)
			for _, a := range l.buckets {
				b.dep(n, a)
			}
			for _, g := range l.gathers {
				b.dep(n, g)
			}
			l.push(id)
		}
	}
}

// segments lays out the last backward of stage s on rank l.r (task t), whose ops do not overlap,
// as one node for each run of ops that ends with the last gradient of a DDP bucket (and one for
// the ops after the last such run), each lasting as its ops one after the other; l.lastGrad maps
// every parameter the backward produces a gradient of to its run's node. It returns the nodes in
// order, each yet to be made to wait for the one before.
func (b *builder) segments(l *rankLayout, s *program.Stage, t program.Task) []int {
	ops := s.Backward
	at := make(map[string]int, 2*len(s.Params)) // parameter -> index of the op producing its gradient last
	for i := range ops {
		if op := &ops[i]; op.Param != "" || op.Bias != "" {
			if op.Param != "" {
				at[op.Param] = i
			}
			if op.Bias != "" {
				at[op.Bias] = i
			}
		}
	}
	end := make([]bool, len(ops)) // ops that end a run
	end[len(ops)-1] = true
	for i := range s.Optimizer {
		op := &s.Optimizer[i]
		if op.Dim != strategies.DimDP || (op.Kind != program.OpAllReduce && op.Kind != program.OpReduceScatter) {
			continue
		}
		last := -1
		for _, name := range op.Params {
			if j, ok := at[name]; ok && j > last {
				last = j
			}
		}
		if last >= 0 {
			end[last] = true
		}
	}
	var ids []int
	var compute, comm units.Seconds
	first := 0
	for i := range ops {
		op := &ops[i]
		if op.Kind.IsComm() {
			d := b.c.Comm(op)
			comm += d - b.c.Hidden(ops, i, d)
		} else {
			compute += b.c.Compute(op)
		}
		if !end[i] {
			continue
		}
		n := b.alloc(node{op: op, rank: l.r, stage: s.Index, micro: t.Micro, task: true,
			cost: compute + comm, computePart: compute, commPart: comm})
		id := b.add(n)
		if f := &ops[first]; f.Kind == program.OpRecv {
			b.recvs = append(b.recvs, recv{id, p2pKey{f.Peer, s.Index, t.Micro, program.Backward}})
		}
		if op.Kind == program.OpSend {
			b.send(p2pKey{s.Index, op.Peer, t.Micro, program.Backward}, id)
		}
		for j := first; j <= i; j++ {
			l.noteGrads(&ops[j], id)
		}
		ids = append(ids, id)
		compute, comm, first = 0, 0, i+1
	}
	return ids
}

// taskCostT is the time of one task's ops when they run one after the other.
type taskCostT struct {
	compute, comm units.Seconds
	ok            bool // no op overlaps another, a receive only first and a send only last
	priced        bool
}

// taskCost prices the forward or backward task of stage s once for all its microbatches.
func (b *builder) taskCost(s *program.Stage, phase program.Phase) taskCostT {
	if b.tasks == nil {
		b.tasks = make([]taskCostT, 2*len(b.p.Stages))
	}
	k := 2*s.Index + int(phase)
	if tc := b.tasks[k]; tc.priced {
		return tc
	}
	ops := s.Forward
	if phase == program.Backward {
		ops = s.Backward
	}
	tc := taskCostT{ok: len(ops) > 0, priced: true}
	st := b.p.Strategy
	for i := range ops {
		op := &ops[i]
		switch {
		case op.Dim == strategies.DimDP && st.Overlap && op.Kind.IsComm(),
			op.Kind == program.OpRecv && i != 0, op.Kind == program.OpSend && i != len(ops)-1:
			tc.ok = false
		case op.Kind.IsComm():
			d := b.c.Comm(op)
			tc.comm += d - b.c.Hidden(ops, i, d)
		default:
			tc.compute += b.c.Compute(op)
		}
	}
	b.tasks[k] = tc
	return tc
}

// link makes every pipeline receive wait for its send.
func (b *builder) link() {
	for _, r := range b.recvs {
		k := r.key
		i := (k.from*2+int(k.phase))*b.p.Microbatches + k.micro
		if k.from >= 0 && k.from < len(b.p.Stages) && k.micro >= 0 && k.micro < b.p.Microbatches && b.sends[i] > 0 && b.sendTo[i] == k.to {
			b.dep(b.nodes[r.node], b.sends[i]-1)
		}
	}
}

type engine struct {
	nodes    []*node
	main     [][]int
	opt      Options
	replicas int

	events eventHeap
	seq    int
	now    units.Seconds
	count  int

	// per rank main-sequence cursor and busy flag
	mainNext []int
	mainBusy []bool
	// links[r*nLinks+d] is rank r's link of mesh dimension strategies.DimOrder[d]: the
	// asynchronous collectives that are ready for it and whether one is running (see tryStart).
	links []link

	active []int // compute nodes running (processor sharing)
	// sigma is the Coster's OverlapSlowdown, applied on devices of their own (Cores 0).
	sigma float64
}

// nLinks is the number of mesh dimensions, one link each per rank.
var nLinks = len(strategies.DimOrder)

// linkIndex is the index of dimension dim in strategies.DimOrder.
func linkIndex(dim strategies.Dim) int {
	for i, d := range strategies.DimOrder {
		if d == dim {
			return i
		}
	}
	panic("sim: asynchronous collective on unknown mesh dimension " + string(dim))
}

// link is one rank's link of one mesh dimension: a min-heap of the ready asynchronous
// collectives that wait for it, by (ready time, node id), and whether one is running.
type link struct {
	queue []int
	busy  bool
}

func (e *engine) linkOf(n *node) *link {
	return &e.links[n.rank*nLinks+linkIndex(n.op.Dim)]
}

func (e *engine) before(a, b int) bool {
	na, nb := e.nodes[a], e.nodes[b]
	if na.ready != nb.ready {
		return na.ready < nb.ready
	}
	return a < b
}

// enqueue adds ready asynchronous node id to its link's queue.
func (e *engine) enqueue(id int) {
	l := e.linkOf(e.nodes[id])
	l.queue = heapPush(l.queue, id, e.beforeAt)
}

// dequeue removes and returns the first of l's queue.
func (e *engine) dequeue(l *link) int {
	var top int
	l.queue, top = heapPop(l.queue, e.beforeAt)
	return top
}

// beforeAt is before for the nodes at positions i and j of a link's queue.
func (e *engine) beforeAt(q []int, i, j int) bool { return e.before(q[i], q[j]) }

func (e *engine) run() {
	nr := len(e.main)
	e.mainNext, e.mainBusy = make([]int, nr), make([]bool, nr)
	e.links = make([]link, nr*nLinks)
	// The waiters of every node in one slice, each node's in the order of the nodes.
	count := make([]int, len(e.nodes)+1)
	for _, n := range e.nodes {
		n.pending = len(n.deps)
		for _, d := range n.deps {
			count[d+1]++
		}
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	all := make([]int, count[len(e.nodes)])
	fill := append([]int(nil), count[:len(e.nodes)]...)
	for i, n := range e.nodes {
		for _, d := range n.deps {
			all[fill[d]] = i
			fill[d]++
		}
	}
	for i, n := range e.nodes {
		n.waiters = all[count[i]:count[i+1]:count[i+1]]
		if n.async && n.pending == 0 {
			e.enqueue(i)
		}
	}
	touched := make([]bool, nr)
	for r := 0; r < nr; r++ {
		e.tryStart(r)
		if e.sigma > 0 {
			e.retime(r)
		}
	}
	for {
		if len(e.active) > 0 && e.opt.Cores > 0 {
			e.schedulePS()
		}
		if e.events.Len() == 0 {
			break
		}
		ev := e.events.pop()
		n := e.nodes[ev.n]
		if n.done || (n.compute && e.opt.Cores > 0 || n.rate > 0) && ev.t != n.end {
			continue // a stale estimate (processor sharing, overlap slowdown)
		}
		e.advance(ev.t)
		e.count++
		n.done = true
		if n.compute && e.opt.Cores > 0 {
			e.removeActive(ev.n)
		}
		if n.async {
			e.linkOf(n).busy = false
		} else {
			e.mainBusy[n.rank] = false
		}
		// Only the ranks of this node and its waiters can start something now (every other
		// rank's streams and dependencies are as they were after the last event); they are
		// tried in rank order, as trying every rank would.
		touched[n.rank] = true
		for _, w := range n.waiters {
			m := e.nodes[w]
			m.pending--
			touched[m.rank] = true
			if n.end >= m.ready {
				m.ready = n.end
				m.critDep = ev.n
			}
			if m.async && m.pending == 0 {
				e.enqueue(w)
			}
		}
		for r := range touched {
			if touched[r] {
				touched[r] = false
				e.tryStart(r)
				if e.sigma > 0 {
					e.retime(r)
				}
			}
		}
	}
}

// tryStart starts the next op of rank r's main sequence when it is free and the op's
// dependencies are done, and on each of r's free links the asynchronous collective that became
// ready first (ties in Program order).
//
// A link runs one collective at a time: collectives over one group are bandwidth-bound, and
// NCCL serialises the operations of one communicator ("NCCL collective operations on a given
// communicator are always serialized", NVIDIA/nccl#574). PyTorch's ProcessGroupNCCL runs all
// collectives of a process group on one internal NCCL stream, so FSDP's all-gathers and
// reduce-scatters, issued from separate CUDA streams over the same group, still run one after
// the other "on the wire" (pytorch/pytorch#186335, FSDP2; #65299 for FSDP1); DDP's bucket
// all-reduces go over the same group. Where they are given communicators of their own, they
// compete for the same links, "each collective gets a fraction of the available bandwidth"
// (meta-pytorch/torchrec#4251): the link is busy for the same total time either way. So two
// collectives over the same mesh dimension take the sum of their times, never the max; the
// closed form charges the data-parallel link the same sum against the main sequence it hides
// behind (costmodel's overlapExposed). Collectives over different dimensions (tensor parallel
// over NVLink beside data parallel over the network) have links of their own, so a gather runs
// beside a blocking tensor-parallel collective of the main sequence.
func (e *engine) tryStart(r int) {
	if !e.mainBusy[r] && e.mainNext[r] < len(e.main[r]) {
		id := e.main[r][e.mainNext[r]]
		if e.nodes[id].pending == 0 {
			e.mainNext[r]++
			e.mainBusy[r] = true
			e.start(id)
		}
	}
	for d := range nLinks {
		if l := &e.links[r*nLinks+d]; !l.busy && len(l.queue) > 0 {
			l.busy = true
			e.start(e.dequeue(l))
		}
	}
}

func (e *engine) start(id int) {
	n := e.nodes[id]
	n.started = true
	n.start = max(e.now, n.ready)
	if n.compute && e.opt.Cores > 0 {
		n.remain = float64(n.cost)
		n.lastTick = n.start
		e.active = append(e.active, id)
		return // schedulePS sets its end
	}
	n.end = n.start + n.cost
	if e.sigma > 0 && !n.async {
		n.rate, n.remain, n.lastTick = 1, float64(n.cost), n.start // retime slows it
	}
	e.push(n.end, id)
}

// retime sets the speed of rank r's running main-sequence node to what its links allow now:
// 1/(1+sigma) while one of them runs a collective, 1 otherwise (hardware.Efficiency.
// OverlapSlowdown), and moves its end to match the work it has left.
func (e *engine) retime(r int) {
	if !e.mainBusy[r] {
		return
	}
	id := e.main[r][e.mainNext[r]-1]
	n := e.nodes[id]
	if n.rate == 0 || n.done {
		return
	}
	rate := 1.0
	for d := range nLinks {
		if e.links[r*nLinks+d].busy {
			rate = 1 / (1 + e.sigma)
		}
	}
	if rate == n.rate {
		return
	}
	if e.now > n.lastTick {
		n.remain -= float64(e.now-n.lastTick) * n.rate
		n.lastTick = e.now
	}
	n.rate = rate
	n.slowed = n.slowed || rate < 1
	n.end = n.lastTick + units.Seconds(math.Max(n.remain, 0)/rate)
	e.push(n.end, id)
}

func (e *engine) push(t units.Seconds, id int) {
	e.events.push(event{t, e.seq, id})
	e.seq++
}

// rate is the speed of each running compute op when the replicas of all simulated ranks share
// the cores.
func (e *engine) rate() float64 {
	demand := len(e.active) * e.replicas
	if demand <= e.opt.Cores {
		return 1
	}
	return float64(e.opt.Cores) / float64(demand)
}

// advance moves the clock, charging running compute ops for the work done.
func (e *engine) advance(t units.Seconds) {
	if e.opt.Cores > 0 && len(e.active) > 0 {
		r := e.rate()
		for _, id := range e.active {
			n := e.nodes[id]
			n.remain -= float64(t-n.lastTick) * r
			n.lastTick = t
		}
	}
	e.now = t
}

// schedulePS (re)computes the end of every running compute op at the current sharing rate.
func (e *engine) schedulePS() {
	r := e.rate()
	for _, id := range e.active {
		n := e.nodes[id]
		end := n.lastTick + units.Seconds(math.Max(n.remain, 0)/r)
		if end != n.end || !n.queued {
			n.end = end
			n.queued = true
			e.push(end, id)
		}
	}
}

func (e *engine) removeActive(id int) {
	for i, a := range e.active {
		if a == id {
			e.active = append(e.active[:i], e.active[i+1:]...)
			return
		}
	}
}
