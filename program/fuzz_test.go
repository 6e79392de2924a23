package program

import (
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// FuzzParseLower: a strategy Parse accepts either lowers or is refused with an error, never a panic.
func FuzzParseLower(f *testing.F) {
	for _, s := range []string{"dp=24,tp=8,pp=8,mbs=1,gbs=2304,recompute=full,sp=off,zero=0", "zero=4", "recompute=some", "sp=maybe",
		"schedule=interleaved,vpp=2,pp=2", "bucket_mb=0", "foo=1", "mbs=-1", ",,,", "dp=2,tp=2,gbs=8,mbs=2",
		"tp=2,attn=flash,recompute=full", "attn=fast", "cp=2,attn=flash1,recompute=selective", "dp=2,tp=2,cp=2,sp=on,attn=flash,zero=3,gbs=8"} {
		f.Add(s)
	}
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32, Batch: 8}.Build("fuzz", "llama")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := strategies.Parse(s)
		if err != nil {
			return
		}
		if st.Mesh.Devices() > 64 || st.GBS > 4096 || st.MBS > 64 || st.Seq > 4096 || st.VPP > 8 {
			return // keep lowering cheap; sizes are checked by Validate tests
		}
		// A parsed strategy either lowers or is refused with an error, never a panic.
		_, _ = Lower(m, st)
	})
}
