package costmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// Korthikanti et al. 2022 measured Megatron-LM on Selene's A100s (the a100-80g preset's system)
// without data parallelism. Nothing in the preset was fitted to these numbers (and they are not
// in the training split, validate/data/runs.json and runs_h100.json, that tpsim fit calibrates the
// preset on), so they check the model from outside; the tolerances say how
// well it does, and a change that makes it worse fails here.

// Table 4: forward and backward time of one transformer layer of the 22B model (h 6144, 64 heads,
// tp 8, microbatch 4, sequence 2048), in ms. tpsim's layer is the ops of one layer of the
// Program, compute and tensor-parallel communication one after the other, with the a100-80g
// preset's GEMMs at the achieved fraction tpsim fit found for Megatron-LM on the training split
// (0.786 of the matmul sweep's ceiling). Measured: +14.0% without recompute, +9.4% with sequence
// parallelism, +12.3% full, +8.0% selective, +3.6% sequence parallel with selective: the
// Megatron-LM of 2022 runs its GEMMs faster than its 2020-2021 runs of the training split (at the
// sweep's ceiling the same rows were -1% to -11%), and overlaps the backward's tensor-parallel
// all-reduce with the weight gradient's product, which tpsim puts on the critical path. Each
// tolerance sits just above its error.
func TestKorthikantiLayerTimes(t *testing.T) {
	m := mustPreset(t, "megatron-22b")
	hw := loadHW(t, "a100-80g")
	hw.Efficiency = hw.Efficiency.ForStack("megatron-lm") // Korthikanti et al. ran Megatron-LM
	for _, c := range []struct {
		strategy string
		fwd, bwd float64
		tol      float64
	}{
		{"", 7.7, 11.9, 0.19},                    // baseline, no recompute
		{"sp=on", 7.2, 11.8, 0.145},              // sequence parallelism
		{"recompute=full", 7.7, 19.5, 0.17},      // full recompute
		{"recompute=selective", 7.7, 13.2, 0.13}, // selective recompute
		{"sp=on,recompute=selective", 7.2, 13.1, 0.085},
	} {
		s := "tp=8,mbs=4,gbs=4"
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
					sum += co.Comm(op)
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
		if e := math.Abs(total/want - 1); e > c.tol {
			t.Errorf("%s: one layer takes %.2f ms forward + backward, Korthikanti et al. measured %.1f ms (%.1f%% off, tolerance %.1f%%)", s, total, want, 100*e, 100*c.tol)
		}
	}
}

// Table 5: end-to-end iteration time in seconds for full recompute and for sequence parallel with
// selective recompute (Table 3's configurations; interleaved with 3 chunks for 175B and 530B),
// priced through the Program and the Coster with the a100-80g preset as tpsim fit calibrated it on
// the training split, which does not hold these rows: its GEMMs at Megatron-LM's fitted fraction
// (0.780 of the matmul sweep's ceiling). Pipeline sends with tensor parallelism and without
// sequence parallelism carry 1/t of the activation and all-gather it over NVLink (Megatron-LM's
// scatter/gather, PipelineSendTime), which took the full-recompute rows of 530B and 1T from +17.7%
// and +14.0% to +9.6% and +11.7% at the old fraction; the refit on the training split (whose
// Narayanan et al. rows got the same speed-up) lowered the fraction from 0.804 to 0.786, and a
// later refit of the same code (the presets had drifted from it) to 0.780.
// Measured: full recompute +8.0%, +8.6%, +12.4%, +14.6%; sequence parallel with selective
// recompute -2.2%, +2.7%, +6.9%, +12.3%; mean 8.5%, max 14.6% (go test ./costmodel -run
// KorthikantiIteration -v; 7.9%, 13.9% at 0.786; 8.1%, 17.7% before the scatter/gather). Issue
// 12's targets, mean at most 5% and max at most 10%, are not met: Megatron-LM's 2020-2021 runs in
// the training split reach 0.780 of the
// ceiling, Korthikanti et al.'s 2022 Megatron-LM about the ceiling itself (before the fit these
// rows were -0% to -16%) and overlaps its backward tensor-parallel all-reduces, and at 64 stages
// of 2 layers the published step is about m times one stage, where tpsim adds the 1F1B bubble of
// (p-1) stages. Each tolerance sits just above its row's error, the mean and max bands above
// theirs.
func TestKorthikantiIterationTimes(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	hw.Efficiency = hw.Efficiency.ForStack("megatron-lm") // Korthikanti et al. ran Megatron-LM
	var sum, worst float64
	n := 0
	for _, c := range []struct {
		model, mesh       string
		full, selectiveSP float64
		tolFull, tolSP    float64
	}{
		{"megatron-22b", "tp=8,mbs=4,gbs=4", 1.42, 1.10, 0.085, 0.035},
		{"gpt3-175b", "tp=8,pp=8,schedule=interleaved,vpp=3,mbs=1,gbs=64", 18.13, 13.75, 0.09, 0.03},
		{"megatron-530b", "tp=8,pp=35,schedule=interleaved,vpp=3,mbs=1,gbs=280", 49.05, 37.83, 0.125, 0.07},
		{"megatron-1t", "tp=8,pp=64,mbs=1,gbs=512", 94.42, 71.49, 0.15, 0.125},
	} {
		m := mustPreset(t, c.model)
		for _, k := range []struct {
			knobs string
			want  float64
			tol   float64
		}{{"recompute=full", c.full, c.tolFull}, {"recompute=selective,sp=on", c.selectiveSP, c.tolSP}} {
			p, err := program.Lower(m, mustParse(t, c.mesh+","+k.knobs))
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
			if e > k.tol {
				t.Errorf("%s %s: %.2f s per iteration, Korthikanti et al. measured %.2f s (%.1f%% off, tolerance %.1f%%)", c.model, k.knobs, got, k.want, 100*e, 100*k.tol)
			}
		}
	}
	t.Logf("Table 5: mean error %.1f%%, max %.1f%%", 100*sum/float64(n), 100*worst)
	if sum/float64(n) > 0.09 || worst > 0.15 {
		t.Errorf("Table 5: mean error %.1f%%, max %.1f%%; measured 8.5%% and 14.6%% (issue 12's targets are 5%% and 10%%)", 100*sum/float64(n), 100*worst)
	}
}
