package strategies

import (
	"testing"

	"github.com/tpsim/tpsim/model"
)

// The parsers must never panic: every input is either parsed or refused with an error. The seed
// corpora run as ordinary tests.

func FuzzParseMesh(f *testing.F) {
	for _, s := range []string{"dp=2,tp=4,pp=2", "cp=2", "tp=0", "dp=2,dp=2", "x=1", "dp=", "=", "", "dp=99999999999999999999", " tp = 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMesh(s)
		if err == nil && (m.PP < 1 || m.DP < 1 || m.CP < 1 || m.TP < 1) {
			t.Fatalf("ParseMesh(%q) = %+v without error", s, m)
		}
	})
}

func FuzzParse(f *testing.F) {
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
		st, err := Parse(s)
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

func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{"colwise", "megatron", "0=colwise,2=rowwise", "layers.*.mlp.fc1=colwise", "0=", "=rowwise", "a=b", "ColwiseParallel", ""} {
		f.Add(s)
	}
	m, err := model.MLP("seed-mlp", model.KindReLU, 10, 100, 1000, 10)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 5 && s[len(s)-5:] == ".json" {
			return // a file path: ParsePlanJSON is fuzzed on contents
		}
		p, err := ParsePlan(s)
		if err != nil {
			return
		}
		_, _ = p.Resolve(m, false)
	})
}

func FuzzParsePlanJSON(f *testing.F) {
	for _, s := range []string{`{"0": "colwise", "2": "rowwise"}`, `{"layers.*.attn.qkv": "colwise"}`, `[]`, `{"0": 1}`, `{"0": "colwise"`, `{}`, `null`, `{"a":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlanJSON(data)
		if err == nil && len(p.Rules) == 0 {
			t.Fatalf("ParsePlanJSON(%q) gave an empty plan without error", data)
		}
	})
}
