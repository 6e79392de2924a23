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
	if strings.Contains(st.String(), "seq=") || strings.Contains(st.Short(), "seq=") {
		t.Errorf("String %q / Short %q print a sequence for a model without one", st.String(), st.Short())
	}
	if _, err := Parse("seq=-1"); err == nil {
		t.Error("seq=-1 parsed; want an error")
	}
}

// The issue: seq=0 in a strategy silently meant the model's sequence length. Written out, it is
// an error that names the key and the fix; left out, the model's length holds.
func TestSeqZeroRefused(t *testing.T) {
	for _, s := range []string{"seq=0", "dp=2,seq=0", "seq= 0", "seq=00"} {
		_, err := Parse(s)
		if err == nil || !strings.Contains(err.Error(), "seq=0 is not a sequence length; leave seq out") {
			t.Errorf("Parse(%q) = %v; want seq=0 refused with the fix", s, err)
		}
		if _, err := ParseFix(s); err == nil {
			t.Errorf("ParseFix(%q) accepted seq=0", s)
		}
	}
	m, err := model.Load("llama2-7b")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Parse("dp=2")
	if err != nil {
		t.Fatal(err)
	}
	// Llama 2 trains at 4096 tokens (Touvron et al. 2023, Table 1, "Context Length").
	if got := st.Resolve(m).Seq; got != 4096 {
		t.Errorf("seq left out resolved to %d, want llama2-7b's 4096", got)
	}
}

// The issue: --precision fp8 was refused ("use mixed or fp32") though precision=fp8 is a valid
// strategy key. Both read one list, Precisions, with one parser.
func TestPrecisionsOneList(t *testing.T) {
	want := []Precision{"mixed", "fp32", "fp8"} // the three the package documents above Precision
	if len(Precisions) != len(want) {
		t.Fatalf("Precisions = %v, want %v", Precisions, want)
	}
	for i, p := range want {
		if Precisions[i] != p {
			t.Fatalf("Precisions = %v, want %v", Precisions, want)
		}
		st, err := Parse("precision=" + strings.ToUpper(string(p)))
		if err != nil || st.Precision != p {
			t.Errorf("Parse(precision=%s) = %v, %v", p, st.Precision, err)
		}
		if got, err := ParsePrecision("--precision", " "+string(p)); err != nil || got != p {
			t.Errorf("ParsePrecision(%q) = %v, %v", p, got, err)
		}
	}
	_, err := ParsePrecision("--precision", "fp4")
	if err == nil || err.Error() != `strategies: --precision="fp4" is not valid; use one of mixed, fp32, fp8` {
		t.Errorf("ParsePrecision(fp4) = %v; want the flag named and the three values", err)
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

// A model with a sliding attention window (Mistral 7B v0.1: 4096 tokens, its config's
// sliding_window) is priced as full causal attention, which it computes only within the window:
// a longer seq is refused by Validate and Enumerate with the fix; the window itself is fine.
func TestSeqBeyondSlidingWindowRefused(t *testing.T) {
	m, err := model.Load("../model/testdata/mistral-7b-v0.1.json")
	if err != nil {
		t.Fatal(err)
	}
	want := "seq=8192 is longer than the 4096-token sliding attention window"
	st, err := Parse("dp=8,seq=8192,gbs=64")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Resolve(m).Validate(m); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "use seq<=4096") {
		t.Errorf("Validate at seq 8192 = %v; want %q and the fix", err, want)
	}
	if _, err := Enumerate(m, 8, EnumerateOptions{Seq: 8192, GBS: 64}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Enumerate at seq 8192 = %v; want %q", err, want)
	}
	st, err = Parse("dp=8,seq=4096,gbs=64")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Resolve(m).Validate(m); err != nil {
		t.Errorf("Validate at the window's 4096 tokens: %v", err)
	}
}
