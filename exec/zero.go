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
//   - stage 3: every parameter is split into dp chunks; the rank keeps its chunk of the
//     parameter, its gradient and its optimizer state; the all-gathers the Program places before
//     each op's forward and backward (and a recomputed forward) bring the whole parameter, which
//     is freed when that op ends; a backward's gradient is reduce-scattered into the rank's chunk
//     right after it (the Program's reduce-scatter) and freed.
type zeroState struct {
	stage int
	dp    *comm.Group
	// units of stages 1 and 2 by bucket key (the parameter names joined), per virtual stage in
	// the Program's order.
	units   map[string]*zunit
	byStage map[int][]*zunit
	// Stage 3: the rank's chunk of each parameter, its gradient and Adam moments, and the
	// parameter's whole (tp-local) length.
	shard, gshard, m, v map[string][]float32
	size                map[string]int
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
			shard: map[string][]float32{}, gshard: map[string][]float32{}, m: map[string][]float32{}, v: map[string][]float32{}, size: map[string]int{}}
	}
	return r.z
}

// z3Init keeps this rank's chunk of parameter name, whose whole tp-local value is local.
func (r *rank) z3Init(name string, local []float32) {
	z := r.zero()
	lo, hi := comm.ChunkBounds(len(local), z.dp.Size(), z.dp.Index())
	w := r.alloc.f32(CatParams, hi-lo)
	copy(w, local[lo:hi])
	z.shard[name], z.size[name] = w, len(local)
	z.gshard[name] = r.alloc.f32(CatGrads, hi-lo)
	if r.p.Strategy.Optimizer == strategies.OptimizerAdam {
		z.m[name], z.v[name] = r.alloc.f32(CatOptimizer, hi-lo), r.alloc.f32(CatOptimizer, hi-lo)
	}
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
		z.units[strings.Join(op.Params, ",")] = u
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
		for _, g := range z.gshard {
			clear(g)
		}
	}
}

// fullGrad is ZeRO-3's whole gradient buffer of name, taken (zeroed) when a backward first writes
// it and freed by the reduce-scatter that follows.
func (z *zeroState) fullGrad(r *rank, name string) []float32 {
	n, ok := z.size[name]
	if !ok {
		panic(lowering(fmt.Sprintf("parameter %q is not held by stage %d", name, r.s.Index)))
	}
	// The whole gradient is a collective's buffer, as the cost model counts it (its comm
	// category): the rank's own gradient is the shard the reduce-scatter leaves.
	g := r.alloc.f32(CatComm, n)
	r.grads[name] = g
	return g
}

// afterOp frees, under ZeRO-3, the whole parameters a compute op read once it has run.
func (z *zeroState) afterOp(r *rank, op *program.Op) {
	if z.stage != 3 || op.Kind.IsCollective() || op.Param == "" {
		return
	}
	for _, name := range []string{op.Param, op.Bias} {
		if b, ok := r.params[name]; ok && name != "" {
			r.alloc.putF32(CatComm, b)
			delete(r.params, name)
		}
	}
}

// collective runs a ZeRO collective over dp: a parameter all-gather or a gradient reduce-scatter.
func (z *zeroState) collective(r *rank, op *program.Op) error {
	switch {
	case z.stage == 3 && op.Kind == program.OpAllGather:
		for _, name := range op.Params {
			full, ok := r.params[name]
			if !ok {
				// A gathered parameter is a collective's buffer (comm), not the rank's own
				// parameters (its shard), as the cost model counts it.
				full = r.alloc.f32Out(CatComm, z.size[name]) // the gather writes every element
				r.params[name] = full
			}
			if err := z.dp.AllGather(full, z.shard[name]); err != nil {
				return err
			}
		}
		return nil
	case z.stage == 3 && op.Kind == program.OpReduceScatter:
		for _, name := range op.Params {
			full, ok := r.grads[name]
			if !ok {
				return fmt.Errorf("exec: stage %d reduce-scatters the gradient of %q, which no backward wrote: a lowering error", r.s.Index, name)
			}
			shard := z.gshard[name]
			part := r.alloc.f32Out(CatWorkspace, len(shard)) // the reduce-scatter writes every element
			err := z.dp.ReduceScatter(part, full)
			if err == nil {
				// The shard accumulates over microbatches (vectorised: a map lookup per
				// element here cost 200 µs per 64 KiB gradient, which showed as communication).
				kernels.AddInPlace(shard, part)
			}
			r.unscratch(part)
			r.alloc.putF32(CatComm, full)
			delete(r.grads, name)
			if err != nil {
				return err
			}
		}
		return nil
	case op.Kind == program.OpReduceScatter:
		u, ok := z.units[strings.Join(op.Params, ",")]
		if !ok {
			return fmt.Errorf("exec: reduce-scatter of %d gradients over dp matches no bucket", len(op.Params))
		}
		flat := r.alloc.f32Out(CatComm, u.n) // the gradients overwrite it whole
		off := 0
		for _, name := range u.names {
			off += copy(flat[off:], r.grads[name])
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
		for i := range r.s.Params {
			name := r.s.Params[i].Name
			update(z.shard[name], z.gshard[name], z.m[name], z.v[name])
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
