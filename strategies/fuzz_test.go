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
