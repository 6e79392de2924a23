package costmodel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// The MLP family: a Sequential of Linear layers with an activation (ReLU or GELU) between
// consecutive ones, as model.MLP builds it, trained with MSE. Under the Megatron plan (Shoeybi et
// al. 2019 §3, Fig. 3a) Linear layers alternate column-parallel and row-parallel, so a pair
// (colwise, rowwise) needs one all-reduce of the pair's output forward and one of its input
// gradient backward; an odd last Linear is column-parallel and its output is all-gathered for
// the loss.

// chain is an MLP's Linear layers; an activation sits between consecutive ones.
type chain struct {
	in, out []int64
	bias    []bool
}

// mlpChain reads m's tree; ok is false when it is not a Linear/activation chain.
func mlpChain(m *model.Model, c *chain) bool {
	kids := m.Root.Children
	if m.Root.Kind != model.KindSequential || len(kids)%2 == 0 || m.Loss != model.KindMSE {
		return false
	}
	for i, k := range kids {
		if len(k.Children) != 0 {
			return false
		}
		if i%2 == 1 {
			if k.Kind != model.KindReLU && k.Kind != model.KindGELU {
				return false
			}
			continue
		}
		if k.Kind != model.KindLinear || (i > 0 && int64(k.In) != c.out[len(c.out)-1]) {
			return false
		}
		c.in = append(c.in, int64(k.In))
		c.out = append(c.out, int64(k.Out))
		c.bias = append(c.bias, k.Bias)
	}
	return int64(m.InDim) == c.in[0]
}

// mlpStyle is Linear k's style: Megatron alternation (colwise first) when tp > 1.
func mlpStyle(k int, tp int64) strategies.Style {
	switch {
	case tp == 1:
		return ""
	case k%2 == 0:
		return strategies.Colwise
	}
	return strategies.Rowwise
}

// checkChain returns the error Lower returns for a tp that does not divide a sharded width.
func checkChain(m *model.Model, c *chain, tp int64) error {
	for k := range c.in {
		what, size := "", int64(0)
		switch mlpStyle(k, tp) {
		case strategies.Colwise:
			what, size = "out_features", c.out[k]
		case strategies.Rowwise:
			what, size = "in_features", c.in[k]
		}
		if what != "" && size%tp != 0 {
			var ds []string
			for d := int64(1); d <= size; d++ {
				if size%d == 0 {
					ds = append(ds, strconv.FormatInt(d, 10))
				}
			}
			return fmt.Errorf("program: tp=%d does not divide %s %d of module %q; choose tp among {%s} or leave the module out of the plan",
				tp, what, size, m.Root.Children[2*k].Name, strings.Join(ds, ","))
		}
	}
	return nil
}

