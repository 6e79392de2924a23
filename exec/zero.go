package exec

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// zeroState shards a rank's training state over its data-parallel group as ZeRO does
// (Rajbhandari et al. 2020 §5):
//
//   - stages 1 and 2: every gradient bucket the Program reduce-scatters over dp is one unit; this
//     rank owns chunk dp of each (comm.ChunkBounds of the flat bucket) and keeps the optimizer
//     state of that chunk only, updates the parameters of its chunk and all-gathers the buckets'
//     parameters after the step. Stage 2 also drops the whole gradients after their
//     reduce-scatter and keeps only its chunk until the next step's backward (the Program
//     reduce-scatters once per step, after the last microbatch, so the whole gradients are live
//     during backward under both stages);
//   - stage 3: the parameters one op of the Program gathers together (a module's weight and
//     bias) are one flat unit, as FSDP's FlatParameter is, split into dp chunks; the rank keeps
//     its chunk of the unit, of its gradient and of its optimizer state; each all-gather the
//     Program places before an op's forward and backward (and a recomputed forward) is one
//     collective that brings the whole unit, freed when the ops that read it end; a backward's
//     gradients are reduce-scattered into the rank's chunk right after it (the Program's
//     reduce-scatter, again one collective per unit) and freed. One collective per op is what
//     the cost model prices (a ring per parameter would pay its latency once per tensor).
type zeroState struct {
	stage int
	dp    *comm.Group
	// units of stages 1 and 2 by bucket key (the parameter names joined), per virtual stage in
	// the Program's order.
	units   map[string]*zunit
	byStage map[int][]*zunit
	// Stage 3: the flat units by key (the parameter names joined), by parameter name, and per
	// virtual stage.
	z3      map[string]*z3unit
	z3of    map[string]*z3unit
	z3stage map[int][]*z3unit
	// readers counts, for each ZeRO-3 gather of the Program, the ops that read what it gathers.
	readers map[*program.Op]int
}

// z3unit is one flat unit of ZeRO-3: the parameters names at offsets offs of a flat tensor of n
// elements (their whole tp-local values one after the other), the rank's chunk [lo, hi) of it
// with its gradient and Adam moments, and while ops need them the gathered whole (full, with
// held of its readers still to run) and the whole gradient (grad).
type z3unit struct {
	names     []string
	offs      []int
	n, lo, hi int
	shard     []float32
	gshard    []float32
	m, v      []float32
	full      []float32
	held      int
	grad      []float32
}

// span is the element range of parameter i of u in the flat unit.
func (u *z3unit) span(i int) (lo, hi int) {
	hi = u.n
	if i+1 < len(u.offs) {
		hi = u.offs[i+1]
	}
	return u.offs[i], hi
}

// index is the position of parameter name in u.
func (u *z3unit) index(name string) int {
	for i, n := range u.names {
		if n == name {
			return i
		}
	}
	return -1
}

// zunit is one gradient bucket of ZeRO-1/2: parameters names, flat length n, and the rank's chunk
// [lo, hi) of the flat bucket with its reduced gradient and Adam moments.
type zunit struct {
	names     []string
	n, lo, hi int
	gshard    []float32
	m, v      []float32
}

func (r *rank) zero() *zeroState {
	if r.z == nil {
		r.z = &zeroState{stage: r.p.Strategy.ZeRO, dp: r.groups[strategies.DimDP], units: map[string]*zunit{}, byStage: map[int][]*zunit{},
			z3: map[string]*z3unit{}, z3of: map[string]*z3unit{}, z3stage: map[int][]*z3unit{}, readers: map[*program.Op]int{}}
	}
	return r.z
}

