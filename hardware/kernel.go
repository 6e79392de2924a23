package hardware

import "strings"

// Kernel names a compute kernel whose measured rate Efficiency.KernelRates may hold: the key
// costmodel.KernelKey gives an op and exec/calibrate measures, one vocabulary for both (exec may
// not import costmodel). A backward kernel is its forward's name with Backward.
type Kernel string

// The kernels tpsim prices by a measured rate. The activation, attention, embedding and
// elementwise names are those of model's activations and program's op kinds.
const (
	KernelReLU                Kernel = "relu"
	KernelGELU                Kernel = "gelu"
	KernelSiLU                Kernel = "silu"
	KernelLayerNorm           Kernel = "layernorm"
	KernelRMSNorm             Kernel = "rmsnorm"
	KernelAttention           Kernel = "attention"
	KernelEmbedding           Kernel = "embedding"
	KernelAdd                 Kernel = "add"
	KernelMul                 Kernel = "mul"
	KernelBias                Kernel = "bias"
	KernelDropout             Kernel = "dropout"
	KernelMSE                 Kernel = "mse"
	KernelCrossEntropy        Kernel = "cross_entropy"
	KernelCrossEntropyStats   Kernel = "cross_entropy_stats"
	KernelCrossEntropyCombine Kernel = "cross_entropy_combine"
	KernelCrossEntropyShard   Kernel = "cross_entropy_shard"
	KernelAdam                Kernel = "adam"
	KernelSGD                 Kernel = "sgd"
)

// Backward is the kernel of k's backward pass.
func (k Kernel) Backward() Kernel { return k + ".backward" }

// Kernels are the forward kernels tpsim names; each has a backward (Backward) but the optimizer
// steps and the cross-entropy statistics and combine, which run once.
var Kernels = []Kernel{KernelReLU, KernelGELU, KernelSiLU, KernelLayerNorm, KernelRMSNorm, KernelAttention,
	KernelEmbedding, KernelAdd, KernelMul, KernelBias, KernelDropout, KernelMSE, KernelCrossEntropy,
	KernelCrossEntropyStats, KernelCrossEntropyCombine, KernelCrossEntropyShard, KernelAdam, KernelSGD}

// Known reports whether k is one of Kernels or one of their backwards.
func (k Kernel) Known() bool {
	for _, x := range Kernels {
		if k == x || k == x.Backward() {
			return true
		}
	}
	return false
}

func kernelNames() string {
	s := make([]string, len(Kernels))
	for i, k := range Kernels {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
