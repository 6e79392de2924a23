package program

import (
	"testing"

	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// The ring algorithm (Thakur, Rabenseifner and Gropp 2005, Sec. 4) on g ranks: an all-gather or
// a reduce-scatter moves g-1 chunks of n/g through each rank, (g-1)/g of n in g-1 steps; an
// all-reduce is the two in turn, 2(g-1)/g of n in 2(g-1) steps. Worked by hand: 4 ranks of a
// 1,000-byte tensor send 750 (all-gather) and 1,500 (all-reduce) bytes each; a pipeline send
// moves the whole message in one step and its receive sends nothing.
func TestRingSizes(t *testing.T) {
	for _, c := range []struct {
		kind  OpKind
		g     int
		full  units.Bytes
		sent  units.Bytes
		steps int
	}{
		{OpAllGather, 4, 1000, 750, 3},
		{OpReduceScatter, 8, 800, 700, 7},
		{OpAllToAll, 2, 64, 32, 1},
		{OpAllReduce, 4, 1000, 1500, 6},
		{OpAllReduce, 2, 512, 512, 2}, // the tied embedding's ring of two pipeline ranks
		{OpSend, 2, 300, 300, 1},
		{OpRecv, 2, 300, 0, 1},
		{OpSlice, 4, 1000, 0, 3},
	} {
		if got := SentBytes(c.kind, c.g, c.full); got != c.sent {
			t.Errorf("SentBytes(%s, %d, %v) = %v, want %v", c.kind, c.g, c.full, got, c.sent)
		}
		if c.kind != OpSlice && c.kind != OpRecv {
			if got := RingSteps(c.kind, c.g); got != c.steps {
				t.Errorf("RingSteps(%s, %d) = %d, want %d", c.kind, c.g, got, c.steps)
			}
		}
	}
}

// collectiveOp carries the sizes, the group and the full tensor as the op's memory traffic; a
// slice (a local copy) has no group and sends nothing.
func TestCollectiveOp(t *testing.T) {
	op := collectiveOp(OpReduceScatter, strategies.DimDP, 4, 1000)
	if op.Kind != OpReduceScatter || op.Dim != strategies.DimDP || op.Group != 4 || op.SentBytes != 750 || op.FullBytes != 1000 || op.MemBytes != 1000 {
		t.Errorf("reduce-scatter over 4: %+v", op)
	}
	sl := collectiveOp(OpSlice, strategies.DimTP, 4, 1000)
	if sl.Dim != "" || sl.Group != 0 || sl.SentBytes != 0 || sl.FullBytes != 1000 {
		t.Errorf("slice: dim %q group %d sent %v full %v; want no group, nothing sent, the full tensor", sl.Dim, sl.Group, sl.SentBytes, sl.FullBytes)
	}
}
