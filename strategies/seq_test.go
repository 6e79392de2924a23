package strategies

import (
	"strings"
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

// prefetch counts ZeRO-3 units: 1 by default (FSDP's), printed by Short only when it differs,
// parsed back from String and Short, and refused below 1 with the fix.
func TestPrefetchRoundTrip(t *testing.T) {
	m, err := model.Load("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec  string
		want  int
		short bool
	}{{"dp=8,zero=3", 1, false}, {"dp=8,zero=3,prefetch=2", 2, true}} {
		st, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		st = st.Resolve(m)
		if st.Prefetch != c.want || strings.Contains(st.Short(), "prefetch=") != c.short {
			t.Errorf("%s: prefetch %d, Short %q; want %d, printed %v", c.spec, st.Prefetch, st.Short(), c.want, c.short)
		}
		for _, s := range []string{st.String(), st.Short()} {
			back, err := Parse(s)
			if err != nil || back.Resolve(m) != st {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", s, back, err, st)
			}
		}
	}
	if _, err := Parse("dp=8,zero=3,prefetch=0"); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("prefetch=0: %v, want an error that asks for a positive count", err)
	}
	st := Default(Mesh{1, 8, 1, 1})
	st.GBS, st.ZeRO, st.Prefetch = 8, 3, 0
	if err := st.Validate(m); err == nil || !strings.Contains(err.Error(), "prefetch=1") {
		t.Errorf("Validate with prefetch 0: %v, want an error naming prefetch=1", err)
	}
}

// The options of the user's software stack (never searched, printed by Short when they differ
// from the default, so that a plan's strategy pastes back): each parses back from String and
// Short to the same strategy (prefetch: TestPrefetchRoundTrip).
func TestStackOptionsRoundTrip(t *testing.T) {
	m, err := model.Load("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, key string }{
		{"tp=2,tpoverlap=on", "tpoverlap=on"},
		{"dp=8,zero=3,overlap=off,tensorlists=on", "tensorlists=on"},
		{"tp=2,fusion=on", "fusion=on"},
		{"dp=2,compile=on", "compile=on"},
		{"dp=2,kernels=eager", "kernels=eager"},
		{"tp=2,sp=on,tpoverlap=full", "tpoverlap=full"},
	} {
		st, err := Parse(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		st = st.Resolve(m)
		if !strings.Contains(st.Short(), c.key) {
			t.Errorf("%s: Short %q does not print %s", c.spec, st.Short(), c.key)
		}
		for _, s := range []string{st.String(), st.Short()} {
			back, err := Parse(s)
			if err != nil || back.Resolve(m) != st {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", s, back, err, st)
			}
		}
	}
}

// A bad value of a stack option names the key and the values it takes; tpoverlap=full without
// sequence parallel names the fix.
func TestStackOptionErrors(t *testing.T) {
	m, err := model.Load("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, want string }{
		{"tp=2,tpoverlap=maybe", "use on (the backward's collectives under the products), full"},
		{"tp=2,kernels=fast", `kernels="fast"`},
		{"tp=2,compile=maybe", "use on or off"},
		{"tp=2,tpoverlap=full", "add sp=on, or use tpoverlap=on"},
	} {
		st, err := Parse(c.spec)
		if err == nil {
			err = st.Resolve(m).Validate(m)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one that says %q", c.spec, err, c.want)
		}
	}
}