// z3Init makes the flat units of stage s from the parameter sets its ops gather over dp, and
// keeps this rank's chunk of each; local holds every parameter's whole tp-local value. A
// parameter no op gathers is a unit of its own (reading it then fails as a missing gather).
func (r *rank) z3Init(s *program.Stage, local map[string][]float32) error {
	z := r.zero()
	var sets [][]string
	for _, ops := range [][]program.Op{s.Forward, s.Backward} {
		for i := range ops {
			if op := &ops[i]; op.IsParamGather() {
				sets = append(sets, op.Params)
			}
		}
	}
	for i := range s.Params {
		sets = append(sets, []string{s.Params[i].Name})
	}
	for _, names := range sets {
		key := unitKey(names)
		if _, ok := z.z3[key]; ok {
			continue
		}
		if len(names) == 1 && z.z3of[names[0]] != nil {
			continue // gathered with others: already in their unit
		}
		u := &z3unit{names: names}
		for _, name := range names {
			w, ok := local[name]
			if !ok {
				return fmt.Errorf("exec: stage %d gathers parameter %q over dp, which it does not hold: a lowering error", s.Index, name)
			}
			if o := z.z3of[name]; o != nil {
				return fmt.Errorf("exec: stage %d gathers parameter %q with %s and with %s: ZeRO-3 needs each parameter in one gathered unit (a lowering error)",
					s.Index, name, strings.Join(o.names, ","), key)
			}
			u.offs = append(u.offs, u.n)
			u.n += len(w)
		}
		u.lo, u.hi = comm.ChunkBounds(u.n, z.dp.Size(), z.dp.Index())
		u.shard = r.alloc.f32(CatParams, u.hi-u.lo)
		for i, name := range names {
			a, b := u.span(i)
			a, b = max(a, u.lo), min(b, u.hi)
			if a < b {
				copy(u.shard[a-u.lo:b-u.lo], local[name][a-u.offs[i]:b-u.offs[i]])
			}
			z.z3of[name] = u
		}
		u.gshard = r.alloc.f32(CatGrads, u.hi-u.lo)
		if r.p.Strategy.Optimizer == strategies.OptimizerAdam {
			u.m, u.v = r.alloc.f32(CatOptimizer, u.hi-u.lo), r.alloc.f32(CatOptimizer, u.hi-u.lo)
		}
		z.z3[key] = u
		z.z3stage[s.Index] = append(z.z3stage[s.Index], u)
	}
	// Each gather's readers: the compute ops after it in its phase that read its unit's
	// parameters before the unit is gathered again (under full recompute the recomputed forward
	// op and then the backward op).
	for _, ops := range [][]program.Op{s.Forward, s.Backward} {
		last := map[*z3unit]*program.Op{}
		for i := range ops {
			op := &ops[i]
			if op.IsParamGather() {
				if u := z.z3[unitKey(op.Params)]; u != nil {
					last[u] = op
					z.readers[op] = 0
				}
				continue
			}
			if op.Kind.IsCollective() || op.Param == "" {
				continue
			}
			if g := last[z.z3of[op.Param]]; g != nil {
				z.readers[g]++
			}
		}
	}
	return nil
}

// z3GradChunk is the rank's chunk of parameter name's gradient: the part of name within its
// unit's reduced gradient chunk, possibly empty.
func (z *zeroState) z3GradChunk(name string) []float32 {
	u := z.z3of[name]
	a, b := u.span(u.index(name))
	a, b = max(a, u.lo), min(b, u.hi)
	if a >= b {
		return nil
	}
	return u.gshard[a-u.lo : b-u.lo]
}

// z12Init makes one unit of every gradient bucket that stage s reduce-scatters over dp.
func (r *rank) z12Init(s *program.Stage) error {
	z := r.zero()
	for i := range s.Optimizer {
		op := &s.Optimizer[i]
		if op.Kind != program.OpReduceScatter || op.Dim != strategies.DimDP {
			continue
		}
		u := &zunit{names: op.Params}
		for _, name := range op.Params {
			u.n += len(r.params[name])
		}
		u.lo, u.hi = comm.ChunkBounds(u.n, z.dp.Size(), z.dp.Index())
		u.gshard = r.alloc.f32(CatGrads, u.hi-u.lo)
		if r.p.Strategy.Optimizer == strategies.OptimizerAdam {
			u.m, u.v = r.alloc.f32(CatOptimizer, u.hi-u.lo), r.alloc.f32(CatOptimizer, u.hi-u.lo)
		}
		z.units[unitKey(op.Params)] = u
		z.byStage[s.Index] = append(z.byStage[s.Index], u)
	}
	if len(z.byStage[s.Index]) == 0 {
		return fmt.Errorf("exec: zero=%d but stage %d reduce-scatters no gradients over dp: the Program lacks the ZeRO reduce-scatter", z.stage, s.Index)
	}
	return nil
}

