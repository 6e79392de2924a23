package costmodel

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Korthikanti et al. 2022 measured Megatron-LM on Selene's A100s (the a100-80g preset's system)
// without data parallelism. Nothing in the preset was fitted to these numbers (and they are not
// in the training split, validate/data/runs.json and runs_h100.json, that tpsim fit calibrates the
// preset on), so they check the model from outside; the tolerances say how
// well it does, and a change that makes it worse fails here.

// megatron2022 is what the Megatron-LM of Korthikanti et al. 2022 runs beside the mesh: the
// backward's tensor-parallel collectives under the linears' products and its bias-dropout-add
// fusion.
const megatron2022 = "tpoverlap=on,fusion=on"

// Table 4: forward and backward time of one transformer layer of the 22B model (h 6144, 64 heads,
// tp 8, microbatch 4, sequence 2048), in ms. tpsim's layer is the ops of one layer of the
// Program, compute and tensor-parallel communication one after the other except what the
// backward runs under its products (tpoverlap=on: Megatron-LM's asynchronous tensor-parallel
// communication, Coster.Hidden), each block's bias, dropout and residual add in one kernel
// (fusion=on: Megatron-LM's bias-dropout-add fusion), with the a100-80g preset's GEMMs at the
// achieved fraction tpsim fit found for Megatron-LM on the training split (0.756 of the matmul
// sweep's ceiling). Selective recompute reruns the attention core's products and its passes over
// the scores in the backward (their FLOPs and their memory traffic). The collectives that run
// under the products slow them by 1/(1+σ) (the preset's overlap_compute_slowdown, 0.189 from
// arXiv:2507.03114). Measured: +5.7% without recompute, +4.3% with sequence parallelism, +5.2%
// full, +3.8% selective, +2.5% sequence parallel with selective (+4.4%, +2.9%, +4.3%, +2.6%,
// +1.2% before that slowdown; +6.1%, +1.2%, +6.7%, +4.2%, -0.4% before the fusion and the
// backward kernels' own traffic, program.backwardTraffic, with the fraction then fitted, 0.780).
// What is asserted: each row's error is the one stated above and in the README ("within +2.5% to
// +5.7% in all five settings"), to the 0.1 point it is stated to (|error - stated| <= 0.05
// point), so that a change that moves one must restate it; and every row is within issue 12's
// per-row target, 10%.
func TestKorthikantiLayerTimes(t *testing.T) {
	m := mustPreset(t, "megatron-22b")
	hw := loadHW(t, "a100-80g")
	hw.Efficiency = hw.Efficiency.ForStack("megatron-lm") // Korthikanti et al. ran Megatron-LM
	for _, c := range []struct {
		strategy string
		fwd, bwd float64
		stated   float64 // signed error, percent
	}{
		{"", 7.7, 11.9, 5.7},                    // baseline, no recompute
		{"sp=on", 7.2, 11.8, 4.3},               // sequence parallelism
		{"recompute=full", 7.7, 19.5, 5.2},      // full recompute
		{"recompute=selective", 7.7, 13.2, 3.8}, // selective recompute
		{"sp=on,recompute=selective", 7.2, 13.1, 2.5},
	} {
		s := "tp=8,mbs=4,gbs=4," + megatron2022
		if c.strategy != "" {
			s += "," + c.strategy
		}
		p, err := program.Lower(m, mustParse(t, s))
		if err != nil {
			t.Fatal(err)
		}
		co, err := NewCoster(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		layer := func(ops []program.Op) float64 {
			var sum units.Seconds
			for i := range ops {
				op := &ops[i]
				if !strings.HasPrefix(op.Module, "layers.1.") && op.Module != "layers.1" {
					continue
				}
				if op.Kind.IsComm() {
					d := co.Comm(op)
					sum += d - co.Hidden(ops, i, d)
				} else {
					sum += co.Compute(op)
				}
			}
			return 1e3 * float64(sum)
		}
		st := p.Stages[0]
		fwd, bwd := layer(st.Forward), layer(st.Backward)
		total, want := fwd+bwd, c.fwd+c.bwd
		t.Logf("%-28s forward %.2f ms (paper %.1f), backward %.2f ms (paper %.1f), total %+.1f%%", s, fwd, c.fwd, bwd, c.bwd, 100*(total/want-1))
		if fwd == 0 || bwd == 0 {
			t.Fatalf("%s: found no ops of layer 1", s)
		}
		e := 100 * (total/want - 1)
		if math.Abs(e-c.stated) > 0.05+1e-9 {
			t.Errorf("%s: one layer takes %.2f ms forward + backward, Korthikanti et al. measured %.1f ms: %+.2f%%, stated %+.1f%% (restate it here and in the README, saying why)", s, total, want, e, c.stated)
		}
		if math.Abs(e) > 10 {
			t.Errorf("%s: %+.1f%% off Korthikanti et al.'s Table 4, beyond issue 12's 10%% per row", s, e)
		}
	}
}

// Table 5: end-to-end iteration time in seconds for full recompute and for sequence parallel with
// selective recompute (Table 3's configurations; interleaved with 3 chunks for 175B and 530B),
// priced through the Program and the Coster with the a100-80g preset as tpsim fit calibrated it on
// the training split, which does not hold these rows: its GEMMs at Megatron-LM's fitted fraction
// (0.756 of the matmul sweep's ceiling), the backward's tensor-parallel collectives under
// its products as the Megatron-LM of 2022 runs them (tpoverlap=on), its bias-dropout-add fusion
// (fusion=on). Pipeline sends with tensor parallelism and without sequence parallelism carry 1/t
// of the activation and all-gather it over NVLink (Megatron-LM's scatter/gather,
// PipelineSendTime). The backward's collectives under the products slow them (the preset's
// overlap_compute_slowdown, TestTPOverlapHidesUnderTheProducts).
// Measured: full recompute +1.0%, +5.0%, +11.1%, +14.1%; sequence parallel with selective
// recompute -3.7%, +2.0%, +7.3%, +13.2%; mean 7.2%, max 14.1% (go test ./costmodel -run
// KorthikantiIteration -v); 6.8% and 13.7% before the overlap slowdown.
// Issue 12's targets, mean at most 5% and max at most 10%, are not met, and the training split
// says why: the Megatron-LM README of January 2021 ran the same 1T model on the same mesh and
// schedule (tp 8, pp 64, 1F1B, 512 microbatches of 1 per pipeline; dp 6 where Korthikanti et al.
// ran dp 1) at 154 TFLOP/s per GPU, 108.6 s per iteration, which tpsim predicts within 1.3%;
// Korthikanti et al.'s Megatron-LM of 2022 ran it in 94.4 s, 13% faster. A fraction fitted on
// the 2020-2021 runs, the only Megatron-LM A100 runs in the training split, cannot price the
// 2022 code's speed-up, and fitting it on these rows would break the protocol. What is asserted:
// each row's signed error, and the mean and max, are the figures stated above and in the README
// (its accuracy section and acceptance table), to the 0.1 point they are stated to
// (|error - stated| <= 0.05 point): a change that moves one must restate it, and say why. Issue
// 12's targets are logged, not asserted, as the README reports them unmet.
func TestKorthikantiIterationTimes(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	hw.Efficiency = hw.Efficiency.ForStack("megatron-lm") // Korthikanti et al. ran Megatron-LM
	var sum, worst float64
	n := 0
	for _, c := range []struct {
		model, mesh          string
		full, selectiveSP    float64
		statedFull, statedSP float64 // signed errors, percent
	}{
		{"megatron-22b", "tp=8,mbs=4,gbs=4", 1.42, 1.10, 1.0, -3.7},
		{"gpt3-175b", "tp=8,pp=8,schedule=interleaved,vpp=3,mbs=1,gbs=64", 18.13, 13.75, 5.0, 2.0},
		{"megatron-530b", "tp=8,pp=35,schedule=interleaved,vpp=3,mbs=1,gbs=280", 49.05, 37.83, 11.1, 7.3},
		{"megatron-1t", "tp=8,pp=64,mbs=1,gbs=512", 94.42, 71.49, 14.1, 13.2},
	} {
		m := mustPreset(t, c.model)
		for _, k := range []struct {
			knobs  string
			want   float64
			stated float64
		}{{"recompute=full", c.full, c.statedFull}, {"recompute=selective,sp=on", c.selectiveSP, c.statedSP}} {
			p, err := program.Lower(m, mustParse(t, c.mesh+","+megatron2022+","+k.knobs))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Predict(p, hw)
			if err != nil {
				t.Fatal(err)
			}
			got := float64(r.Time.Step)
			e := math.Abs(got/k.want - 1)
			sum, worst, n = sum+e, math.Max(worst, e), n+1
			t.Logf("%-14s %-26s %.2f s, paper %.2f s (%+.1f%%)", c.model, k.knobs, got, k.want, 100*(got/k.want-1))
			if d := 100*(got/k.want-1) - k.stated; math.Abs(d) > 0.05+1e-9 {
				t.Errorf("%s %s: %.2f s per iteration, Korthikanti et al. measured %.2f s: %+.2f%%, stated %+.1f%% (restate it here and in the README, saying why)", c.model, k.knobs, got, k.want, 100*(got/k.want-1), k.stated)
			}
		}
	}
	t.Logf("Table 5: mean error %.1f%%, max %.1f%%", 100*sum/float64(n), 100*worst)
	if mean := 100 * sum / float64(n); math.Abs(mean-7.2) > 0.05+1e-9 || math.Abs(100*worst-14.1) > 0.05+1e-9 {
		t.Errorf("Table 5: mean error %.2f%%, max %.2f%%; the README states 7.2%% and 14.1%%", mean, 100*worst)
	}
	if sum/float64(n) > 0.05 || worst > 0.10 {
		t.Logf("issue 12's targets, mean at most 5%% and max at most 10%%, are not met (the README says why)")
	}
}

// With tpoverlap=on the backward's tensor-parallel collectives that Megatron-LM runs under a
// column-parallel linear's products leave the critical path by min(collective, product): the
// input gradient's all-reduce (reduce-scatter under sp) under the weight-gradient half of the
// linear just before it, sp's re-gather of the input under the input-gradient half of the linear
// just after it, nothing else; what hides slows the product by 1/(1+σ) (the preset's
// overlap_compute_slowdown, arXiv:2507.03114), so a span h under it hides h/(1+σ). Checked op by
// op against that rule written out here, and on the step: Predict's step falls by exactly the
// hidden time of every microbatch (no pipeline, so the step is the ops one after the other).
func TestTPOverlapHidesUnderTheProducts(t *testing.T) {
	m := mustPreset(t, "megatron-22b")
	hw := loadHW(t, "a100-80g")
	slow := units.Seconds(1 + hw.Efficiency.OverlapSlowdown)
	if slow == 1 {
		t.Fatal("the a100-80g preset has no overlap slowdown; the test checks it")
	}
	for _, knobs := range []string{"tp=8,mbs=1,gbs=4", "tp=8,mbs=1,gbs=4,sp=on", "tp=8,mbs=2,gbs=4,sp=on,recompute=selective"} {
		off, err := program.Lower(m, mustParse(t, knobs))
		if err != nil {
			t.Fatal(err)
		}
		on, err := program.Lower(m, mustParse(t, knobs+",tpoverlap=on"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCoster(on, hw)
		if err != nil {
			t.Fatal(err)
		}
		var hidden units.Seconds
		kinds := map[program.OpKind]int{}
		for _, s := range on.Stages {
			for _, ph := range [][]program.Op{s.Forward, s.Backward} {
				for i := range ph {
					op := &ph[i]
					if !op.Kind.IsComm() {
						continue
					}
					d := c.Comm(op)
					h := c.Hidden(ph, i, d)
					var want units.Seconds
					if op.Phase == program.Backward && op.Dim == strategies.DimTP {
						switch {
						case (op.Kind == program.OpAllReduce || op.Kind == program.OpReduceScatter) && i > 0 &&
							ph[i-1].Kind == program.OpLinear && ph[i-1].GradInput && ph[i-1].Out[0] == op.In[0]:
							want = min(d, c.Compute(&ph[i-1])/2) / slow
						case op.Kind == program.OpAllGather && i+1 < len(ph) && ph[i+1].Kind == program.OpLinear &&
							ph[i+1].GradInput && slices.Contains(ph[i+1].Saved, op.Out[0]):
							want = min(d, c.Compute(&ph[i+1])/2) / slow
						}
					}
					if h != want {
						t.Errorf("%s: %s %s %s: hidden %v, want %v", knobs, op.Phase, op.Kind, op.Module, h, want)
					}
					if h > 0 {
						kinds[op.Kind]++
					}
					hidden += h
				}
			}
		}
		if kinds[program.OpAllReduce]+kinds[program.OpReduceScatter] == 0 || strings.Contains(knobs, "sp=on") && kinds[program.OpAllGather] == 0 {
			t.Errorf("%s: hidden collectives %v: want the input gradients' (and under sp the re-gathers)", knobs, kinds)
		}
		ro, err := Predict(off, hw)
		if err != nil {
			t.Fatal(err)
		}
		rn, err := Predict(on, hw)
		if err != nil {
			t.Fatal(err)
		}
		got := ro.Time.Step - rn.Time.Step
		want := units.Seconds(on.Microbatches) * hidden
		if math.Abs(float64(got-want)) > 1e-9*float64(ro.Time.Step) {
			t.Errorf("%s: tpoverlap=on saves %v per step, want %d microbatches x %v = %v", knobs, got, on.Microbatches, hidden, want)
		}
		t.Logf("%-44s step %v -> %v (hidden %v per microbatch; %v)", knobs, ro.Time.Step, rn.Time.Step, hidden, kinds)
	}
}

// With tpoverlap=full (Transformer Engine's userbuffers, torchtitan's AsyncTP) sequence
// parallel's collectives run in tp chunks under the products beside them, up to (t-1)/t of the
// products' time. On the 22B model at tp 8 (hidden h = 6144, sequence 2048, one sample) each
// forward all-gather and reduce-scatter moves 25 MB, against products of 3h²/t (qkv), h²/t (the
// attention's projection), 4h²/t (each MLP linear) multiply-adds per token: the gathers before
// qkv and the first MLP linear and the reduce-scatter after the second hide wholly, the
// projection's reduce-scatter only 7/8 of its product (its 127 us against a 106 us product),
// and the gather before the output head wholly: 3 x 48 + 1 = 145 hidden whole, 48 in part; the
// embedding's reduce-scatter and the loss's gather have no product beside them and stay. In
// backward the output gradients' all-gathers before the projection's and the second MLP
// linear's backward (2 per layer) hide under 7/8 of their input-gradient halves; the other
// backward collectives keep tpoverlap=on's rules. The step falls by exactly the microbatches
// times what full hides beyond on. Under ZeRO-3 the parameters' gathers sit between a collective
// and its product, on their own link: the same collectives hide (the step, bound there by the
// gathers' link, is not checked). The rules are checked without the overlap slowdown, which
// divides every hidden time alike (TestTPOverlapHidesUnderTheProducts).
func TestTPOverlapFullHidesSequenceParallel(t *testing.T) {
	m := mustPreset(t, "megatron-22b")
	hw := loadHW(t, "a100-80g")
	hw.Efficiency.OverlapSlowdown = 0
	for _, knobs := range []string{"tp=8,mbs=1,gbs=4,sp=on", "dp=2,tp=8,mbs=1,gbs=4,sp=on,zero=3"} {
		testTPOverlapFull(t, m, hw, knobs)
	}
}

func testTPOverlapFull(t *testing.T, m *model.Model, hw *hardware.Hardware, knobs string) {
	lower := func(o string) (*program.Program, *Coster) {
		p, err := program.Lower(m, mustParse(t, knobs+",tpoverlap="+o))
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCoster(p, hw)
		if err != nil {
			t.Fatal(err)
		}
		return p, c
	}
	on, con := lower("on")
	full, cfull := lower("full")
	var whole, part, exposed, bwdGathers int
	var extra units.Seconds
	for si, s := range full.Stages {
		for ph, ops := range [][]program.Op{s.Forward, s.Backward} {
			onOps := [][]program.Op{on.Stages[si].Forward, on.Stages[si].Backward}[ph]
			for i := range ops {
				op := &ops[i]
				if !op.Kind.IsComm() || op.Dim != strategies.DimTP {
					continue
				}
				d := cfull.Comm(op)
				h := cfull.Hidden(ops, i, d)
				extra += h - con.Hidden(onOps, i, con.Comm(&onOps[i]))
				switch {
				case op.Phase == program.Forward && (op.Kind == program.OpAllGather || op.Kind == program.OpReduceScatter):
					switch {
					case h == d:
						whole++
					case h > 0 && strings.HasSuffix(op.Module, "attn.proj") && h == cfull.Compute(&ops[i-1])*7/8:
						part++
					case h == 0 && (op.Module == "embed" || op.Module == "loss"):
						exposed++
					default:
						t.Errorf("forward %s %s: hidden %v of %v", op.Kind, op.Module, h, d)
					}
				case op.Phase == program.Backward && !op.Recompute && op.Kind == program.OpAllGather:
					next := i + 1 // the op after it, past ZeRO-3's gathers of the next op's parameters
					for next < len(ops) && ops[next].Dim == strategies.DimDP {
						next++
					}
					if next == len(ops) || ops[next].Kind != program.OpLinear || !ops[next].GradInput || ops[next].In[0] != op.Out[0] {
						break
					}
					if want := min(d, cfull.Compute(&ops[next])/2*7/8); h != want {
						t.Errorf("%s: backward gradient gather %s: hidden %v, want min(%v, 7/8 of half of %v) = %v", knobs, op.Module, h, d, cfull.Compute(&ops[next]), want)
					}
					bwdGathers++
				}
			}
		}
	}
	if layers := m.Transformer.Layers; whole != 3*layers+1 || part != layers || exposed != 2 || bwdGathers != 2*layers {
		t.Errorf("%s: forward collectives hidden whole %d, in part %d, exposed %d, want %d, %d and 2; backward gradient gathers %d, want %d",
			knobs, whole, part, exposed, 3*layers+1, layers, bwdGathers, 2*layers)
	}
	if strings.Contains(knobs, "zero=3") {
		// The step there is ZeRO-3's gathers on the data-parallel link, which the hidden
		// tensor-parallel time does not shorten.
		return
	}
	ro, err := Predict(on, hw)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := Predict(full, hw)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ro.Time.Step-rf.Time.Step, units.Seconds(full.Microbatches)*extra; extra <= 0 || math.Abs(float64(got-want)) > 1e-9*float64(ro.Time.Step) {
		t.Errorf("%s: tpoverlap=full saves %v per step against on, want %d microbatches x %v = %v", knobs, got, full.Microbatches, extra, want)
	}
	t.Logf("%s: step %v (on) -> %v (full)", knobs, ro.Time.Step, rf.Time.Step)
}
