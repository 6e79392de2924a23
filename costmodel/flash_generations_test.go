package costmodel

import (
	"fmt"
	"math"
	"testing"

	"github.com/tpsim/tpsim/model"
)

// Dao 2023 (FlashAttention-2, arXiv:2307.08691) Table 1 trained GPT-style models on 8 A100 80GB
// with FlashAttention and with FlashAttention-2. The a100-80g preset's two attention fractions
// come from that paper's kernel benchmarks (§1, §4.1), not from this table, and the table is not in
// the training split (validate/data), so the end-to-end speedup of the second generation over the first
// checks attn=flash against attn=flash1 from outside. The paper gives neither the microbatch nor
// the data-parallel setup; tpsim prices plain data parallelism with ZeRO-1 and 16k tokens per
// microbatch (the paper's kernel benchmarks' batch), and the speedup barely depends on them.
// Measured: within -5.3% to +3.8% of the paper's speedups with the fitted presets (go test
// ./costmodel -run FlashGenerations -v); the tolerance sits just above, at 6%. The absolute TFLOP/s are logged, not checked: tpsim's stack is faster
// than the paper's, as on the MosaicML rows of tpsim validate.
func TestFlashGenerationsSpeedup(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	for _, c := range []struct {
		name                   string
		hidden, layers, heads  int
		seq                    int
		flash1, flash2, margin float64 // TFLOP/s per GPU (Table 1); tolerance on the ratio
	}{
		// GPT-3 1.3B and 2.7B shapes (Brown et al. 2020 Table 2.1) with 128-dimensional heads.
		{"GPT3-1.3B 2k", 2048, 24, 16, 2048, 189, 196, 0.06},
		{"GPT3-1.3B 8k", 2048, 24, 16, 8192, 170, 220, 0.06},
		{"GPT3-2.7B 2k", 2560, 32, 20, 2048, 189, 205, 0.06},
		{"GPT3-2.7B 8k", 2560, 32, 20, 8192, 175, 225, 0.06},
	} {
		tr := model.Transformer{Hidden: c.hidden, Layers: c.layers, Heads: c.heads, KVHeads: c.heads, HeadDim: c.hidden / c.heads,
			FFN: 4 * c.hidden, Vocab: 50257, Seq: c.seq, Batch: 8 * 16384 / c.seq, Bias: true, Learned: true, Tied: true}
		m, err := tr.Build(c.name, "gpt")
		if err != nil {
			t.Fatal(err)
		}
		step, tflops := map[string]float64{}, map[string]float64{}
		for _, attn := range []string{"flash1", "flash"} {
			r, err := Estimate(m, mustParse(t, fmt.Sprintf("dp=8,zero=1,mbs=%d,attn=%s", 16384/c.seq, attn)), hw)
			if err != nil {
				t.Fatal(err)
			}
			step[attn] = float64(r.Time.Step)
			tflops[attn] = float64(r.FLOPs.Model) / float64(r.Time.Step) / 8 / 1e12
		}
		got, want := step["flash1"]/step["flash"], c.flash2/c.flash1
		t.Logf("%-14s FlashAttention-2 speedup over FlashAttention %.3f, paper %.3f (%+.1f%%); model TFLOP/s per GPU %.0f and %.0f, paper %.0f and %.0f",
			c.name, got, want, 100*(got/want-1), tflops["flash1"], tflops["flash"], c.flash1, c.flash2)
		if math.Abs(got/want-1) > c.margin {
			t.Errorf("%s: tpsim prices FlashAttention-2 %.3fx faster end to end than FlashAttention, Dao 2023 measured %.3fx (tolerance %.0f%%)", c.name, got, want, 100*c.margin)
		}
	}
}
