package costmodel

import (
	"fmt"

	"github.com/tpsim/tpsim/strategies"
)

// CommBoundShare is the share of the step that exposed communication must reach before a
// prediction is called communication bound (CommBound).
const CommBoundShare = 0.2

// CommBound says, when exposed communication is at least CommBoundShare of r's step, which mesh
// dimension's communication takes longest (exposed or hidden) under st and what it carries; it
// is "" otherwise.
func (r *Result) CommBound(st strategies.Strategy) string {
	if r.Time.Step <= 0 || float64(r.Time.CommExposed) < CommBoundShare*float64(r.Time.Step) {
		return ""
	}
	var dim strategies.Dim
	for _, d := range strategies.DimOrder {
		if r.CommTime[d] > 0 && (dim == "" || r.CommTime[d] > r.CommTime[dim]) {
			dim = d
		}
	}
	if dim == "" {
		return ""
	}
	return fmt.Sprintf("Communication bound: exposed communication is %.1f%% of the step. %s dominates (%s=%d, %s): %v per step, overlapped or not, %v sent per device.",
		100*float64(r.Time.CommExposed)/float64(r.Time.Step), dim, dim, st.Mesh.Size(dim), CommCarries(dim, st), r.CommTime[dim], r.CommBytes[dim])
}

// CommCarries says what a mesh dimension's collectives carry under st.
func CommCarries(dim strategies.Dim, st strategies.Strategy) string {
	switch dim {
	case strategies.DimDP:
		switch st.ZeRO {
		case 0:
			return "gradient all-reduce"
		case 3:
			return "ZeRO-3 parameter all-gathers in forward and backward, gradient reduce-scatter"
		default:
			return fmt.Sprintf("ZeRO-%d gradient reduce-scatter and parameter all-gather", st.ZeRO)
		}
	case strategies.DimTP:
		if st.SP {
			return "tensor-parallel activation all-gathers and reduce-scatters"
		}
		return "tensor-parallel activation all-reduces"
	case strategies.DimPP:
		return "pipeline activation sends between stages"
	case strategies.DimCP:
		return "context-parallel key/value exchange"
	}
	return string(dim)
}
