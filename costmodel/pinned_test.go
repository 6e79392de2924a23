package costmodel

import (
	"math"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Tests that pin what issue 39's mutations slipped past (docs/testing.md lists them). Every
// expected value is derived here by hand or from the cited source, not read from the code.

// MFU and HFU by hand (Narayanan et al. 2021 §5.1, Eq. 3): MFU is the model FLOPs, each matrix
// product once forward and twice backward, 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) for a GPT with
// a 4h MLP, over step x peak x GPUs; HFU the same with the FLOPs the devices execute, which with
// full recompute add the layers' forward again: 96 B L s h^2 (1 + s/(6h) + V/(16 h L)) (the
// logits are not recomputed). Dense (no recompute, eager attention) the two are equal. The A100's
// dense BF16 peak is 312 TFLOP/s (NVIDIA A100 datasheet). The step time is the model's own; what
// is pinned is what MFU and HFU make of it.
func TestMFUHFUHandDerived(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	if peak, err := hw.PeakFor("bf16"); err != nil || float64(peak) != 312e12 {
		t.Fatalf("a100-80g bf16 peak %v (%v), want the datasheet's 312 TFLOP/s", peak, err)
	}
	m := mustPreset(t, "gpt3-1.3b")
	tc := m.Transformer
	for _, c := range []struct {
		st        string
		recompute bool
	}{
		{"dp=2,tp=2,pp=2,gbs=8", false},
		{"dp=2,tp=2,pp=2,gbs=8,recompute=full", true},
	} {
		st := mustParse(t, c.st)
		B, L, s, h, V := 8.0, float64(tc.Layers), float64(tc.Seq), float64(tc.Hidden), float64(tc.Vocab)
		model := 72 * B * L * s * h * h * (1 + s/(6*h) + V/(12*h*L))
		hwFLOPs := model
		if c.recompute {
			hwFLOPs = 96 * B * L * s * h * h * (1 + s/(6*h) + V/(16*h*L))
		}
		const gpus = 8
		for _, path := range []string{"Predict", "Estimate"} {
			var r *Result
			if path == "Predict" {
				r = predictLowered(t, m, st, hw)
			} else {
				var err error
				if r, err = Estimate(m, st, hw); err != nil {
					t.Fatal(err)
				}
			}
			step := float64(r.Time.Step)
			wantMFU := model / (step * 312e12 * gpus)
			wantHFU := hwFLOPs / (step * 312e12 * gpus)
			if !near(r.MFU, wantMFU, 1e-9) {
				t.Errorf("%s %s: MFU %.6f, by hand %.6f", path, c.st, r.MFU, wantMFU)
			}
			if !near(r.HFU, wantHFU, 1e-9) {
				t.Errorf("%s %s: HFU %.6f, by hand %.6f", path, c.st, r.HFU, wantHFU)
			}
			if want := model / step / gpus / 1e12; !near(r.ModelTFLOPsPerGPU, want, 1e-9) {
				t.Errorf("%s %s: model TFLOP/s per GPU %.4f, by hand %.4f", path, c.st, r.ModelTFLOPsPerGPU, want)
			}
			if want := B * s / step; !near(r.TokensPerS, want, 1e-9) {
				t.Errorf("%s %s: tokens/s %.4f, by hand %.4f", path, c.st, r.TokensPerS, want)
			}
			// With full recompute HFU/MFU is 4/3 on the layers (Narayanan et al. Eq. 3's 96 vs 72).
			if c.recompute && !(r.HFU/r.MFU > 1.25 && r.HFU/r.MFU < 4.0/3) {
				t.Errorf("%s %s: HFU/MFU %.4f, want just under 4/3", path, c.st, r.HFU/r.MFU)
			}
		}
	}
	// SetTime on numbers small enough to check by eye: 3e15 model and 4e15 hardware FLOPs over
	// 2 devices in 10 s at 1e14 FLOP/s peak: MFU 3e15/(10 x 1e14 x 2) = 1.5, HFU 2, 1e3 tokens/s.
	r := Result{Devices: 2, FLOPs: FLOPs{Model: 3e15, Hardware: 4e15}}
	r.SetTime(Time{Step: 10}, 1e14, 1e4)
	if r.MFU != 1.5 || r.HFU != 2 || r.ModelTFLOPsPerGPU != 150 || r.HardwareTFLOPsPerGPU != 200 || r.TokensPerS != 1000 {
		t.Errorf("SetTime: MFU %g HFU %g model %g hardware %g TFLOP/s, %g tokens/s; want 1.5, 2, 150, 200, 1000", r.MFU, r.HFU, r.ModelTFLOPsPerGPU, r.HardwareTFLOPsPerGPU, r.TokensPerS)
	}
}

// Collectives across DGX-A100 nodes priced by hand with NCCL's tuning model (NVIDIA/nccl
// src/graph/tuning.cc at 01afd20a77b5804e0ecf1042509dd9d20ebf9e93, ncclTopoTuneModel and
// ncclTopoGetAlgoTime), over the a100-80g preset's bus bandwidths (NVLink 300 GB/s x 0.767 =
// 230.1 GB/s, InfiniBand 25 GB/s x 0.96 = 24 GB/s per GPU), for 8 GPUs a node and 2 or 4 nodes.
// From tuning.cc:
//   - latency = baseLat + (nsteps - nInterSteps) x intraLat + nInterSteps x interLat for a ring
//     (nsteps 2(g-1) for all-reduce, g-1 for all-gather and reduce-scatter; nInterSteps 2(q-1) and
//     q-1), 2 ((k-1) intraLat + log2(q) interLat) + baseLat for a tree (all-reduce only);
//     baseLat ring {3.6, 10, 8.4}, tree {4.4, 4.4, 0} us; hwLat NVLink ring {.47, 1.9, 3.4},
//     tree {.52, 1.2, 28}, network ring {2.7, 4.0, 9.6}, tree {5.0, 8.5, 50} (LL, LL128, Simple);
//   - LL's intra-node latency x 1.8 on more than one node (ring and tree alike);
//   - the multi-node Simple ring all-reduce's latency x 1.9 from g/16 x 64 KiB up (the plateau);
//   - bandwidth shares: ring LL 1/4 across nodes, LL128 0.92, tree 0.9 x {1/3.8, 0.915, 1};
//   - the tree's bandwidth x treeCorrectionFactor[proto][log2(n/64)] (1 from 256 MB up).
//
// tpsim's bandwidths (costmodel/nccl.go): a ring's Simple time is the bytes each rank sends over
// each level, twice for all-reduce: (k-1)/k n / 230.1e9 + (q-1)/q (n/k) / 24e9; the tree's
// algorithm bandwidth is taken as the ring's (tuning.cc's .5 of busBw, which the ring's
// 2(g-1)/g approaches), without tuning.cc's per-channel caps (maxTreeBw, ll128MaxBwPerCh), which
// tpsim's measured bus bandwidths stand in for. The least time over algorithms and protocols wins.
// The values were computed with those formulas outside the code; the comment names the winner.
func TestNCCLMultiNodeHandDerived(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	ar, ag, rs := program.OpAllReduce, program.OpAllGather, program.OpReduceScatter
	for _, c := range []struct {
		kind  program.OpKind
		g     int
		n     units.Bytes
		proto string  // the ring's best protocol (CollectiveProtocol), which the tree may beat
		want  float64 // seconds
	}{
		// All-reduce, 2 nodes. 4 KiB: tree LL, 4.4 + 2 (7 x .52 x 1.8 + 1 x 5.0) = 27.50 us.
		{ar, 16, 4 << 10, "LL", 2.78205762e-05},
		// 1 MiB: tree LL128, 4.4 + 2 (7 x 1.2 + 8.5) = 38.2 us, bandwidth x 0.9 x 0.915 x 0.6.
		{ar, 16, 1 << 20, "LL128", 6.53932031e-05},
		// 8 MiB: ring LL128, 10 + 28 x 1.9 + 2 x 4.0 = 71.2 us, bandwidth x 0.92.
		{ar, 16, 8 << 20, "LL128", 1.88036188e-04},
		// 256 MiB: ring Simple, (8.4 + 28 x 3.4 + 2 x 9.6) x 1.9 = 233.32 us (the plateau).
		{ar, 16, 256 << 20, "Simple", 3.67297739e-03},
		// All-reduce, 4 nodes (log2 4 = 2 tree levels across).
		{ar, 32, 4 << 10, "LL", 3.78849149e-05},
		{ar, 32, 1 << 20, "LL", 8.79197497e-05},    // tree LL128 beats the ring's best, LL
		{ar, 32, 8 << 20, "LL128", 2.79563998e-04}, // tree LL128, correction .7 at 2^17
		{ar, 32, 256 << 20, "Simple", 4.62586805e-03},
		// All-gather, 2 nodes: ring only. 4 KiB: LL, 3.6 + 14 x .47 x 1.8 + 1 x 2.7 = 18.14 us.
		{ag, 16, 4 << 10, "LL", 1.82489700e-05},
		{ag, 16, 1 << 20, "LL", 4.50163233e-05},
		{ag, 16, 8 << 20, "LL128", 9.90180942e-05},
		// 256 MiB: Simple, 8.4 + 14 x 3.4 + 9.6 = 65.6 us, no plateau (not an all-reduce).
		{ag, 16, 256 << 20, "Simple", 1.78542869e-03},
		{ag, 32, 4 << 10, "LL", 3.55143033e-05},
		{ag, 32, 1 << 20, "LL", 6.77216567e-05},
		{ag, 32, 8 << 20, "LL128", 1.45490558e-04},
		{ag, 32, 256 << 20, "Simple", 2.20175403e-03},
		// Reduce-scatter: the same steps and bytes as all-gather (tuning.cc treats them alike).
		{rs, 16, 4 << 10, "LL", 1.82489700e-05},
		{rs, 16, 1 << 20, "LL", 4.50163233e-05},
		{rs, 16, 8 << 20, "LL128", 9.90180942e-05},
		{rs, 16, 256 << 20, "Simple", 1.78542869e-03},
		{rs, 32, 4 << 10, "LL", 3.55143033e-05},
		{rs, 32, 8 << 20, "LL128", 1.45490558e-04},
		{rs, 32, 256 << 20, "Simple", 2.20175403e-03},
	} {
		got := CollectiveTime(hw, c.kind, c.g, 1, c.n)
		if !near(float64(got), c.want, 1e-6) {
			t.Errorf("%s over %d ranks (%d nodes) of %v: %.8g s, NCCL's tuning model gives %.8g", c.kind, c.g, c.g/8, c.n, float64(got), c.want)
		}
		if p := CollectiveProtocol(hw, c.kind, c.g, 1, c.n); p != c.proto {
			t.Errorf("%s over %d ranks of %v: protocol %s, want %s", c.kind, c.g, c.n, p, c.proto)
		}
	}
}

// The tied embedding's all-reduce over pp runs in place on the embedding's gradient (Megatron-LM's
// _allreduce_embedding_grads), so it adds no gradient buffer: with pp=2 and no dp or tp there is
// no gradient reduction that packs a buffer, so every rank's communication buffer is 0.
func TestTiedAllReduceNotAGradientBuffer(t *testing.T) {
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32,
		Tied: true, Batch: 8}.Build("tied", "gpt")
	if err != nil {
		t.Fatal(err)
	}
	hw := loadHW(t, "a100-80g")
	p, err := program.Lower(m, mustParse(t, "pp=2,gbs=8,mbs=2"))
	if err != nil {
		t.Fatal(err)
	}
	tied := 0
	for _, s := range p.Stages {
		for _, op := range s.Optimizer {
			if op.Kind == program.OpAllReduce && op.Dim == strategies.DimPP {
				tied++
			}
		}
	}
	if tied != 2 {
		t.Fatalf("%d tied all-reduces over pp, want one on each of the 2 stages", tied)
	}
	c, err := NewCoster(p, hw)
	if err != nil {
		t.Fatal(err)
	}
	for r, mem := range c.Memory().PerRank {
		if mem.Comm != 0 {
			t.Errorf("pp rank %d: communication buffer %v, want 0 (the tied all-reduce runs in place)", r, mem.Comm)
		}
	}
}

