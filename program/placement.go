package program

import "fmt"

// PlacementKind is how a tensor lies on one mesh dimension.
type PlacementKind int

// Placements, as in torch.distributed.tensor.
const (
	Replicate PlacementKind = iota // every rank holds the whole tensor
	Shard                          // every rank holds a contiguous slice along Dim
	Partial                        // every rank holds a summand of the tensor (sum reduction)
)

// Placement of a tensor on the tensor-parallel dimension. Dim counts from the end when negative:
// -1 is the feature (last) dimension, 1 the sequence dimension of a [batch, seq, feature] activation.
type Placement struct {
	Kind PlacementKind
	Dim  int
}

func (p Placement) String() string {
	switch p.Kind {
	case Shard:
		return fmt.Sprintf("Shard(%d)", p.Dim)
	case Partial:
		return "Partial(sum)"
	}
	return "Replicate()"
}
