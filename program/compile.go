package program

import "github.com/tpsim/tpsim/units"

// fusible says whether torch.compile's Inductor fuses ops of kind k with their neighbours into one
// generated kernel: the pointwise ops and the normalizations (a reduction over the last dimension
// with pointwise prologue and epilogue), in forward and in backward. Matrix products, attention
// (scaled-dot-product attention stays one library kernel), the loss, embeddings and every
// collective stay kernels of their own (Ansel et al. 2024, "PyTorch 2: Faster Machine Learning
// Through Dynamic Python Bytecode Transformation and Graph Compilation", ASPLOS '24, §5: Inductor
// fuses pointwise and reduction ops and calls library kernels for matrix products and
// convolutions).
func fusible(k OpKind) bool {
	switch k {
	case OpBias, OpNorm, OpAct, OpMul, OpAdd, OpDropout:
		return true
	}
	return false
}

// compileFusion prices the stage's ops as torch.compile runs them (strategies.Strategy.Compile):
// each chain of fusible ops, consecutive in the op list where every op after the first reads a
// value an earlier op of the chain wrote, is one kernel that reads each value it takes from
// outside the chain once and writes only the values something outside the chain reads (a later
// op, a backward op, a send), instead of every op writing its output to memory and the next
// reading it back. The ops keep their kinds, FLOPs and order (exec, the gradients and the
// activation memory are unchanged); the chain's bytes are shared among its ops in proportion to
// what each moved alone, so the chain's memory time is that one kernel's (a hardware file's fixed
// time per op, op_overhead_s, which no preset sets, is still paid per op).
func (s *Stage) compileFusion() {
	// readers counts, for each value, the ops of the stage that read it (In or Saved).
	readers := make([]int32, len(s.Values))
	for _, ops := range [2][]Op{s.Forward, s.Backward} {
		for i := range ops {
			for _, list := range [2][]ValueID{ops[i].In, ops[i].Saved} {
				for _, id := range list {
					if id >= 0 {
						readers[id]++
					}
				}
			}
		}
	}
	inside := make([]int32, len(s.Values)) // reads within the current chain
	wrote := make([]bool, len(s.Values))   // written by the current chain
	seen := make([]bool, len(s.Values))    // read by the current chain from outside it
	for _, ops := range [2][]Op{s.Forward, s.Backward} {
		for i := 0; i < len(ops); {
			j := i + 1
			if fusible(ops[i].Kind) {
				mark(ops[i].Out, wrote)
				for j < len(ops) && fusible(ops[j].Kind) && readsAny(&ops[j], wrote) {
					mark(ops[j].Out, wrote)
					j++
				}
				if j-i > 1 {
					s.priceChain(ops[i:j], readers, inside, wrote, seen)
				}
				for k := i; k < j; k++ {
					unmark(ops[k].Out, wrote)
				}
			}
			i = j
		}
	}
}

// priceChain sets the MemBytes of the ops of one fused chain (compileFusion); wrote marks the
// values the chain writes; inside and seen are zero on entry and on return.
func (s *Stage) priceChain(chain []Op, readers, inside []int32, wrote, seen []bool) {
	var bytes, alone int64
	for k := range chain {
		op := &chain[k]
		alone += int64(op.MemBytes)
		for _, list := range [2][]ValueID{op.In, op.Saved} {
			for _, id := range list {
				switch {
				case id < 0:
				case wrote[id]:
					inside[id]++
				case !seen[id]:
					seen[id] = true
					bytes += int64(s.Values[id].Bytes())
				}
			}
		}
	}
	for k := range chain {
		for _, id := range chain[k].Out {
			if id >= 0 && readers[id] > inside[id] {
				bytes += int64(s.Values[id].Bytes())
			}
		}
	}
	for k := range chain {
		for _, list := range [2][]ValueID{chain[k].In, chain[k].Saved} {
			for _, id := range list {
				if id >= 0 {
					inside[id], seen[id] = 0, false
				}
			}
		}
	}
	if alone <= 0 {
		return
	}
	// Share the chain's bytes in proportion; the last op takes the rounding.
	left := bytes
	for k := range chain {
		op := &chain[k]
		if k == len(chain)-1 {
			op.MemBytes = units.Bytes(left)
			break
		}
		b := int64(float64(bytes) * float64(op.MemBytes) / float64(alone))
		op.MemBytes = units.Bytes(b)
		left -= b
	}
}

func readsAny(op *Op, wrote []bool) bool {
	for _, list := range [2][]ValueID{op.In, op.Saved} {
		for _, id := range list {
			if id >= 0 && wrote[id] {
				return true
			}
		}
	}
	return false
}

func mark(ids []ValueID, set []bool) {
	for _, id := range ids {
		if id >= 0 {
			set[id] = true
		}
	}
}

func unmark(ids []ValueID, set []bool) {
	for _, id := range ids {
		if id >= 0 {
			set[id] = false
		}
	}
}
