package validate

import "github.com/tpsim/tpsim/model"

// sourceFLOPs is the FLOPs of one step counted as Megatron-LM counts them for the TFLOP/s it
// reports, the one place tpsim uses a source's own FLOP convention: Narayanan et al. 2021
// ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM") Eq. 3,
// which assumes activation recomputation: every transformer layer's matrix products four times
// (forward, backward twice, recompute forward), the output head three times, in closed form from
// the configuration. For a GPT with a 4h MLP this is 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
// Every other FLOP figure in tpsim is the Program's (program.ModelFLOPs, the ops' FLOPs).
func sourceFLOPs(t *model.Transformer, batch, seq int) float64 {
	tokens := float64(batch) * float64(max(seq, 1))
	h, q := float64(t.Hidden), float64(t.Heads*t.HeadDim)
	qkv := float64((t.Heads + 2*t.KVHeads) * t.HeadDim)
	mlp := 2.0
	if t.Gated {
		mlp = 3
	}
	// One layer's forward: 2 tokens x its Linear weights, and 4 B s^2 a d for attention's full
	// s x s products; the head's: 2 tokens h V.
	layer := 2*tokens*(h*qkv+q*h+mlp*h*float64(t.FFN)) + 4*float64(batch)*float64(seq)*float64(seq)*q
	layers, head := float64(t.Layers)*layer, 2*tokens*h*float64(t.Vocab)
	return 4*layers + 3*head
}
