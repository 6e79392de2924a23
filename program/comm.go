package program

import (
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// CommBytes sums the bytes one rank of stage s sends per step on each mesh dimension: forward
// and backward ops once per microbatch, optimizer ops once.
func (p *Program) CommBytes(s *Stage) map[strategies.Dim]units.Bytes {
	out := map[strategies.Dim]units.Bytes{strategies.DimDP: 0, strategies.DimTP: 0, strategies.DimPP: 0, strategies.DimCP: 0}
	m := units.Bytes(p.Microbatches)
	for _, op := range s.Forward {
		out[op.Dim] += m * op.SentBytes
	}
	for _, op := range s.Backward {
		out[op.Dim] += m * op.SentBytes
	}
	for _, op := range s.Optimizer {
		out[op.Dim] += op.SentBytes
	}
	delete(out, "")
	return out
}