// One op's cost by hand (hardware/doc.go's roofline): a product of f FLOPs takes
// f / (peak x GEMMLimit x f/(f + f_half)), GEMMLimit = gemm_max_fraction x gemm_achieved_fraction;
// a linear's backward is two products of the forward's size; the op's time is the slower of that
// and its bytes at mem_max_fraction of the memory bandwidth, plus op_overhead. Under
// precision=fp8 a block's Linear runs at the FP8 peak x fp8_gemm_fraction x f/(f + f_half) (the
// same size curve: a small FP8 product is far from its peak, as a small BF16 one is).
// a100-80g: 312e12, 0.869 x 0.745, f_half 1.9e9, 2039e9 x 0.84. h100-sxm: FP8 1978.9e12 x 0.546,
// f_half 5.5e9, 3350e9 x 0.84.
func TestLinearOpCostHandDerived(t *testing.T) {
	roof := func(flops, bytes, peak, frac, half, bw, overhead float64) float64 {
		eff := frac * flops / (flops + half)
		return math.Max(flops/(peak*eff), bytes/(bw*0.84)) + overhead
	}
	for _, c := range []struct {
		hw, st                 string
		peak, frac, half, bwMB float64
	}{
		{"a100-80g", "tp=2,gbs=8,mbs=2", 312e12, 0.869 * 0.745, 1.9e9, 2039e9},
		{"h100-sxm", "tp=2,gbs=8,mbs=2,precision=fp8", 1978.9e12, 0.546, 5.5e9, 3350e9},
	} {
		hw := loadHW(t, c.hw)
		p, err := program.Lower(mustPreset(t, "gpt3-1.3b"), mustParse(t, c.st))
		if err != nil {
			t.Fatal(err)
		}
		co, err := NewCoster(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		over := float64(hw.Efficiency.OpOverhead)
		checked := 0
		for _, ops := range [][]program.Op{p.Stages[0].Forward, p.Stages[0].Backward} {
			for i := range ops {
				op := &ops[i]
				if op.Kind != program.OpLinear || op.Module != "layers.0.mlp.fc1" {
					continue
				}
				// The forward product: 2 M N K FLOPs, M = 2 x 2048 tokens, fc1 2048 -> 8192/2.
				f := 2 * float64(op.M) * float64(op.N) * float64(op.K)
				if op.M != 2*2048 || op.K != 2048 || op.N != 8192/2 {
					t.Fatalf("fc1 on one of 2 tensor-parallel ranks is %d x %d x %d, want 4096 x 4096 x 2048", op.M, op.N, op.K)
				}
				want := roof(float64(op.FLOPs), float64(op.MemBytes), c.peak, c.frac, c.half, c.bwMB, over)
				if op.Phase == program.Backward {
					if float64(op.FLOPs) != 2*f {
						t.Fatalf("fc1 backward %v FLOPs, want two products of %g", op.FLOPs, f)
					}
					// Two products of size f, each at eff(f).
					want = math.Max(2*f/(c.peak*c.frac*f/(f+c.half)), float64(op.MemBytes)/(c.bwMB*0.84)) + over
				}
				if got := float64(co.Compute(op)); !near(got, want, 1e-12) {
					t.Errorf("%s %s fc1 %s: %.6g s, by hand %.6g", c.hw, c.st, op.Phase, got, want)
				}
				checked++
			}
		}
		if checked != 2 {
			t.Errorf("%s: checked %d fc1 ops, want forward and backward", c.hw, checked)
		}
	}
}
