package exec

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// rank runs the Program of one rank: the virtual pipeline stages of its pipeline coordinate, on
// its dp and tp shard.
type rank struct {
	cfg   Config
	p     *program.Program
	c     *comm.Comm
	lr    float64
	t0    time.Time
	batch *batchData
	mail  *mailbox

	ppIdx, dpIdx, tpIdx int
	groups              map[strategies.Dim]*comm.Group
	alloc               *allocator
	// stages are the virtual stages this rank runs (chunk c is stages[c]); sched their order.
	stages []*program.Stage
	sched  []program.Task

	// params and grads are the parameters and gradients the kernels read and write, by name: the
	// whole (tp-local) tensors, except under ZeRO-3, where params holds only while a gather's
	// consumer runs and grads only from a backward to its reduce-scatter (zero.go).
	params, grads map[string][]float32
	// stale are the gradients this step has not written yet: they still hold the last step's
	// values until grad zeroes them for an op that accumulates, or paramGradOut hands them to a
	// linear backward that overwrites them (trainStep; clearing the 32 MiB of the 1024-4096-1024
	// MLP's gradients each step cost 2% of it).
	stale        map[string]bool
	adamM, adamV map[string][]float32
	z            *zeroState
	step         int

	// s, f32, i32 and micro are the stage, value storage and microbatch of the op running now;
	// slots keeps each (stage, microbatch)'s storage from its forward to its backward.
	s     *program.Stage
	f32   map[program.ValueID][]float32
	i32   map[program.ValueID][]int32
	micro int
	slots map[[2]int]*slot
	bufs  map[program.ValueID]int32
	// used and held are the values this rank allocated, and those it held from a forward to its
	// backward (measured activations), for the check against the Program's declarations.
	used, held map[vkey]bool

	losses    []float64
	stepTimes []time.Duration
	// stepEnds is when each step ended, since the run started (t0).
	stepEnds []time.Duration
	events   []OpEvent
	stats    []comm.Stats
	ppSent   int64 // bytes sent point to point over pp, all steps
	ppMsgs   int64
	dev      deviceClock
	// gstats, on a reference run's one rank, records the gradients' magnitudes (Result.Grads).
	gstats *GradStats
}

// slot is the value storage of one stage's microbatch, with each buffer's number in the
// allocator's log.
type slot struct {
	f32  map[program.ValueID][]float32
	i32  map[program.ValueID][]int32
	bufs map[program.ValueID]int32
}

// vkey names a value of a stage.
type vkey struct {
	stage int
	id    program.ValueID
}

