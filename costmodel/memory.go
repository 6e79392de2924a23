package costmodel

import (
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// RankMemory is the memory of every pipeline rank and the most loaded one.
type RankMemory struct {
	PerRank []Memory
	Worst   Memory
}

// StageActivations is the bytes of values stage s keeps from forward to backward for one
// microbatch (docs/architecture.md, "Memory categories": activations, saved for backward).
func StageActivations(s *program.Stage) units.Bytes {
	var n units.Bytes
	for i := range s.Values {
		if s.Values[i].Saved {
			n += s.Values[i].Bytes()
		}
	}
	return n
}

// StageLive is the most bytes of one microbatch's values alive at once while its forward and
// backward run, saved and transient together, following the Program's Free lists.
func StageLive(s *program.Stage) units.Bytes {
	_, l := stageLiveness(s)
	return l
}

// stageLiveness walks one microbatch's forward and backward: an op's inputs and outputs are
// live while it runs, the values of its Free list are freed after it. It returns the peak of the
// transient values (outputs not saved for backward) and the peak of all values.
func stageLiveness(s *program.Stage) (transient, all units.Bytes) {
	live := make([]bool, len(s.Values))  // in the count of all values
	liveT := make([]bool, len(s.Values)) // in the count of transient values
	var cur, curT units.Bytes
	for _, ops := range [][]program.Op{s.Forward, s.Backward} {
		for i := range ops {
			op := &ops[i]
			for li, list := range [][]program.ValueID{op.Out, op.In} {
				for _, id := range list {
					if id < 0 {
						continue
					}
					b := s.Values[id].Bytes()
					if !live[id] {
						live[id] = true
						cur += b
					}
					// Transient: the outputs that are not kept for backward.
					if li == 0 && !liveT[id] && !s.Values[id].Saved {
						liveT[id] = true
						curT += b
					}
				}
			}
			all, transient = max(all, cur), max(transient, curT)
			for _, id := range op.Free {
				if live[id] {
					live[id] = false
					cur -= s.Values[id].Bytes()
				}
				if liveT[id] {
					liveT[id] = false
					curT -= s.Values[id].Bytes()
				}
			}
		}
	}
	return transient, all
}

// gradBuffer is the bytes of the gradient buffer op reduces, 0 for other ops; a stage's largest
// is Piece.Buckets. Gradients are packed into one flat buffer per bucket for their reduction over dp (PyTorch DDP's buckets, bucket_cap_mb) or over tp (the
// gradients of sequence-parallel parameters, coalesced as Megatron-LM does). Only these gradient
// reductions count. The ZeRO-1/2 all-gather of the updated parameters writes the fp16 parameters,
// already counted under params (Rajbhandari et al. 2020 §5; DeepSpeed gathers them in bounded
// buckets), and the tied embedding's all-reduce over pp runs in place on its gradient (Megatron-
// LM's _allreduce_embedding_grads), so neither adds a buffer. Collectives on activations write
// into the values of the Program and count there.
func gradBuffer(op *program.Op) units.Bytes {
	reduce := op.Kind == program.OpAllReduce || op.Kind == program.OpReduceScatter
	if reduce && op.Dim != strategies.DimPP && op.Group > 1 {
		return op.FullBytes
	}
	return 0
}

// InFlight is the number of microbatches whose activations pipeline rank r holds at once
// (Narayanan et al. 2021 §2.2: GPipe keeps all m, 1F1B at most p - r), times Korthikanti et al.
// 2022 §4.2.3's factor 1 + (p-1)/(p v) for the interleaved schedule.
func InFlight(st strategies.Strategy, m, r int) float64 {
	p := st.Mesh.PP
	switch st.Schedule {
	case strategies.ScheduleGPipe:
		return float64(m)
	case strategies.ScheduleInterleaved:
		return float64(min(m, p-r)) * (1 + float64(p-1)/float64(p*st.VPP))
	}
	return float64(min(m, p-r))
}

// Memory returns the memory of each pipeline rank of the program.
func (c *Coster) Memory() RankMemory {
	var t Totals
	per, _ := c.compose(&t) // the memory does not depend on the schedule's timeline
	return RankMemory{PerRank: per, Worst: t.Memory}
}