// startStep brings back the whole gradients ZeRO-2 dropped after the last step's reduce-scatter,
// and zeroes ZeRO-3's gradient chunks.
func (z *zeroState) startStep(r *rank) {
	switch z.stage {
	case 2:
		for _, us := range z.byStage {
			for _, u := range us {
				for _, name := range u.names {
					if _, ok := r.grads[name]; !ok {
						r.grads[name] = r.alloc.f32(CatGrads, len(r.params[name]))
					}
				}
			}
		}
	case 3:
		for _, u := range z.z3 {
			clear(u.gshard)
		}
	}
}

// fullGrad is ZeRO-3's whole gradient buffer of name: the unit's flat gradient, taken (zeroed)
// when a backward first writes one of its parameters and freed by the reduce-scatter that follows.
func (z *zeroState) fullGrad(r *rank, name string) []float32 {
	u, ok := z.z3of[name]
	if !ok {
		panic(lowering(fmt.Sprintf("parameter %q is not held by stage %d", name, r.s.Index)))
	}
	if u.grad == nil {
		// The whole gradient is a collective's buffer, as the cost model counts it (its comm
		// category): the rank's own gradient is the shard the reduce-scatter leaves.
		u.grad = r.alloc.f32(CatComm, u.n)
		for i, n := range u.names {
			a, b := u.span(i)
			r.grads[n] = u.grad[a:b]
		}
	}
	return r.grads[name]
}

// afterOp counts, under ZeRO-3, a compute op that read a gathered unit's parameters; once the
// last reader of the gather has run, the unit's gathered buffer is freed and its parameters are
// no longer readable.
func (z *zeroState) afterOp(r *rank, op *program.Op) {
	if z.stage != 3 || op.Kind.IsCollective() || op.Param == "" {
		return
	}
	u := z.z3of[op.Param]
	if u == nil || u.full == nil {
		return
	}
	if u.held--; u.held == 0 {
		for _, name := range u.names {
			delete(r.params, name)
		}
		r.alloc.putF32(CatComm, u.full)
		u.full = nil
	}
}

// unitKey names the unit (ZeRO-3) or bucket (ZeRO-1/2) of the parameters one collective moves, as
// the Program lists them.
func unitKey(names []string) string { return strings.Join(names, ",") }

