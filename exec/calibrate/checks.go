package calibrate

import (
	"context"

	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// KernelCheck is a kernel that the profile does not fit but prices: its time alone against what
// the fitted profile charges an op of its FLOPs and bytes (the cost model's roofline: the larger
// of FLOPs at the peak, or at the GEMM efficiency for attention, and bytes at the memory
// bandwidth, plus OpOverhead). A ratio far from 1 says that the profile misprices that kind of op
// on this machine.
type KernelCheck struct {
	Name string `json:"name"`
	What string `json:"what"`
	// Key is the kernel's costmodel.KernelKey and Elems its size as program.Op.Elems counts it;
	// the profile's kernel rate is Elems/Time.
	Key   hardware.Kernel `json:"key"`
	Elems int64           `json:"elems"`
	// FLOPs and Bytes are Op.FLOPs and Op.MemBytes as program.Lower sets them (backward: twice
	// the forward's, optimizer: 10 FLOPs and 2(param+state)+grad bytes per parameter).
	FLOPs units.FLOPs   `json:"flops"`
	Bytes units.Bytes   `json:"bytes"`
	Time  units.Seconds `json:"time_s"`
	// Priced is the profile's price; Ratio = Time/Priced.
	Priced units.Seconds `json:"priced_s"`
	Ratio  float64       `json:"ratio"`
	gemm   bool          // priced at GEMM efficiency (attention)
}

// measureChecks times the kernels of gpt-tiny and seed-mlp that the bandwidth and GEMM fits do
// not cover, at those models' sizes (gpt-tiny: 256 rows of 64, FFN 256, 4 heads of 16 over 32
// tokens, batch 8, vocabulary 256, about 135k parameters; seed-mlp: 111,010 parameters).
func measureChecks(ctx context.Context, s sampler) ([]KernelCheck, error) {
	rng := kernels.NewRand(seed + 3)
	fill := func(n int, lo, hi float32) []float32 {
		v := make([]float32, n)
		kernels.FillUniform(v, rng, lo, hi)
		return v
	}
	const rows, hidden, ffn, vocab = 256, 64, 256, 256
	n := rows * ffn
	gx, gy, gdy := fill(n, -2, 2), make([]float32, n), fill(n, -1, 1)
	h := rows * hidden
	lnX, lnY, lnDy, lnDx := fill(h, -2, 2), make([]float32, h), fill(h, -1, 1), make([]float32, h)
	lnW, lnB, lnDw, lnDb := fill(hidden, 0.5, 1.5), make([]float32, hidden), make([]float32, hidden), make([]float32, hidden)
	mean, rstd := make([]float32, rows), make([]float32, rows)
	kernels.LayerNorm(lnY, mean, rstd, lnX, lnW, lnB, rows, hidden, kernels.DefaultEps)
	d := kernels.AttnDims{Batch: 8, Seq: 32, Heads: 4, KVHeads: 4, HeadDim: 16}
	qkv, dqkv := fill(d.QKVLen(), -1, 1), make([]float32, d.QKVLen())
	q, k, v, o := make([]float32, d.QLen()), make([]float32, d.KVLen()), make([]float32, d.KVLen()), make([]float32, d.QLen())
	dq, dk, dv, do, sc := make([]float32, d.QLen()), make([]float32, d.KVLen()), make([]float32, d.KVLen()), fill(d.QLen(), -1, 1), make([]float32, d.ScratchLen())
	probs := make([]float32, d.ProbsLen())
	kernels.SplitQKV(q, k, v, qkv, d)
	kernels.AttentionForward(o, probs, q, k, v, d)
	logits, dlogits := fill(rows*vocab, -3, 3), make([]float32, rows*vocab)
	ceStats, ceLSE := make([]float32, 3*rows), make([]float32, rows)
	ceAll := fill(6*rows, 0.5, 2)
	targets := make([]int32, rows)
	for i := range targets {
		targets[i] = int32(rng.IntN(vocab))
	}
	const adamN, sgdN = 135168, 111010
	ap, ag, am, av := fill(adamN, -1, 1), fill(adamN, -1e-3, 1e-3), make([]float32, adamN), make([]float32, adamN)
	sp, sg := fill(sgdN, -1, 1), fill(sgdN, -1e-3, 1e-3)
	adam := kernels.NewAdam(1e-9)
	sgd := kernels.SGD{LR: 1e-9}

	const mseN = 100
	mseY, mseT, mseD := fill(mseN, -1, 1), fill(mseN, -1, 1), make([]float32, mseN)
	scores := int64(d.Batch * d.Heads * d.Seq * d.Seq)
	attnF := units.FLOPs(4 * d.Batch * d.Seq * d.Seq * d.Heads * d.HeadDim)
	attnB := units.Bytes(4 * (d.QKVLen() + d.QLen() + 2*d.ProbsLen()))
	checks := []struct {
		c  KernelCheck
		fn func()
	}{
		{KernelCheck{Name: "gelu", Key: hardware.KernelGELU, Elems: int64(n), What: "gpt-tiny MLP activation, 256 x 256", FLOPs: units.FLOPs(n), Bytes: units.Bytes(2 * 4 * n)},
			func() { kernels.GELU(gy, gx) }},
		{KernelCheck{Name: "gelu backward", Key: hardware.KernelGELU.Backward(), Elems: int64(n), What: "gpt-tiny, 256 x 256", FLOPs: units.FLOPs(2 * n), Bytes: units.Bytes(4 * 4 * n)},
			func() { kernels.GELUBackward(gy, gdy, gx) }},
		{KernelCheck{Name: "layernorm", Key: hardware.KernelLayerNorm, Elems: int64(h), What: "gpt-tiny, 256 x 64", FLOPs: units.FLOPs(5 * h), Bytes: units.Bytes(2 * 4 * h)},
			func() { kernels.LayerNorm(lnY, mean, rstd, lnX, lnW, lnB, rows, hidden, kernels.DefaultEps) }},
		{KernelCheck{Name: "layernorm backward", Key: hardware.KernelLayerNorm.Backward(), Elems: int64(h), What: "gpt-tiny, 256 x 64", FLOPs: units.FLOPs(10 * h), Bytes: units.Bytes(4 * 4 * h)},
			func() { kernels.LayerNormBackward(lnDx, lnDw, lnDb, lnDy, lnX, lnW, mean, rstd, rows, hidden) }},
		{KernelCheck{Name: "attention", Key: hardware.KernelAttention, Elems: scores, What: "gpt-tiny causal, 8 x 4 heads x 32 x 16, with the qkv split", FLOPs: attnF, Bytes: attnB, gemm: true},
			func() {
				kernels.SplitQKV(q, k, v, qkv, d)
				kernels.AttentionForward(o, probs, q, k, v, d)
			}},
		{KernelCheck{Name: "attention backward", Key: hardware.KernelAttention.Backward(), Elems: scores, What: "gpt-tiny, with the qkv split and the dqkv merge", FLOPs: 2 * attnF, Bytes: 2 * attnB, gemm: true},
			func() {
				kernels.SplitQKV(q, k, v, qkv, d)
				kernels.AttentionBackward(dq, dk, dv, sc, do, q, k, v, probs, d)
				kernels.MergeQKV(dqkv, dq, dk, dv, d)
			}},
		{KernelCheck{Name: "cross-entropy", Key: hardware.KernelCrossEntropy, Elems: int64(rows * vocab), What: "gpt-tiny logits 256 x 256, loss only (exec's forward)", FLOPs: units.FLOPs(5 * rows * vocab), Bytes: units.Bytes(2 * 4 * rows * vocab)},
			func() { kernels.CrossEntropy(nil, logits, targets, rows, vocab) }},
		{KernelCheck{Name: "cross-entropy backward", Key: hardware.KernelCrossEntropy.Backward(), Elems: int64(rows * vocab), What: "gpt-tiny logits 256 x 256, loss and gradient (exec's backward)", FLOPs: units.FLOPs(5 * rows * vocab), Bytes: units.Bytes(2 * 4 * rows * vocab)},
			func() { kernels.CrossEntropy(dlogits, logits, targets, rows, vocab) }},
		{KernelCheck{Name: "cross-entropy statistics", Key: hardware.KernelCrossEntropyStats, Elems: int64(rows * vocab), What: "gpt-tiny logits 256 x 256 as one vocabulary shard (vocabulary-parallel loss)", FLOPs: units.FLOPs(5 * rows * vocab), Bytes: units.Bytes(2 * 4 * rows * vocab)},
			func() { kernels.CrossEntropyStats(ceStats, logits, targets, rows, vocab, 0, vocab) }},
		{KernelCheck{Name: "cross-entropy combine", Key: hardware.KernelCrossEntropyCombine, Elems: int64(rows), What: "256 rows of 2 shards' statistics", FLOPs: units.FLOPs(5 * rows * 2), Bytes: units.Bytes(4 * (6 + 1) * rows)},
			func() { kernels.CrossEntropyCombine(ceLSE, ceAll, rows, 2) }},
		{KernelCheck{Name: "cross-entropy shard backward", Key: hardware.KernelCrossEntropyShard.Backward(), Elems: int64(rows * vocab), What: "gpt-tiny logits 256 x 256 as one vocabulary shard", FLOPs: units.FLOPs(5 * rows * vocab), Bytes: units.Bytes(2 * 4 * rows * vocab)},
			func() { kernels.CrossEntropyShardBackward(dlogits, logits, ceLSE, targets, rows, vocab, 0, vocab) }},
		{KernelCheck{Name: "relu", Key: hardware.KernelReLU, Elems: int64(n), What: "256 x 256, inputs of both signs", FLOPs: units.FLOPs(n), Bytes: units.Bytes(2 * 4 * n)},
			func() { kernels.ReLU(gy, gx) }},
		{KernelCheck{Name: "relu backward", Key: hardware.KernelReLU.Backward(), Elems: int64(n), What: "256 x 256", FLOPs: units.FLOPs(2 * n), Bytes: units.Bytes(4 * 4 * n)},
			func() { kernels.ReLUBackward(gy, gdy, gx) }},
		{KernelCheck{Name: "silu", Key: hardware.KernelSiLU, Elems: int64(n), What: "256 x 256 (SwiGLU gate)", FLOPs: units.FLOPs(n), Bytes: units.Bytes(2 * 4 * n)},
			func() { kernels.SiLU(gy, gx) }},
		{KernelCheck{Name: "silu backward", Key: hardware.KernelSiLU.Backward(), Elems: int64(n), What: "256 x 256", FLOPs: units.FLOPs(2 * n), Bytes: units.Bytes(4 * 4 * n)},
			func() { kernels.SiLUBackward(gy, gdy, gx) }},
		{KernelCheck{Name: "rmsnorm", Key: hardware.KernelRMSNorm, Elems: int64(h), What: "256 x 64", FLOPs: units.FLOPs(5 * h), Bytes: units.Bytes(2 * 4 * h)},
			func() { kernels.RMSNorm(lnY, rstd, lnX, lnW, rows, hidden, kernels.DefaultEps) }},
		{KernelCheck{Name: "rmsnorm backward", Key: hardware.KernelRMSNorm.Backward(), Elems: int64(h), What: "256 x 64", FLOPs: units.FLOPs(10 * h), Bytes: units.Bytes(4 * 4 * h)},
			func() { kernels.RMSNormBackward(lnDx, lnDw, lnDy, lnX, lnW, rstd, rows, hidden) }},
		{KernelCheck{Name: "mse", Key: hardware.KernelMSE, Elems: int64(mseN), What: "seed-mlp output 10 x 10, loss only", FLOPs: units.FLOPs(5 * mseN), Bytes: units.Bytes(2 * 4 * mseN)},
			func() { kernels.MSE(nil, mseY, mseT) }},
		{KernelCheck{Name: "mse backward", Key: hardware.KernelMSE.Backward(), Elems: int64(mseN), What: "seed-mlp output 10 x 10, loss and gradient", FLOPs: units.FLOPs(5 * mseN), Bytes: units.Bytes(2 * 4 * mseN)},
			func() { kernels.MSE(mseD, mseY, mseT) }},
		{KernelCheck{Name: "adam step", Key: hardware.KernelAdam, Elems: adamN, What: "135,168 parameters (about gpt-tiny's)", FLOPs: units.FLOPs(10 * adamN), Bytes: units.Bytes(28 * adamN)},
			func() { adam.Step(ap, ag, am, av, 1) }},
		{KernelCheck{Name: "sgd step", Key: hardware.KernelSGD, Elems: sgdN, What: "111,010 parameters (seed-mlp's)", FLOPs: units.FLOPs(10 * sgdN), Bytes: units.Bytes(12 * sgdN)},
			func() { sgd.Step(sp, sg, nil) }},
	}
	fns := make([]func(), len(checks))
	for i, c := range checks {
		fns[i] = c.fn
	}
	ts, err := s.each(ctx, fns)
	if err != nil {
		return nil, err
	}
	out := make([]KernelCheck, len(checks))
	for i, c := range checks {
		c.c.Time = units.Seconds(ts[i])
		out[i] = c.c
	}
	return out, nil
}

// price fills Priced and Ratio with the roofline of the fitted profile, whose peak is the one-core
// GEMM peak times the cores (the cost model's Coster.Compute prices any op but a linear one so).
func (c *KernelCheck) price(g GEMMFit, e ElemFit, cores int) {
	rate := float64(g.Peak) * float64(cores)
	if c.gemm {
		f := float64(c.FLOPs)
		rate *= g.Max * f / (f + float64(g.HalfFLOPs))
	}
	t := max(float64(c.FLOPs)/rate, float64(c.Bytes)/float64(e.Bandwidth)) + float64(e.Overhead)
	c.Priced = units.Seconds(t)
	c.Ratio = float64(c.Time) / t
}
