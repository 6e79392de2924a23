package costmodel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// A Program's price is affine in the layers of each pipeline stage: Derived prices a stage of n
// layers from stages of one and two and extrapolates, and that equals Predict of the whole
// Program lowered layer by layer, to 1e-9 relative (memory to the byte), for every strategy
// family and for several layer counts (so stages of 1, 2, 3 and more layers, even and uneven).
// Where the price is not affine the test checks that Derived handles it: DDP's gradient buckets
// span layers on these small models (a layer's gradients are a fraction of a bucket, so which
// layer closes a bucket is periodic, not affine, in the layers: program.OptimizerPhase walks
// them), a single tensor may fill a bucket (the layers' buckets then repeat from the first
// layer on), the maxima of memory (workspace, ZeRO-3's gather buffers) are constant from two
// layers on, and models too short to shorten are lowered whole.
func TestDerivedAffineInLayers(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	families := []string{
		"dp=4", "dp=4,overlap=off", "dp=2,zero=1", "dp=4,zero=2", "dp=4,zero=3", "dp=2,zero=3,overlap=off,recompute=full",
		"tp=2", "tp=2,sp=on", "tp=2,sp=on,recompute=selective", "tp=2,recompute=full", "cp=2", "cp=2,tp=2,sp=on,dp=2,zero=1",
		"pp=2,gbs=16", "pp=3,gbs=12,schedule=gpipe", "pp=4,dp=2,gbs=16", "pp=2,vpp=2,schedule=interleaved,gbs=16",
		"pp=2,vpp=3,schedule=interleaved,gbs=12,tp=2,sp=on", "pp=3,dp=2,zero=1,recompute=selective,gbs=12",
		"pp=2,dp=2,zero=3,recompute=full,gbs=8", "pp=3,cp=2,tp=2,sp=on,recompute=full,gbs=12",
		// The stack's options, through the same Derived as the strategies without them.
		"tp=2,fusion=on", "tp=2,sp=on,tpoverlap=on", "tp=2,sp=on,tpoverlap=full", "dp=4,zero=3,overlap=off,tensorlists=on", "tp=2,compile=on", "pp=2,gbs=16,compile=on",
		"tp=2,kernels=eager", "pp=2,gbs=16,kernels=eager,recompute=full",
	}
	// Bucket sizes: a layer's gradients (about 100 KiB here, its largest tensor 32 KiB) fill
	// several buckets of 16 KiB, span buckets of 200 KiB, share one of 1 MiB with other layers,
	// and the default 25 MiB holds the whole model.
	buckets := []int64{strategies.DefaultBucketBytes, 16 << 10, 200 << 10, 1 << 20}
	cfgs := []struct {
		name string
		c    model.Transformer
	}{
		{"gpt", model.Transformer{Hidden: 64, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Bias: true, Learned: true, Batch: 16}},
		{"llama-tied", model.Transformer{Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32, Gated: true, RMSNorm: true, Tied: true, Batch: 16}},
	}
	spanned, checked := 0, 0
	for _, cfg := range cfgs {
		for _, layers := range []int{4, 5, 6, 9} {
			c := cfg.c
			c.Layers = layers
			m, err := c.Build(fmt.Sprintf("%s-%d", cfg.name, layers), "gpt")
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewDerived(m, hw)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range families {
				for _, b := range buckets {
					st := mustParse(t, f)
					st.BucketBytes = b
					name := fmt.Sprintf("%s %s bucket %d", m.Name, f, b)
					p, lerr := program.Lower(m, st)
					got, err := d.Estimate(st)
					if lerr != nil {
						if err == nil || err.Error() != lerr.Error() {
							t.Errorf("%s: Derived error %v, Lower says %v", name, err, lerr)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					want, err := Predict(p, hw)
					if err != nil {
						t.Fatal(err)
					}
					equalResults(t, name, got, want, 1e-9)
					checked++
					if spansLayers(p) {
						spanned++
					}
				}
			}
		}
	}
	if spanned == 0 {
		t.Error("no gradient bucket spans layers: the non-affine case is not exercised")
	}
	t.Logf("%d strategies x layer counts equal to Predict, %d with buckets that span layers", checked, spanned)
}

// spansLayers reports whether some data-parallel gradient bucket of p holds gradients of two
// transformer layers.
func spansLayers(p *program.Program) bool {
	for _, s := range p.Stages {
		for _, op := range s.Optimizer {
			if op.Dim != strategies.DimDP || op.Kind == program.OpAllGather {
				continue
			}
			seen := ""
			for _, q := range op.Params {
				if !strings.HasPrefix(q, "layers.") {
					continue
				}
				l := strings.SplitN(q, ".", 3)[1]
				if seen != "" && l != seen {
					return true
				}
				seen = l
			}
		}
	}
	return false
}
