package strategies

import (
	"testing"

	"github.com/tpsim/tpsim/model"
)

// A model without a sequence (an MLP) resolves to seq=0, and what String and Short print of it
// must parse back to the same strategy (plan's rows paste into predict).
func TestMLPStrategyRoundTrip(t *testing.T) {
	m, err := model.Load("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Parse("tp=2,mbs=10")
	if err != nil {
		t.Fatal(err)
	}
	st = st.Resolve(m)
	if st.Seq != 0 {
		t.Fatalf("seed-mlp resolved to seq=%d, want 0", st.Seq)
	}
	for _, s := range []string{st.String(), st.Short()} {
		back, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if back.Resolve(m) != st {
			t.Errorf("Parse(%q) = %+v, want %+v", s, back.Resolve(m), st)
		}
	}
	if _, err := Parse("seq=-1"); err == nil {
		t.Error("seq=-1 parsed; want an error")
	}
}