// collective runs a ZeRO collective over dp: a parameter all-gather or a gradient reduce-scatter.
func (z *zeroState) collective(r *rank, op *program.Op) error {
	switch {
	case z.stage == 3 && op.Kind == program.OpAllGather:
		u, ok := z.z3[unitKey(op.Params)]
		if !ok {
			return fmt.Errorf("exec: stage %d all-gathers %s over dp, which is no unit of its ZeRO-3 parameters: a lowering error", r.s.Index, unitKey(op.Params))
		}
		if u.full != nil {
			return fmt.Errorf("exec: stage %d gathers %s over dp again before its last reader ran: a lowering error", r.s.Index, unitKey(op.Params))
		}
		// A gathered unit is a collective's buffer (comm), not the rank's own parameters (its
		// shard), as the cost model counts it; it lives until the gather's last reader has run.
		u.full = r.alloc.f32Out(CatComm, u.n) // the gather writes every element
		if u.held = z.readers[op]; u.held == 0 {
			return fmt.Errorf("exec: stage %d gathers %s over dp, which no op reads before the next gather: a lowering error", r.s.Index, unitKey(op.Params))
		}
		for i, name := range u.names {
			a, b := u.span(i)
			r.params[name] = u.full[a:b]
		}
		return z.dp.AllGather(u.full, u.shard)
	case z.stage == 3 && op.Kind == program.OpReduceScatter:
		u, ok := z.z3[unitKey(op.Params)]
		if !ok || u.grad == nil {
			return fmt.Errorf("exec: stage %d reduce-scatters the gradient of %s, which no backward wrote: a lowering error", r.s.Index, unitKey(op.Params))
		}
		part := r.alloc.f32Out(CatWorkspace, len(u.gshard)) // the reduce-scatter writes every element
		err := z.dp.ReduceScatter(part, u.grad)
		if err == nil {
			// The shard accumulates over microbatches (vectorised: a map lookup per element
			// here cost 200 µs per 64 KiB gradient, which showed as communication).
			kernels.AddInPlace(u.gshard, part)
		}
		r.unscratch(part)
		r.alloc.putF32(CatComm, u.grad)
		u.grad = nil
		for _, name := range u.names {
			delete(r.grads, name)
		}
		return err
	case op.Kind == program.OpReduceScatter:
		u, ok := z.units[unitKey(op.Params)]
		if !ok {
			return fmt.Errorf("exec: reduce-scatter of %d gradients over dp matches no bucket", len(op.Params))
		}
		flat := r.alloc.f32Out(CatComm, u.n) // the gradients overwrite it whole
		off := 0
		for _, name := range u.names {
			off += copy(flat[off:], r.grad(name))
		}
		err := z.dp.ReduceScatter(u.gshard, flat)
		r.alloc.putF32(CatComm, flat)
		if z.stage == 2 {
			for _, name := range u.names {
				r.alloc.putF32(CatGrads, r.grads[name])
				delete(r.grads, name)
			}
		}
		return err
	case op.Kind == program.OpAllGather:
		// The parameters after the step: every bucket's chunks gathered back into the whole
		// parameters (one ring per bucket; the bytes are those of one gather of them all).
		for _, u := range z.byStage[r.s.Index] {
			flat := r.alloc.f32Out(CatComm, u.n) // its chunk and the gather overwrite it whole
			span(r.params, u.names, u.lo, flat[u.lo:u.hi], false)
			err := z.dp.AllGather(flat, flat[u.lo:u.hi])
			if err == nil {
				unflatten(r.params, u.names, flat)
			}
			r.alloc.putF32(CatComm, flat)
			if err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("exec: %s over dp under zero=%d is not executed", op.Kind, z.stage)
}

func unflatten(m map[string][]float32, names []string, src []float32) {
	off := 0
	for _, name := range names {
		off += copy(m[name], src[off:])
	}
}

// span copies elements [lo, lo+len(buf)) of the concatenation of the tensors names of m into buf,
// or back from buf when back is set.
func span(m map[string][]float32, names []string, lo int, buf []float32, back bool) {
	off := 0
	for _, name := range names {
		t := m[name]
		a, b := max(lo, off), min(lo+len(buf), off+len(t))
		if a < b {
			if back {
				copy(t[a-off:b-off], buf[a-lo:b-lo])
			} else {
				copy(buf[a-lo:b-lo], t[a-off:b-off])
			}
		}
		off += len(t)
	}
}

// step updates this rank's chunk of the parameters of the current stage.
func (z *zeroState) step(r *rank) {
	update := r.update
	if z.stage == 3 {
		for _, u := range z.z3stage[r.s.Index] {
			update(u.shard, u.gshard, u.m, u.v)
		}
		return
	}
	for _, u := range z.byStage[r.s.Index] {
		w := r.scratch(u.hi - u.lo)
		span(r.params, u.names, u.lo, w, false)
		update(w, u.gshard, u.m, u.v)
		span(r.params, u.names, u.lo, w, true)
		r.unscratch(w)
	}
}
