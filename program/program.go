package program

import (
	"strings"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Phase says when an op runs in a step.
type Phase int

// Phases of one training step.
const (
	Forward Phase = iota
	Backward
	Optimizer
)

func (p Phase) String() string {
	return [...]string{"forward", "backward", "optimizer"}[p]
}

// OpKind is what an op does. Compute kinds are listed first, then data movement.
type OpKind string

// Op kinds. Backward ops of compute kinds carry the same kind with Phase Backward and Fwd set.
const (
	OpEmbedding OpKind = "embedding" // In [ids]; Out [y]; Param; rows [VocabLo, VocabHi) of the full table are local
	OpLinear    OpKind = "linear"    // In [x]; Out [y]; y = x W^T (+ b when Bias)
	OpBias      OpKind = "bias"      // In [x]; Out [y]; y = x + b (a row-parallel bias, added once after the reduction)
	OpNorm      OpKind = "norm"      // In [x]; Out [y, stats]; LayerNorm or RMSNorm (Norm) over the last dimension
	OpAct       OpKind = "act"       // In [x]; Out [y]; Act is relu, gelu or silu
	OpMul       OpKind = "mul"       // In [a, b]; Out [y]; elementwise
	OpAdd       OpKind = "add"       // In [a, b]; Out [y]; elementwise (residual); also sums gradients in backward
	OpAttention OpKind = "attention" // In [qkv (, kv gathered over cp)]; Out eager [o (, probs (, mask, dropped)) but under selective recompute], flash [o, lse]; causal softmax(q k^T / sqrt(d)) v
	OpDropout   OpKind = "dropout"   // In [x]; Out [y, mask]; y = x * mask / (1 - P), mask is 1 byte per element
	OpLoss      OpKind = "loss"      // In [y, target]; Out [loss], or [loss, y in fp32 (transient), fp32 log-probabilities] for cross-entropy under mixed precision; Loss is the model's loss kind, scaled by Scale. Vocabulary-parallel (VocabHi > 0): In [y shard, target, stats gathered over tp (, y shard in fp32)]; Out [loss, lse]
	// OpLossStats starts a vocabulary-parallel cross-entropy on logits sharded over tp (Megatron-LM's
	// vocab_parallel_cross_entropy, PyTorch's loss_parallel): In [y shard, target]; Out [stats (, y
	// shard in fp32 under mixed precision)], for each token the shard's max m, its sum of
	// exp(y - m) and the target's logit where this rank holds it (else 0). VocabHi - VocabLo
	// vocabulary entries are local, from tp rank x that on. The stats are all-gathered over tp and
	// OpLoss combines them.
	OpLossStats OpKind = "loss_stats"

	OpAllReduce     OpKind = "all_reduce"
	OpAllGather     OpKind = "all_gather"
	OpReduceScatter OpKind = "reduce_scatter"
	OpAllToAll      OpKind = "all_to_all"
	OpSlice         OpKind = "slice" // Replicate -> Shard(Axis): keep this rank's chunk, no communication
	OpSend          OpKind = "send"  // to the next (forward) or previous (backward) pipeline stage
	OpRecv          OpKind = "recv"
	OpStep          OpKind = "optimizer_step" // update every local parameter from its gradient
)

// IsCollective reports whether ops of kind k communicate within a group.
func (k OpKind) IsCollective() bool {
	switch k {
	case OpAllReduce, OpAllGather, OpReduceScatter, OpAllToAll:
		return true
	}
	return false
}

// IsComm reports whether ops of kind k communicate: a collective, or a pipeline send or
// receive. They run on the communication stream; every other op computes.
func (k OpKind) IsComm() bool {
	return k.IsCollective() || k == OpSend || k == OpRecv
}

// ValueID names a value of a Stage; -1 is "none".
type ValueID int

// Value is a tensor of one microbatch on one rank.
type Value struct {
	ID    ValueID
	Name  string
	Shape []int // local shape
	Elem  int   // bytes per element
	Place Placement
	// Saved is true when a backward op reads the value, so it lives from its forward op to that
	// backward op (activation memory).
	Saved bool
	// Data marks inputs and targets read from the batch.
	Data bool
	// Int marks int32 values (token ids and class targets).
	Int bool
}

// Elems is the number of elements in v.
func (v *Value) Elems() int64 { return elems(v.Shape) }

// Bytes is v's size in memory.
func (v *Value) Bytes() units.Bytes { return units.Bytes(v.Elems() * int64(v.Elem)) }

// Param is one parameter tensor held by a rank, named as in PyTorch ("layers.0.attn.qkv.weight").
type Param struct {
	Name   string
	Module string
	Full   []int // shape of the whole parameter
	Local  []int // shape of this rank's shard on the tensor-parallel dimension
	// ShardDim is the dimension of Full split over tp, -1 when replicated.
	ShardDim int
	// PartialTP is true when ranks of a tp group compute different summands of this parameter's
	// gradient (a replicated parameter applied to sequence-sharded activations), so the gradients
	// are all-reduced over tp before the update.
	PartialTP bool
}

// Elems is the number of elements of p on one rank.
func (p *Param) Elems() int64 { return elems(p.Local) }

// Op is one step of a rank's program.
type Op struct {
	Kind   OpKind
	Phase  Phase
	Module string // FQN of the module the op belongs to
	In     []ValueID
	// Out lists the values the op writes. For the backward op of a compute op, Out[i] is the
	// gradient of the forward op's In[i], or -1 where no gradient is needed.
	Out []ValueID
	// Fwd is, for a backward op, the index in Stage.Forward of the op it differentiates; -1 otherwise.
	Fwd int
	// Recompute marks forward ops rerun during backward (activation recomputation).
	Recompute bool

	// Compute ops.
	Param            string  // weight name for linear, embedding, norm, bias ops
	Bias             string  // bias name for linear (and norm with bias)
	Act              string  // relu, gelu, silu
	P                float64 // dropout probability (dropout ops and attention with dropout)
	Norm             model.Kind
	Loss             model.Kind
	Scale            float64 // loss scale: 1 / (microbatches x dp x cp)
	VocabLo, VocabHi int
	Heads, KVHeads   int // local attention heads
	HeadDim          int
	// Saved lists, for a backward op, the forward values it reads: linear [x], norm [x, stats],
	// act [x], mul [a, b], attention [qkv (, kv) (, probs (, mask, dropped))] eager or
	// [qkv (, kv), lse] flash, loss [y, target] or [log-probabilities, target] (mixed precision
	// cross-entropy) or [y shard or its fp32 copy, target, lse] (vocabulary-parallel), embedding
	// [ids], dropout [mask].
	// Under full recompute they are the recomputed copies. Under sequence parallel a Linear whose
	// input is a sequence all-gather reads the gather's output redone in backward from the saved
	// [b, s/t, h] shard (Korthikanti et al. 2022 §4.2.2), not the forward's gathered value.
	Saved []ValueID
	// GradInput is false when the backward op need not compute the input gradient (the input is
	// data, or nothing upstream needs it).
	GradInput bool

	// Collectives and point to point.
	Dim    strategies.Dim // mesh dimension of the group
	Group  int            // group size
	Axis   int            // gathered / scattered / sliced dimension of the value (negative counts from the end)
	Params []string       // gradient or parameter buckets for data-parallel and ZeRO collectives
	Peer   int            // pipeline stage sent to / received from; for the tied embedding's all-reduce over pp, the other stage

	// Elems is the natural size of a kernel that is not a matrix product, the unit of a
	// hardware's kernel rates: output elements of elementwise ops and embeddings, input elements
	// of norms, logits of the loss, attention scores (batch x heads x seq x seq) of attention, and
	// local parameters of the optimizer step. Backward ops keep their forward op's Elems.
	Elems int64
	// M, N, K are a linear op's forward GEMM: rows x out = (rows x in)(in x out) on this rank;
	// its backward multiplies the same sizes (dx: M x K, dW: N x K).
	M, N, K int
	// Costs. FLOPs counts multiply-adds as 2; MemBytes is the bytes the op reads and writes;
	// SentBytes is what this rank sends (docs/architecture.md's bytes-per-rank table); FullBytes is the collective's whole tensor.
	FLOPs     units.FLOPs
	MemBytes  units.Bytes
	SentBytes units.Bytes
	FullBytes units.Bytes

	// Free lists the values whose last use is this op (within one microbatch's forward and backward).
	Free []ValueID
}

// Differentiates reports whether op is the backward of a forward op (Fwd names it): not a forward
// op, a forward op recomputed in the backward (full recompute replays them with Phase Backward),
// nor a collective or send the backward needs.
func (op *Op) Differentiates() bool { return op.Phase == Backward && op.Fwd >= 0 }

// Stage is the program of one (virtual) pipeline stage: what every rank of that stage runs. Ranks
// of a stage differ only in which shard (their tp coordinate) and which samples (dp, cp) they hold.
type Stage struct {
	Index int
	Rank  int // pipeline rank (Index mod pp)
	// Layers is the range [Lo, Hi) of transformer layers of this stage.
	LayerLo, LayerHi int
	Params           []Param
	Values           []Value
	Forward          []Op // one microbatch
	Backward         []Op // one microbatch
	Optimizer        []Op // once per step
}

// Program is a model lowered for a strategy: one Stage per virtual pipeline stage (pp x vpp).
type Program struct {
	Model    *model.Model
	Strategy strategies.Strategy
	Styles   map[string]strategies.Style
	Stages   []*Stage
	// ParamBytes, GradBytes and ActBytes are bytes per element of parameters, gradients and
	// activations; OptBytes is optimizer state bytes per parameter (Rajbhandari et al. 2020 §3.1).
	ParamBytes, GradBytes, ActBytes, OptBytes int
	// Microbatches per pipeline per step, and samples per microbatch per rank.
	Microbatches, MicroBatch int
	// Tokens per step (all ranks).
	Tokens int64
}

// Value returns the value with id in stage s.
func (s *Stage) Value(id ValueID) *Value { return &s.Values[id] }

// IsParamGather reports whether op is a ZeRO-3 gather of parameters for the forward or backward
// ops that use them: an all-gather over dp that lists parameters, outside the optimizer phase
// (where ZeRO-1/2 gather the updated shards).
func (op *Op) IsParamGather() bool {
	return op.Kind == OpAllGather && op.Dim == strategies.DimDP && op.Phase != Optimizer && len(op.Params) > 0
}

// PrefetchUnit is the unit that ZeRO-3's prefetch counts for an op of module: its transformer
// layer ("layers.3" for every module under it), as FSDP wraps each transformer block in one
// unit whose parameters are gathered together (torchtitan's apply_fsdp calls fully_shard on
// every TransformerBlock; llm-foundry's FSDP wraps each MPTBlock), and the top-level module
// otherwise (the embedding, the final norm, the head). Strategy.Prefetch counts these units.
func PrefetchUnit(module string) string {
	if rest, ok := strings.CutPrefix(module, "layers."); ok {
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			return module[:len("layers.")+i]
		}
		return module
	}
	if i := strings.IndexByte(module, '.'); i >= 0 {
		return module[:i]
	}
	return module
}