// mlpStage prices the one stage of an MLP (pipeline parallel needs transformer layers).
func mlpStage(p *pricer, c *chain, st strategies.Strategy, e, pb, gb int64, s *stageSum) {
	t := int64(st.Mesh.TP)
	b := int64(st.MBS)
	zero3 := st.ZeRO == 3
	zg := func(m *emitter, n int64) {
		if zero3 {
			m.zero(program.OpAllGather, units.Bytes(n*pb))
		}
	}
	zr := func(m *emitter, n int64) {
		if zero3 {
			m.zero(program.OpReduceScatter, units.Bytes(n*gb))
		}
	}
	L := len(c.in)
	// local is Linear k's local weight shape.
	local := func(k int) (in, out int64) {
		switch mlpStyle(k, t) {
		case strategies.Colwise:
			return c.in[k], c.out[k] / t
		case strategies.Rowwise:
			return c.in[k] / t, c.out[k]
		}
		return c.in[k], c.out[k]
	}
	fused := func(k int) int64 { // parameters the Linear op reads (a row-parallel bias is its own op)
		in, out := local(k)
		n := in * out
		if c.bias[k] && mlpStyle(k, t) != strategies.Rowwise {
			n += out
		}
		return n
	}

	// Forward: every Linear's input is saved (its backward reads it), so are the activations'.
	m := newEmitter(p, &s.tally, false)
	m.save(units.Bytes(b * c.in[0] * e)) // the input batch
	for k := range c.in {
		in, out := local(k)
		if k > 0 {
			n := b * in
			m.save(units.Bytes(n * e))
			m.elementwise(units.FLOPs(n), units.Bytes(2*n*e), 0, 0)
		}
		zg(&m, fused(k))
		y := units.Bytes(b * out * e)
		switch mlpStyle(k, t) {
		case strategies.Rowwise:
			m.linear(b, in, out, e, true, y, 0)
			if !c.bias[k] {
				m.save(y)
			}
			m.tpColl(program.OpAllReduce, y, ifB(c.bias[k], y), y)
			if c.bias[k] {
				zg(&m, out)
				m.save(y)
				m.elementwise(units.FLOPs(b*out), units.Bytes(2*b*out*e), 0, y)
			}
		case strategies.Colwise:
			if k == L-1 {
				// The output is all-gathered for the loss.
				m.linear(b, in, out, e, true, y, 0)
				full := units.Bytes(b * c.out[k] * e)
				m.save(full)
				m.tpColl(program.OpAllGather, full, 0, y)
			} else {
				m.save(y)
				m.linear(b, in, out, e, true, 0, 0)
			}
		default:
			m.save(y)
			m.linear(b, in, out, e, true, 0, 0)
		}
	}
	nOut := b * c.out[L-1]
	yB := units.Bytes(nOut * e)
	m.save(yB) // targets
	m.elementwise(units.FLOPs(5*nOut), units.Bytes(2*nOut*e), 4, 4)
	fwd := m.seg()

	// Backward.
	m = newEmitter(p, &s.tally, true)
	m.elementwise(units.FLOPs(5*nOut), units.Bytes(2*nOut*e), yB, 0)
	m.drop(2 * yB) // output and targets
	g := yB
	if mlpStyle(L-1, t) == strategies.Colwise {
		_, out := local(L - 1)
		gs := units.Bytes(b * out * e)
		m.elementwise(0, yB, gs, yB) // slice of the replicated output gradient
		g = gs
	}
	for k := L - 1; k >= 0; k-- {
		in, out := local(k)
		style := mlpStyle(k, t)
		if style == strategies.Rowwise && c.bias[k] {
			zg(&m, out)
			m.elementwise(units.FLOPs(b*out), units.Bytes(2*b*out*e), 0, 0)
			zr(&m, out)
		}
		zg(&m, fused(k))
		x := units.Bytes(b * in * e) // the Linear's input, saved
		if k == 0 {
			m.linear(b, in, out, e, false, 0, g)
			m.drop(x)
			zr(&m, fused(k))
			break
		}
		// Input gradient: Partial [b, in] for a column-parallel Linear, its input's shard for a
		// row-parallel one, whole otherwise.
		m.linear(b, in, out, e, true, x, g)
		m.drop(x)
		zr(&m, fused(k))
		// The activation before Linear k needs its gradient whole: a Partial one is all-reduced
		// first (the backward of f in Shoeybi et al. 2019 Fig. 3a).
		if style == strategies.Colwise {
			m.tpColl(program.OpAllReduce, x, x, x)
		}
		m.elementwise(units.FLOPs(2*b*in), units.Bytes(4*b*in*e), x, x)
		m.drop(x) // the activation's input
		g = x
	}
	bwd := m.seg()
	var w walker
	w.run(fwd, 1)
	w.run(bwd, 1)
	s.work, s.live = w.pc, w.pa
}

// mlpParams lists the chain's local parameter elements in registration order.
func mlpParams(c *chain, tp int64, out []int64) []int64 {
	for k := range c.in {
		in, o := c.in[k], c.out[k]
		switch mlpStyle(k, tp) {
		case strategies.Colwise:
			o /= tp
			out = append(out, in*o)
			if c.bias[k] {
				out = append(out, o)
			}
		case strategies.Rowwise:
			out = append(out, in/tp*o)
			if c.bias[k] {
				out = append(out, o)
			}
		default:
			out = append(out, in*o)
			if c.bias[k] {
				out = append(out, o)
			}
		}
	}
	return out
}
