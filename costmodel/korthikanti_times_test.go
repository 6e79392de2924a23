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
// in shared/validation/runs.json), so they check the model from outside; the tolerances say how
// well it does, and a change that makes it worse fails here.

// Table 4: forward and backward time of one transformer layer of the 22B model (h 6144, 64 heads,
// tp 8, microbatch 4, sequence 2048), in ms. tpsim's layer is the ops of one layer of the
// Program, compute and tensor-parallel communication one after the other. Measured: -2% without
// recompute, -3% full, -7% selective, -8% and -13% with sequence parallelism, which tpsim prices
// as fast as the all-reduce it replaces while the paper (§6.2) found reduce-scatter plus
// all-gather slower than one all-reduce.
func TestKorthikantiLayerTimes(t *testing.T) {
	m := mustPreset(t, "megatron-22b")
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		strategy string
		fwd, bwd float64
	}{
		{"", 7.7, 11.9},                    // baseline, no recompute
		{"sp=on", 7.2, 11.8},               // sequence parallelism
		{"recompute=full", 7.7, 19.5},      // full recompute
		{"recompute=selective", 7.7, 13.2}, // selective recompute
		{"sp=on,recompute=selective", 7.2, 13.1},
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
		if e := math.Abs(total/want - 1); e > 0.15 {
			t.Errorf("%s: one layer takes %.2f ms forward + backward, Korthikanti et al. measured %.1f ms (%.0f%% off, tolerance 15%%)", s, total, want, 100*e)
		}
	}
}

// Table 5: end-to-end iteration time in seconds for full recompute and for sequence parallel with
// selective recompute (Table 3's configurations; interleaved with 3 chunks for 175B and 530B).
// Measured: full recompute -7.7% to -0.5%, sequence parallel with selective recompute -10% to -17%
// (the layer times above say where: the sequence-parallel collectives).
func TestKorthikantiIterationTimes(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		model, mesh       string
		full, selectiveSP float64
	}{
		{"megatron-22b", "tp=8,mbs=4,gbs=4", 1.42, 1.10},
		{"gpt3-175b", "tp=8,pp=8,schedule=interleaved,vpp=3,mbs=1,gbs=64", 18.13, 13.75},
		{"megatron-530b", "tp=8,pp=35,schedule=interleaved,vpp=3,mbs=1,gbs=280", 49.05, 37.83},
		{"megatron-1t", "tp=8,pp=64,mbs=1,gbs=512", 94.42, 71.49},
	} {
		m := mustPreset(t, c.model)
		for _, k := range []struct {
			knobs string
			want  float64
			tol   float64
		}{{"recompute=full", c.full, 0.10}, {"recompute=selective,sp=on", c.selectiveSP, 0.20}} {
			st := mustParse(t, c.mesh+","+k.knobs)
			r, err := Estimate(m, st, hw)
			if err != nil {
				t.Fatal(err)
			}
			got := float64(r.Time.Step)
			t.Logf("%-14s %-26s %.2f s, paper %.2f s (%+.1f%%)", c.model, k.knobs, got, k.want, 100*(got/k.want-1))
			if e := math.Abs(got/k.want - 1); e > k.tol {
				t.Errorf("%s %s: %.2f s per iteration, Korthikanti et al. measured %.2f s (%.0f%% off, tolerance %.0f%%)", c.model, k.knobs, got, k.want, 100*e, 100*k.tol)
			}
		}
	}
}