func (r *rank) run() error {
	if r.dev.cpu {
		// The thread's CPU clock times this rank's ops only while the rank keeps its thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	co := r.c.Coords()
	r.ppIdx, r.dpIdx, r.tpIdx = co[0], co[1], co[2]
	r.groups = map[strategies.Dim]*comm.Group{}
	for _, d := range []strategies.Dim{strategies.DimDP, strategies.DimTP} {
		g, err := r.c.Group(string(d))
		if err != nil {
			return err
		}
		r.groups[d] = g
	}
	st := r.p.Strategy
	for _, s := range r.p.Stages {
		if s.Rank == r.ppIdx {
			r.stages = append(r.stages, s)
		}
	}
	var err error
	if r.sched, err = program.AppendSchedule(nil, st.Schedule, st.Mesh.PP, len(r.stages), r.p.Microbatches, r.ppIdx); err != nil {
		return err
	}
	r.alloc = newAllocator()
	r.slots = map[[2]int]*slot{}
	r.used, r.held = map[vkey]bool{}, map[vkey]bool{}
	if err := r.initParams(); err != nil {
		return err
	}
	for step := 0; step < r.cfg.Steps; step++ {
		// A run of one rank meets no collective that would notice a cancellation.
		if err := r.c.Context().Err(); err != nil {
			return fmt.Errorf("exec: stopped before step %d: %w", step+1, context.Cause(r.c.Context()))
		}
		r.step = step
		start := time.Now()
		r.dev.startStep()
		loss, err := r.trainStep()
		if err != nil {
			return err
		}
		r.dev.endStep()
		r.stepTimes = append(r.stepTimes, time.Since(start))
		r.stepEnds = append(r.stepEnds, time.Since(r.t0))
		r.losses = append(r.losses, loss)
		r.stats = append(r.stats, r.c.Stats())
		if r.cfg.OnStep != nil && r.c.Rank() == 0 {
			r.cfg.OnStep(step)
		}
	}
	return nil
}

func (r *rank) initParams() error {
	st := r.p.Strategy
	r.params, r.grads, r.stale = map[string][]float32{}, map[string][]float32{}, map[string]bool{}
	r.adamM, r.adamV = map[string][]float32{}, map[string][]float32{}
	seen := map[string]bool{}
	for _, s := range r.stages {
		local3 := map[string][]float32{} // ZeRO-3: the stage's whole tp-local parameters
		for i := range s.Params {
			q := &s.Params[i]
			if seen[q.Name] {
				return fmt.Errorf("exec: parameter %q is held by two virtual stages of pipeline rank %d; exec keeps one copy per rank", q.Name, r.ppIdx)
			}
			seen[q.Name] = true
			mod := r.p.Model.Find(q.Module)
			full := initParam(q, mod, r.cfg.Seed)
			local := shard(full, q.Full, q.ShardDim, st.Mesh.TP, r.tpIdx)
			if st.ZeRO == 3 {
				local3[q.Name] = local
				continue
			}
			w := r.alloc.f32(CatParams, len(local))
			copy(w, local)
			r.params[q.Name] = w
			r.grads[q.Name] = r.alloc.f32(CatGrads, len(local))
			if st.Optimizer == strategies.OptimizerAdam && st.ZeRO == 0 {
				r.adamM[q.Name] = r.alloc.f32(CatOptimizer, len(local))
				r.adamV[q.Name] = r.alloc.f32(CatOptimizer, len(local))
			}
		}
		switch st.ZeRO {
		case 1, 2:
			if err := r.z12Init(s); err != nil {
				return err
			}
		case 3:
			if err := r.z3Init(s, local3); err != nil {
				return err
			}
		}
	}
	return nil
}

// use makes (s, micro) the stage and microbatch whose values the next ops read and write.
func (r *rank) use(s *program.Stage, micro int) {
	k := [2]int{s.Index, micro}
	sl, ok := r.slots[k]
	if !ok {
		sl = &slot{f32: map[program.ValueID][]float32{}, i32: map[program.ValueID][]int32{}, bufs: map[program.ValueID]int32{}}
		r.slots[k] = sl
	}
	r.s, r.f32, r.i32, r.bufs, r.micro = s, sl.f32, sl.i32, sl.bufs, micro
}

func (r *rank) trainStep() (float64, error) {
	for name := range r.grads {
		r.stale[name] = true
	}
	if r.z != nil {
		r.z.startStep(r)
	}
	var loss float64
	for _, a := range r.sched {
		s := r.stages[a.Chunk]
		r.use(s, a.Micro)
		ops := s.Forward
		if a.Backward {
			ops = s.Backward
		}
		for i := range ops {
			l, err := r.exec(&ops[i])
			if err != nil {
				return 0, err
			}
			loss += l
		}
		if a.Backward {
			if err := r.endMicro(s, a.Micro); err != nil {
				return 0, err
			}
		} else {
			// What the rank still holds now, it keeps for this microbatch's backward.
			for id, b := range r.bufs {
				r.alloc.crossed[b] = true
				r.held[vkey{s.Index, id}] = true
			}
			r.alloc.settle()
		}
	}
	for _, s := range r.stages {
		r.s = s
		for i := range s.Optimizer {
			if _, err := r.exec(&s.Optimizer[i]); err != nil {
				return 0, err
			}
		}
	}
	return loss, nil
}

// endMicro closes the storage of (s, micro) after its backward. The Program frees every value at
// its last use, so nothing should be left; a value left is one the lowering never freed, reported
// as an error rather than hidden.
func (r *rank) endMicro(s *program.Stage, micro int) error {
	k := [2]int{s.Index, micro}
	sl := r.slots[k]
	delete(r.slots, k)
	var left []string
	for id, b := range sl.f32 {
		left = append(left, s.Value(id).Name)
		giveValue(r.alloc, r.alloc.f32s, sl.bufs[id], b)
	}
	for id, b := range sl.i32 {
		left = append(left, s.Value(id).Name)
		giveValue(r.alloc, r.alloc.i32s, sl.bufs[id], b)
	}
	if len(left) > 0 {
		slices.Sort(left)
		return fmt.Errorf("exec: stage %d microbatch %d still holds %s after its backward: the Program never frees them (a lowering error)", s.Index, micro, strings.Join(left, ", "))
	}
	return nil
}

// value returns the float32 storage of id, allocating it on first use (stored); ints is the same
// for int32 values.
func (r *rank) value(id program.ValueID) []float32 { return stored(r, r.f32, r.alloc.f32s, id, true) }
func (r *rank) ints(id program.ValueID) []int32    { return stored(r, r.i32, r.alloc.i32s, id, true) }

// out is value for the output of a kernel that sets every element of it (a linear's y and dx,
// an activation, a norm's y, an add, an activation gradient): a recycled buffer is not zeroed
// first. Clearing a 256 KiB buffer that left the cache long ago cost 15-30 µs, a third of a
// GELU of that size. Every value is written by one op (program: gradients of several uses are
// summed by adds into new values), so nothing reads what the last user left.
func (r *rank) out(id program.ValueID) []float32 { return stored(r, r.f32, r.alloc.f32s, id, false) }

// stored returns id's storage in m, allocating it from p on first use and filling it from the
// batch when it is data. Its category is not taken from the Program: the allocator observes
// whether the buffer outlives its microbatch's forward (alloc.go).
func stored[T float32 | int32](r *rank, m map[program.ValueID][]T, p pool[T], id program.ValueID, zero bool) []T {
	if b, ok := m[id]; ok {
		return b
	}
	v := r.s.Value(id)
	b, buf := takeValue(r.alloc, p, int(v.Elems()), zero || v.Data)
	m[id], r.bufs[id] = b, buf
	r.used[vkey{r.s.Index, id}] = true
	if v.Data {
		r.fill(id)
	}
	return b
}

func (r *rank) release(op *program.Op) {
	for _, id := range op.Free {
		unstore(r.alloc, r.f32, r.alloc.f32s, r.bufs, id)
		unstore(r.alloc, r.i32, r.alloc.i32s, r.bufs, id)
	}
}

// unstore frees id's storage in m, if it has any, back to p.
func unstore[T float32 | int32](a *allocator, m map[program.ValueID][]T, p pool[T], bufs map[program.ValueID]int32, id program.ValueID) {
	if b, ok := m[id]; ok {
		delete(m, id)
		giveValue(a, p, bufs[id], b)
		delete(bufs, id)
	}
}

// memoryErrors compares what this rank held from a forward to its backward with what the Program
// declares saved (the activation memory every prediction counts): a value held but not declared
// is memory the prediction misses (a lowering that forgot a saved tensor, or frees one late); one
// declared but freed before the backward is memory it counts twice.
func (r *rank) memoryErrors() []string {
	var out []string
	for k := range r.used {
		v := r.p.Stages[k.stage].Value(k.id)
		switch held := r.held[k]; {
		case held && !v.Saved:
			out = append(out, fmt.Sprintf("stage %d holds %s (%d bytes per microbatch) from its forward to its backward, but the Program does not declare it saved: the predicted activation memory misses it", k.stage, v.Name, v.Elems()*4))
		case !held && v.Saved:
			out = append(out, fmt.Sprintf("the Program declares %s of stage %d saved for backward (%d bytes per microbatch), but the rank freed it before the backward", v.Name, k.stage, v.Elems()*4))
		}
	}
	slices.Sort(out)
	return out
}

// scratch is a workspace buffer for the duration of one op.
func (r *rank) scratch(n int) []float32 { return r.alloc.f32(CatWorkspace, n) }
func (r *rank) unscratch(b []float32)   { r.alloc.putF32(CatWorkspace, b) }

func rows(v *program.Value) int {
	n := 1
	for _, d := range v.Shape[:len(v.Shape)-1] {
		n *= d
	}
	return n
}

func last(v *program.Value) int { return v.Shape[len(v.Shape)-1] }

// exec runs one op and records it; it returns the loss contribution of loss ops.
func (r *rank) exec(op *program.Op) (float64, error) {
	start := time.Since(r.t0)
	c0 := r.dev.read(start)
	loss, err := r.do(op)
	if err != nil {
		return 0, err
	}
	end := time.Since(r.t0)
	if !waitsForStage(op) {
		r.dev.now += r.dev.read(end) - c0
	}
	r.events = append(r.events, OpEvent{Step: r.step, Phase: op.Phase.String(), Kind: string(op.Kind), Module: op.Module,
		Comm:  op.Kind.IsComm(),
		Stage: r.s.Index, Micro: r.micro, Start: start, End: end})
	if op.Phase != program.Optimizer {
		r.release(op)
	}
	if r.z != nil {
		r.z.afterOp(r, op)
	}
	return loss, nil
}

// w returns the parameter name as the kernels read it: the whole tp-local tensor. Under ZeRO-3 it
// exists only between the gather the Program places before the op and the op's end; a parameter
// read without its gather is a lowering error, reported as one.
func (r *rank) w(name string) []float32 {
	if b, ok := r.params[name]; ok {
		return b
	}
	panic(lowering(fmt.Sprintf("parameter %q is read by stage %d before any all-gather over dp brought it (ZeRO-3): the Program lacks the gather", name, r.s.Index)))
}

// g returns the gradient buffer the kernels accumulate parameter name's gradient into.
func (r *rank) g(name string) []float32 {
	if _, ok := r.grads[name]; ok {
		return r.grad(name)
	}
	if r.z != nil && r.z.stage == 3 {
		return r.z.fullGrad(r, name)
	}
	panic(lowering(fmt.Sprintf("parameter %q has no gradient buffer on stage %d", name, r.s.Index)))
}

// grad is name's gradient buffer, zeroed first if this step has not written it yet (stale).
func (r *rank) grad(name string) []float32 {
	b := r.grads[name]
	if r.stale[name] {
		clear(b)
		delete(r.stale, name)
	}
	return b
}

// paramGradOut is g for a kernel that may overwrite the gradient instead of adding to it: overwrite
// is true where this step has not written name's gradient yet (its buffer then holds the last
// step's, which the kernel must not read).
func (r *rank) paramGradOut(name string) (b []float32, overwrite bool) {
	if b, ok := r.grads[name]; ok && r.stale[name] {
		delete(r.stale, name)
		return b, true
	}
	return r.g(name), false
}

// lowering is a Program that exec cannot run as written (a missing gather, a value never freed):
// raised as a panic inside the kernels' calls and turned into the rank's error by do.
type lowering string

func (r *rank) do(op *program.Op) (loss float64, err error) {
	defer func() {
		if v := recover(); v != nil {
			l, ok := v.(lowering)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("exec: %s", string(l))
		}
	}()
	bwd := op.Differentiates()
	switch op.Kind {
	case program.OpLinear:
		if bwd {
			r.linearBackward(op)
		} else {
			r.linear(op)
		}
	case program.OpBias:
		if bwd {
			v := r.s.Value(op.In[0])
			kernels.BiasGrad(r.g(op.Param), r.value(op.In[0]), rows(v), last(v))
		} else {
			v := r.s.Value(op.In[0])
			y := r.value(op.Out[0])
			copy(y, r.value(op.In[0]))
			kernels.AddBias(y, r.w(op.Param), rows(v), last(v))
		}
	case program.OpEmbedding:
		r.embedding(op, bwd)
	case program.OpNorm:
		r.norm(op, bwd)
	case program.OpAct:
		r.act(op, bwd)
	case program.OpMul:
		if bwd {
			var da, db []float32
			if op.Out[0] >= 0 {
				da = r.value(op.Out[0])
			}
			if len(op.Out) > 1 && op.Out[1] >= 0 {
				db = r.value(op.Out[1])
			}
			kernels.MulBackward(da, db, r.value(op.In[0]), r.value(op.Saved[0]), r.value(op.Saved[1]))
		} else {
			kernels.Mul(r.value(op.Out[0]), r.value(op.In[0]), r.value(op.In[1]))
		}
	case program.OpAdd:
		kernels.Add(r.out(op.Out[0]), r.value(op.In[0]), r.value(op.In[1]))
	case program.OpAttention:
		r.attention(op, bwd)
	case program.OpLoss:
		return r.loss(op, bwd), nil
	case program.OpLossStats:
		r.lossStats(op)
	case program.OpSend, program.OpRecv:
		return 0, r.p2p(op)
	case program.OpAllReduce, program.OpAllGather, program.OpReduceScatter, program.OpSlice:
		switch {
		case op.Dim == strategies.DimPP:
			return 0, r.tiedAllReduce(op)
		case op.Dim == strategies.DimDP && len(op.Params) > 0 && r.z != nil:
			return 0, r.z.collective(r, op)
		case op.Phase == program.Optimizer:
			return 0, r.gradCollective(op)
		}
		return 0, r.redistribute(op)
	case program.OpStep:
		r.optimizerStep()
	default:
		return 0, fmt.Errorf("exec: op %s of %q is not executable here", op.Kind, op.Module)
	}
	return 0, nil
}

// p2p runs a pipeline send or receive: forward ones carry the activation to the next stage,
// backward ones its gradient back (Peer is the other virtual stage).
func (r *rank) p2p(op *program.Op) error {
	k := p2pKey{dp: r.dpIdx, tp: r.tpIdx, micro: r.micro, grad: op.Phase == program.Backward}
	if op.Kind == program.OpSend {
		k.from, k.to = r.s.Index, op.Peer
		buf := r.value(op.In[0])
		if err := r.mail.send(r.c.Context(), k, buf, r.dev.now, r.stageRank(op.Peer)); err != nil {
			return err
		}
		r.ppSent += 4 * int64(len(buf))
		r.ppMsgs++
		return nil
	}
	k.from, k.to = op.Peer, r.s.Index
	at, err := r.mail.recv(r.c.Context(), k, r.value(op.Out[0]), r.stageRank(op.Peer))
	r.dev.arrive(at, true)
	return err
}

// stageRank is the global rank that runs virtual stage s with this rank's dp and tp coordinates
// (the world's dims are pp, dp, tp, row-major).
func (r *rank) stageRank(s int) int {
	m := r.p.Strategy.Mesh
	pp := s
	if s >= 0 && s < len(r.p.Stages) {
		pp = r.p.Stages[s].Rank
	}
	return (pp*m.DP+r.dpIdx)*m.TP + r.tpIdx
}

// tiedAllReduce sums the gradient of the embedding that the first and the last pipeline stage
// both hold (a tied output head): each sends its gradient to the other and adds, first stage's
// first, so both hold the same bits.
func (r *rank) tiedAllReduce(op *program.Op) error {
	if op.Kind != program.OpAllReduce {
		return fmt.Errorf("exec: %s over pp is not executed", op.Kind)
	}
	for _, name := range op.Params {
		g := r.g(name)
		k := p2pKey{dp: r.dpIdx, tp: r.tpIdx, micro: -1, from: r.s.Index, to: op.Peer, grad: true}
		if err := r.mail.send(r.c.Context(), k, g, r.dev.now, r.stageRank(op.Peer)); err != nil {
			return err
		}
		r.ppSent += 4 * int64(len(g))
		r.ppMsgs++
		other := r.scratch(len(g))
		k.from, k.to = op.Peer, r.s.Index
		at, err := r.mail.recv(r.c.Context(), k, other, r.stageRank(op.Peer))
		if err != nil {
			return err
		}
		r.dev.arrive(at, false)
		first, second := g, other
		if r.s.Index > op.Peer {
			first, second = other, g
		}
		for i := range g {
			g[i] = first[i] + second[i]
		}
		r.unscratch(other)
	}
	return nil
}

func (r *rank) linear(op *program.Op) {
	xv, yv := r.s.Value(op.In[0]), r.s.Value(op.Out[0])
	var b []float32
	if op.Bias != "" {
		b = r.w(op.Bias)
	}
	kernels.LinearForward(r.out(op.Out[0]), r.value(op.In[0]), r.w(op.Param), b, rows(xv), last(xv), last(yv))
}

func (r *rank) linearBackward(op *program.Op) {
	xv, dyv := r.s.Value(op.Saved[0]), r.s.Value(op.In[0])
	var dx, db []float32
	if op.GradInput && len(op.Out) > 0 && op.Out[0] >= 0 {
		dx = r.out(op.Out[0])
	}
	if op.Bias != "" {
		db = r.g(op.Bias)
	}
	dw, overwrite := r.paramGradOut(op.Param)
	kernels.LinearBackward(dx, dw, db, r.value(op.In[0]), r.value(op.Saved[0]), r.w(op.Param), rows(xv), last(xv), last(dyv), !overwrite)
}

func (r *rank) embedding(op *program.Op, bwd bool) {
	var yv *program.Value
	if bwd {
		yv = r.s.Value(op.In[0])
	} else {
		yv = r.s.Value(op.Out[0])
	}
	hidden := last(yv)
	n := rows(yv)
	var ids []int32
	switch {
	case bwd && len(op.Saved) > 0:
		ids = r.ints(op.Saved[0])
	case !bwd && len(op.In) > 0:
		ids = r.ints(op.In[0])
	default:
		// Learned positions: row b*S+s reads position s (a workspace buffer of its own).
		seq := yv.Shape[1]
		ids = r.alloc.i32(CatWorkspace, n)
		defer r.alloc.putI32(CatWorkspace, ids)
		for i := range ids {
			ids[i] = int32(i % seq)
		}
	}
	local := op.VocabHi - op.VocabLo
	lo := r.tpIdx * local
	if local == r.p.Model.Find(op.Module).Num {
		lo = 0
	}
	if bwd {
		kernels.EmbeddingRangeBackward(r.g(op.Param), r.value(op.In[0]), ids, lo, lo+local, hidden)
	} else {
		kernels.EmbeddingRange(r.value(op.Out[0]), ids, r.w(op.Param), lo, lo+local, hidden)
	}
}

func (r *rank) norm(op *program.Op, bwd bool) {
	xid := op.In[0]
	if bwd {
		xid = op.Saved[0]
	}
	xv := r.s.Value(xid)
	n, d := rows(xv), last(xv)
	var b, db []float32
	if op.Bias != "" {
		b = r.w(op.Bias)
		if bwd {
			db = r.g(op.Bias)
		}
	}
	w := r.w(op.Param)
	if !bwd {
		stats := r.value(op.Out[1])
		if op.Norm == model.KindRMSNorm {
			kernels.RMSNorm(r.out(op.Out[0]), stats[:n], r.value(xid), w, n, d, kernels.DefaultEps)
		} else {
			kernels.LayerNorm(r.out(op.Out[0]), stats[:n], stats[n:2*n], r.value(xid), w, b, n, d, kernels.DefaultEps)
		}
		return
	}
	stats := r.value(op.Saved[1])
	dx := r.gradOut(op, 0, int(xv.Elems()))
	if op.Norm == model.KindRMSNorm {
		kernels.RMSNormBackward(dx, r.g(op.Param), r.value(op.In[0]), r.value(xid), w, stats[:n], n, d)
	} else {
		kernels.LayerNormBackward(dx, r.g(op.Param), db, r.value(op.In[0]), r.value(xid), w, stats[:n], stats[n:2*n], n, d)
	}
	r.dropScratch(op, 0, dx)
}

// gradOut returns the storage for gradient output i of a backward op, or a scratch buffer of n
// elements when nothing upstream needs it (kernels compute it anyway); dropScratch frees it.
func (r *rank) gradOut(op *program.Op, i, n int) []float32 {
	if i < len(op.Out) && op.Out[i] >= 0 {
		return r.out(op.Out[i])
	}
	return r.scratch(n)
}

func (r *rank) dropScratch(op *program.Op, i int, b []float32) {
	if !(i < len(op.Out) && op.Out[i] >= 0) {
		r.unscratch(b)
	}
}

func (r *rank) act(op *program.Op, bwd bool) {
	if !bwd {
		y, x := r.out(op.Out[0]), r.value(op.In[0])
		switch op.Act {
		case "relu":
			kernels.ReLU(y, x)
		case "gelu":
			kernels.GELU(y, x)
		case "silu":
			kernels.SiLU(y, x)
		}
		return
	}
	x := r.value(op.Saved[0])
	dx := r.gradOut(op, 0, len(x))
	dy := r.value(op.In[0])
	switch op.Act {
	case "relu":
		kernels.ReLUBackward(dx, dy, x)
	case "gelu":
		kernels.GELUBackward(dx, dy, x)
	case "silu":
		kernels.SiLUBackward(dx, dy, x)
	}
	r.dropScratch(op, 0, dx)
}

func (r *rank) attention(op *program.Op, bwd bool) {
	var qkvID program.ValueID
	var ov *program.Value
	if bwd {
		qkvID, ov = op.Saved[0], r.s.Value(op.In[0])
	} else {
		qkvID, ov = op.In[0], r.s.Value(op.Out[0])
	}
	d := kernels.AttnDims{Batch: ov.Shape[0], Seq: ov.Shape[1], Heads: op.Heads, KVHeads: op.KVHeads, HeadDim: op.HeadDim}
	q, k, v := r.scratch(d.QLen()), r.scratch(d.KVLen()), r.scratch(d.KVLen())
	defer func() { r.unscratch(q); r.unscratch(k); r.unscratch(v) }()
	kernels.SplitQKV(q, k, v, r.value(qkvID), d)
	if r.p.Strategy.FusedAttention() {
		r.flashAttention(op, bwd, q, k, v, d)
		return
	}
	var probs []float32
	switch {
	case !bwd && len(op.Out) > 1:
		probs = r.value(op.Out[1])
	case bwd && len(op.Saved) > 1:
		probs = r.value(op.Saved[1])
	default:
		probs = r.scratch(d.ProbsLen())
		defer r.unscratch(probs)
		if bwd {
			// Selective recomputation: rebuild the probabilities from q and k.
			o := r.scratch(d.QLen())
			kernels.AttentionForward(o, probs, q, k, v, d)
			r.unscratch(o)
		}
	}
	if !bwd {
		kernels.AttentionForward(r.value(op.Out[0]), probs, q, k, v, d)
		return
	}
	dq, dk, dv := r.scratch(d.QLen()), r.scratch(d.KVLen()), r.scratch(d.KVLen())
	sc := r.scratch(d.ScratchLen())
	kernels.AttentionBackward(dq, dk, dv, sc, r.value(op.In[0]), q, k, v, probs, d)
	dqkv := r.gradOut(op, 0, d.QKVLen())
	kernels.MergeQKV(dqkv, dq, dk, dv, d)
	r.dropScratch(op, 0, dqkv)
	for _, b := range [][]float32{dq, dk, dv, sc} {
		r.unscratch(b)
	}
}

// flashAttention runs an attention op under attn=flash or flash1: the forward's Out is [o, lse] and the
// backward's Saved ends with the lse, from which it recomputes the probabilities (one head at a
// time, in scratch) instead of reading saved ones.
func (r *rank) flashAttention(op *program.Op, bwd bool, q, k, v []float32, d kernels.AttnDims) {
	if !bwd {
		sc := r.scratch(d.ScratchLen())
		kernels.AttentionForwardLSE(r.value(op.Out[0]), r.value(op.Out[1]), sc, q, k, v, d)
		r.unscratch(sc)
		return
	}
	lse := r.value(op.Saved[len(op.Saved)-1])
	dq, dk, dv := r.scratch(d.QLen()), r.scratch(d.KVLen()), r.scratch(d.KVLen())
	sc := r.scratch(d.FlashScratchLen())
	kernels.AttentionBackwardLSE(dq, dk, dv, sc, r.value(op.In[0]), q, k, v, lse, d)
	dqkv := r.gradOut(op, 0, d.QKVLen())
	kernels.MergeQKV(dqkv, dq, dk, dv, d)
	r.dropScratch(op, 0, dqkv)
	for _, b := range [][]float32{dq, dk, dv, sc} {
		r.unscratch(b)
	}
}

// lossStats is the first step of the vocabulary-parallel cross-entropy on this rank's shard of the
// logits (vocabulary entries from tp rank x local on). exec runs fp32, so there is no fp32 copy.
func (r *rank) lossStats(op *program.Op) {
	yv := r.s.Value(op.In[0])
	local := op.VocabHi - op.VocabLo
	kernels.CrossEntropyStats(r.value(op.Out[0]), r.value(op.In[0]), r.ints(op.In[1]), rows(yv), local, r.tpIdx*local, local*r.p.Strategy.Mesh.TP)
}

func (r *rank) loss(op *program.Op, bwd bool) float64 {
	ids := op.In
	if bwd {
		ids = op.Saved
	}
	if op.VocabHi > 0 { // vocabulary-parallel: In [shard, targets, stats], Saved [shard, targets, lse]
		yv := r.s.Value(ids[0])
		local := op.VocabHi - op.VocabLo
		if bwd {
			dy := r.value(op.Out[0])
			kernels.CrossEntropyShardBackward(dy, r.value(ids[0]), r.value(ids[2]), r.ints(ids[1]), rows(yv), local, r.tpIdx*local, local*r.p.Strategy.Mesh.TP)
			kernels.Scale(float32(op.Scale), dy)
			return 0
		}
		all := r.s.Value(ids[2])
		l := kernels.CrossEntropyCombine(r.value(op.Out[1]), r.value(ids[2]), rows(yv), last(all)/3)
		return op.Scale * float64(l)
	}
	yid, tid := ids[0], ids[1]
	yv := r.s.Value(yid)
	var dy []float32
	if bwd {
		dy = r.value(op.Out[0])
	}
	var l float32
	if op.Loss == model.KindCrossEntropy {
		l = kernels.CrossEntropy(dy, r.value(yid), r.ints(tid), rows(yv), last(yv))
	} else {
		l = kernels.MSE(dy, r.value(yid), r.value(tid))
	}
	if bwd {
		kernels.Scale(float32(op.Scale), dy)
		return 0
	}
	return op.Scale * float64(l)
}

// samples returns the global sample range of this rank's current microbatch.
func (r *rank) samples() (int, int) {
	st := r.p.Strategy
	per := st.GBS / st.Mesh.DP
	lo := r.dpIdx*per + r.micro*st.MBS
	return lo, lo + st.MBS
}

// fill copies the current microbatch's slice of the batch into data value id.
func (r *rank) fill(id program.ValueID) {
	v := r.s.Value(id)
	lo, hi := r.samples()
	S := r.p.Strategy.Seq
	switch {
	case v.Int && v.Name == "ids":
		copy(r.i32[id], r.batch.ids[lo*S:hi*S])
	case v.Int:
		copy(r.i32[id], r.batch.tgt[lo*S:hi*S])
	case v.Name == "targets":
		out := len(r.batch.y) / r.p.Strategy.GBS
		copy(r.f32[id], r.batch.y[lo*out:hi*out])
	default:
		in := r.p.Model.InDim
		copy(r.f32[id], r.batch.x[lo*in:hi*in])
	}
}

// view splits a shape around axis: outer, axis length, inner.
func view(shape []int, axis int) (int, int, int) {
	if axis < 0 {
		axis += len(shape)
	}
	outer, inner := 1, 1
	for i := 0; i < axis; i++ {
		outer *= shape[i]
	}
	for i := axis + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	return outer, shape[axis], inner
}

// redistribute runs a placement change on activations or their gradients.
func (r *rank) redistribute(op *program.Op) error {
	g := r.groups[strategies.DimTP]
	in, out := r.value(op.In[0]), r.value(op.Out[0])
	inV, outV := r.s.Value(op.In[0]), r.s.Value(op.Out[0])
	p := g.Size()
	switch op.Kind {
	case program.OpAllReduce:
		copy(out, in)
		return g.AllReduce(out)
	case program.OpSlice:
		o, al, inner := view(outV.Shape, op.Axis)
		full := al * p
		for i := 0; i < o; i++ {
			copy(out[i*al*inner:(i+1)*al*inner], in[(i*full+r.tpIdx*al)*inner:(i*full+(r.tpIdx+1)*al)*inner])
		}
		return nil
	case program.OpAllGather:
		o, al, inner := view(inV.Shape, op.Axis)
		if o == 1 {
			return g.AllGather(out, in)
		}
		tmp := r.scratch(len(out))
		defer r.unscratch(tmp)
		if err := g.AllGather(tmp, in); err != nil {
			return err
		}
		chunk := o * al * inner
		for k := 0; k < p; k++ {
			for i := 0; i < o; i++ {
				copy(out[(i*al*p+k*al)*inner:(i*al*p+(k+1)*al)*inner], tmp[k*chunk+i*al*inner:k*chunk+(i+1)*al*inner])
			}
		}
		return nil
	case program.OpReduceScatter:
		o, al, inner := view(outV.Shape, op.Axis)
		if o == 1 {
			return g.ReduceScatter(out, in)
		}
		tmp := r.scratch(len(in))
		defer r.unscratch(tmp)
		chunk := o * al * inner
		for k := 0; k < p; k++ {
			for i := 0; i < o; i++ {
				copy(tmp[k*chunk+i*al*inner:k*chunk+(i+1)*al*inner], in[(i*al*p+k*al)*inner:(i*al*p+(k+1)*al)*inner])
			}
		}
		return g.ReduceScatter(out, tmp)
	}
	return fmt.Errorf("exec: %s is not a redistribution", op.Kind)
}

// gradCollective reduces the gradients of op.Params over op.Dim in one flat bucket.
func (r *rank) gradCollective(op *program.Op) error {
	if op.Kind != program.OpAllReduce {
		return fmt.Errorf("exec: %s of gradients over %s is not executed (ZeRO)", op.Kind, op.Dim)
	}
	g := r.groups[op.Dim]
	if g.Size() == 1 {
		return nil
	}
	n := 0
	for _, name := range op.Params {
		n += len(r.optGrad(name))
	}
	buf := r.alloc.f32Out(CatComm, n) // the gradients overwrite it whole
	defer r.alloc.putF32(CatComm, buf)
	off := 0
	for _, name := range op.Params {
		off += copy(buf[off:], r.optGrad(name))
	}
	if err := g.AllReduce(buf); err != nil {
		return err
	}
	off = 0
	for _, name := range op.Params {
		off += copy(r.optGrad(name), buf[off:])
	}
	return nil
}

func (r *rank) optimizerStep() {
	if r.z != nil {
		r.z.step(r)
		return
	}
	for i := range r.s.Params {
		name := r.s.Params[i].Name
		if r.gstats != nil {
			r.gstats.addGrad(name, r.grad(name))
		}
		r.update(r.params[name], r.grad(name), r.adamM[name], r.adamV[name])
		if r.gstats != nil {
			r.gstats.addGain(name, r.lr, len(r.params[name]), r.adamV[name], r.step+1)
		}
	}
}

// update applies the optimizer to parameters w from gradients g (Adam moments m and v).
func (r *rank) update(w, g, m, v []float32) {
	if r.p.Strategy.Optimizer == strategies.OptimizerAdam {
		kernels.NewAdam(r.lr).Step(w, g, m, v, r.step+1)
	} else {
		kernels.SGD{LR: r.lr}.Step(w, g, nil)
	}
}

// optGrad is the gradient the optimizer phase reduces for name: the whole tensor, or under
// ZeRO-3 the rank's chunk of it.
func (r *rank) optGrad(name string) []float32 {
	if r.z != nil && r.z.stage == 3 {
		return r.z.z3GradChunk(name)
	}
	return r.grad(name)
}

func (r *rank) result() RankResult {
	rr := RankResult{Rank: r.c.Rank(), Coords: map[string]int{string(strategies.DimPP): r.ppIdx, string(strategies.DimDP): r.dpIdx, string(strategies.DimTP): r.tpIdx},
		PeakBytes: map[string]int64{}, CommBytes: map[string]int64{}, CommByKind: map[string]int64{}, CommCalls: map[string]int64{},
		StepTimes: r.stepTimes, Events: r.events}
	rr.PeakBytes = r.alloc.peaks()
	rr.MemoryErrors = r.memoryErrors()
	last := r.stats[len(r.stats)-1]
	steps := int64(len(r.stats))
	for _, d := range strategies.DimNames() {
		rr.CommBytes[d] = 0
	}
	for k, c := range last {
		rr.CommBytes[k.Dim] += c.Bytes / steps
		rr.CommByKind[string(k.Kind)+"/"+k.Dim] += c.Bytes / steps
		if c.Calls > 0 {
			rr.CommCalls[string(k.Kind)+"/"+k.Dim] += c.Calls / steps
		}
	}
	if r.ppSent > 0 {
		rr.CommBytes[string(strategies.DimPP)] += r.ppSent / steps
		rr.CommByKind["send/"+string(strategies.DimPP)] += r.ppSent / steps
	}
	return rr
}
