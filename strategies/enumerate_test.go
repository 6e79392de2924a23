package strategies

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tpsim/tpsim/internal/testmodels"
	"github.com/tpsim/tpsim/model"
)

// naiveSpace is the reference for Enumerate: every combination of every knob, each checked with
// Strategy.Validate alone, in Enumerate's order. It keeps what Validate accepts, except GPipe on a
// pipeline of one stage, which is the same step as 1F1B and not part of the space.
func naiveSpace(m *model.Model, gpus, gbs int) []string {
	var out []string
	for _, pp := range divisors(gpus) {
		for _, tp := range divisors(gpus / pp) {
			for _, cp := range divisors(gpus / pp / tp) {
				dp := gpus / pp / tp / cp
				for _, mbs := range divisors(gbs) {
					for z := 0; z <= 3; z++ {
						for _, rc := range RecomputeModes[:3] { // the searched modes (op only when fixed)
							for _, sp := range []bool{false, true} {
								type sv struct {
									s Schedule
									v int
								}
								scheds := []sv{{Schedule1F1B, 1}}
								for v := 2; v <= 64; v++ {
									scheds = append(scheds, sv{ScheduleInterleaved, v})
								}
								scheds = append(scheds, sv{ScheduleGPipe, 1})
								for _, s := range scheds {
									for _, ov := range []bool{true, false} {
										st := Default(Mesh{PP: pp, DP: dp, CP: cp, TP: tp})
										st.MBS, st.GBS, st.ZeRO, st.Recompute, st.SP, st.Schedule, st.VPP, st.Overlap = mbs, gbs, z, rc, sp, s.s, s.v, ov
										st = st.Resolve(m)
										if st.Validate(m) != nil || (pp == 1 && s.s == ScheduleGPipe) {
											continue
										}
										out = append(out, st.String())
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func enumerated(t *testing.T, m *model.Model, gpus int, o EnumerateOptions) (*Space, []string) {
	t.Helper()
	s, err := Enumerate(m, gpus, o)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(s.Candidates))
	for i := range s.Candidates {
		st := s.Strategy(i)
		if err := st.Validate(m); err != nil {
			t.Fatalf("candidate %d %s: %v", i, st, err)
		}
		out[i] = st.String()
	}
	total := len(s.Candidates)
	for _, n := range s.Rejected {
		total += n
	}
	if total != s.Searched {
		t.Errorf("searched %d, but %d candidates + rejected %v = %d", s.Searched, len(s.Candidates), s.Rejected, total)
	}
	return s, out
}

// Enumerate keeps exactly what Validate accepts, in the documented order, for models where every
// rule bites (tp against 4 heads and 2 key/value heads, pp against 4 layers, interleaving).
func TestEnumerateMatchesValidate(t *testing.T) {
	for _, c := range []struct {
		name      string
		m         *model.Model
		gpus, gbs int
	}{
		{"llama-tiny 8 devices", testmodels.Llama(t, 4), 8, 8},
		{"gpt-tiny 4 devices", testmodels.GPT(t, 2), 4, 12},
		{"gpt-tiny 6 devices", testmodels.GPT(t, 6), 6, 6},
		{"gpt-tiny uneven stages", testmodels.GPT(t, 6), 4, 8},
		{"gpt-tiny 1 device", testmodels.GPT(t, 2), 1, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := enumerated(t, c.m, c.gpus, EnumerateOptions{GBS: c.gbs})
			want := naiveSpace(c.m, c.gpus, c.gbs)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Enumerate gave %d candidates, Validate accepts %d\nfirst difference: %s", len(got), len(want), firstDiff(got, want))
			}
			if len(got) == 0 {
				t.Fatal("empty space")
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("#%d got %s want %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

// Hand-counted spaces: the counts come from the loops' domains (see the comment at the top of
// enumerate.go).
func TestEnumerateCounts(t *testing.T) {
	m := testmodels.Llama(t, 4) // 4 heads, 2 kv heads, FFN 128, vocab 256, 4 layers, seq 32
	cases := []struct {
		name     string
		gpus     int
		o        EnumerateOptions
		valid    int
		rejected map[string]int
	}{
		// One device: mbs in {1,2} (divisors of gbs 2), zero 0, recompute 3, sp off, 1f1b, overlap 2.
		{"one device", 1, EnumerateOptions{GBS: 2}, 2 * 3 * 2, map[string]int{}},
		// tp=2 fixed on 2 devices: mesh tp=2 only; mbs {1,3}; gbs 3 is not divisible by... dp=1:
		// all mbs divide 3. zero 0; recompute 3; sp 2; overlap 2: 2*3*2*2 = 24.
		{"tp=2 fixed", 2, EnumerateOptions{GBS: 3, Fix: mustFix(t, "tp=2")}, 24, map[string]int{}},
		// tp=4 does not divide 2 kv heads: every combination is rejected for it: mbs {1,2,4,8},
		// recompute 3, sp 2, overlap 2 = 48.
		{"tp=4 against 2 kv heads", 4, EnumerateOptions{GBS: 8, Fix: mustFix(t, "tp=4")}, 0, map[string]int{RejectHeads: 48}},
		// dp=2 with gbs 3: neither mbs (1, 3) gives a multiple; zero 4 x recompute 3 x overlap 2 = 24
		// per mbs.
		{"odd batch on dp=2", 2, EnumerateOptions{GBS: 3, Fix: mustFix(t, "dp=2")}, 0, map[string]int{RejectBatch: 48}},
		// zero=1 fixed on one device: dp = 1, so zero is rejected: mbs {1}, recompute 3, overlap 2.
		{"zero without dp", 1, EnumerateOptions{GBS: 1, Fix: mustFix(t, "zero=1")}, 0, map[string]int{RejectZeroDP: 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := enumerated(t, m, c.gpus, c.o)
			if len(s.Candidates) != c.valid || !reflect.DeepEqual(s.Rejected, c.rejected) {
				t.Errorf("%d candidates, rejected %v; want %d, %v", len(s.Candidates), s.Rejected, c.valid, c.rejected)
			}
		})
	}
}

func mustFix(t *testing.T, s string) Fix {
	t.Helper()
	f, err := ParseFix(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Every candidate honours the fixed knobs, and fixing knobs selects a subset of the free space.
func TestEnumerateFix(t *testing.T) {
	m := testmodels.Llama(t, 4)
	_, free := enumerated(t, m, 8, EnumerateOptions{GBS: 16})
	inFree := map[string]bool{}
	for _, s := range free {
		inFree[s] = true
	}
	for _, fix := range []string{"tp=2", "pp=2,schedule=interleaved", "vpp=2", "zero=1,overlap=off", "recompute=full,sp=on", "mbs=4,dp=2", "schedule=gpipe"} {
		t.Run(fix, func(t *testing.T) {
			f := mustFix(t, fix)
			s, got := enumerated(t, m, 8, EnumerateOptions{GBS: 16, Fix: f})
			if len(got) == 0 {
				t.Fatalf("no candidates; rejected %v", s.Rejected)
			}
			for i, str := range got {
				// A fixed GPipe is kept on one stage too, where the free space has 1F1B alone.
				if !inFree[str] && !strings.Contains(str, "pp=1,") {
					t.Errorf("%s is not in the free space", str)
				}
				for _, part := range strings.Split(f.String(), ",") {
					if !strings.Contains(","+str+",", ","+part+",") {
						t.Fatalf("candidate %d %s does not honour %s", i, str, part)
					}
				}
			}
		})
	}
}

// Under attn=flash selective recompute equals no recompute (FlashAttention recomputes the scores
// itself), so the search does not list it twice; a fixed recompute=selective is still honoured.
func TestEnumerateFlashSkipsSelective(t *testing.T) {
	for _, attn := range []Attention{AttentionFlash, AttentionFlash1} {
		t.Run(string(attn), func(t *testing.T) { testFlashSkipsSelective(t, attn) })
	}
}

func testFlashSkipsSelective(t *testing.T, attn Attention) {
	m := testmodels.Llama(t, 4)
	_, got := enumerated(t, m, 8, EnumerateOptions{GBS: 16, Fix: mustFix(t, "attn="+string(attn))})
	modes := map[Recompute]int{}
	for _, str := range got {
		for _, rc := range RecomputeModes {
			if strings.Contains(str, "recompute="+string(rc)+",") {
				modes[rc]++
			}
		}
	}
	if modes[RecomputeSelective] != 0 || modes[RecomputeNone] == 0 || modes[RecomputeFull] == 0 {
		t.Errorf("recompute modes searched under attn=%s: %v; want none and full only", attn, modes)
	}
	if _, fixed := enumerated(t, m, 8, EnumerateOptions{GBS: 16, Fix: mustFix(t, "attn="+string(attn)+",recompute=selective")}); len(fixed) == 0 {
		t.Error("a fixed recompute=selective with attn=flash gave no candidates")
	}
}

func TestEnumerateErrors(t *testing.T) {
	m := testmodels.GPT(t, 2) // learned positions: 32
	cases := []struct {
		gpus int
		o    EnumerateOptions
		want string
	}{
		{0, EnumerateOptions{}, "at least 1"},
		{4, EnumerateOptions{Seq: 64}, "longer than the 32 learned positions"},
		{4, EnumerateOptions{Fix: mustFix(t, "tp=3")}, "does not divide 4 devices"},
		{4, EnumerateOptions{GBS: 8, Fix: mustFix(t, "gbs=4")}, "gbs=4 is fixed"},
		{4, EnumerateOptions{GBS: MaxBatch + 1}, "batches up to"},
	}
	for _, c := range cases {
		_, err := Enumerate(m, c.gpus, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Enumerate(%d, %+v) = %v; want an error with %q", c.gpus, c.o, err, c.want)
		}
	}
	for _, s := range []string{"tp=0", "zero=5", "foo=1", "tp=2,tp=2", "recompute=some"} {
		if _, err := ParseFix(s); err == nil {
			t.Errorf("ParseFix(%q) accepted", s)
		}
	}
}

// An MLP has no layers to pipeline or recompute: only dp x tp meshes, mbs, zero and overlap.
func TestEnumerateMLP(t *testing.T) {
	m, err := model.Preset("seed-mlp")
	if err != nil {
		t.Fatal(err)
	}
	s, got := enumerated(t, m, 2, EnumerateOptions{})
	// meshes dp=2 and tp=2 (pp=2, cp=2 rejected); batch 10: mbs {1,2,5,10}.
	// dp=2: mbs 1, 5 (2, 10 give 20 > 10 ... 10 % (2*2) != 0, 10 % (2*10) != 0); zero 4; overlap 2 = 16.
	// tp=2: mbs 4 values, zero 0, overlap 2 = 8.
	if len(got) != 24 {
		t.Errorf("%d candidates (%v), want 24", len(got), s.Rejected)
	}
	if s.Rejected[RejectNoLayers] == 0 {
		t.Errorf("pp=2 and cp=2 should be rejected for an MLP: %v", s.Rejected)
	}
}

func TestEnumerateDeterministic(t *testing.T) {
	m := testmodels.Llama(t, 4)
	a, _ := Enumerate(m, 8, EnumerateOptions{GBS: 16})
	b, _ := Enumerate(m, 8, EnumerateOptions{GBS: 16})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two enumerations differ")
	}
}

func TestSortedReasons(t *testing.T) {
	got := SortedReasons(map[string]int{"zzz": 1, RejectBatch: 2, RejectHeads: 3, "out of memory": 4})
	want := []string{RejectHeads, RejectBatch, "out of memory", "zzz"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// ParseFix never panics, and what it accepts enumerates without panicking.
func FuzzParseFix(f *testing.F) {
	for _, s := range []string{"tp=8", "tp=8,zero=1,recompute=full", "", "tp=0", "vpp=2,schedule=gpipe", "sp=on,overlap=off", "x=1", "tp=2,tp=2", "gbs=8,seq=16"} {
		f.Add(s)
	}
	m, err := model.Transformer{Hidden: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32, Batch: 8}.Build("fuzz", "llama")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fix, err := ParseFix(s)
		if err != nil {
			return
		}
		st := fix.Strategy
		if st.Mesh.Devices() > 64 || st.GBS > 64 || st.MBS > 64 || st.Seq > 64 || st.VPP > 8 {
			return
		}
		_, _ = Enumerate(m, 8, EnumerateOptions{Fix: fix})
	})
}

// The issue: `tpsim plan --gpus 8589934592` spun a core for minutes, and 2^30 devices took 13 s
// to say anything, because divisors counted up to n. The device limit is checked first, and the
// divisors of even 2^40 (41 of them: 2^0..2^40) come by trial division to 2^20.
func TestEnumerateManyDevicesAnswersAtOnce(t *testing.T) {
	m := testmodels.GPT(t, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, gpus := range []int{MaxDevices + 1, 1 << 30, 1 << 33, 1 << 40, 10_000_000_000} {
			_, err := Enumerate(m, gpus, EnumerateOptions{})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", MaxDevices)) || !strings.Contains(err.Error(), "--gpus <=") {
				t.Errorf("Enumerate(%d devices) = %v; want the device limit and the fix", gpus, err)
			}
		}
		d := divisors(1 << 40)
		if len(d) != 41 || d[0] != 1 || d[40] != 1<<40 {
			t.Errorf("divisors(2^40) has %d entries (%v...); want the 41 powers of two", len(d), d[:min(len(d), 3)])
		}
		for i := 1; i < len(d); i++ {
			if d[i] != 2*d[i-1] {
				t.Errorf("divisors(2^40)[%d] = %d after %d; want powers of two in order", i, d[i], d[i-1])
				break
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a second on an idle core; ten for a loaded one
		t.Fatal("Enumerate on 2^30..2^40 devices and divisors(2^40) took over 10 s: linear in the device count again")
	}
	// The largest count allowed still plans: 2^20 devices of the two-layer GPT.
	if _, err := Enumerate(m, MaxDevices, EnumerateOptions{}); err != nil {
		t.Errorf("Enumerate(%d devices): %v", MaxDevices, err)
	}
}

// divisors against the definition, for every n to 2000 and a few products of large primes.
func TestDivisors(t *testing.T) {
	check := func(n int) {
		var want []int
		for d := 1; d <= n; d++ {
			if n%d == 0 {
				want = append(want, d)
			}
		}
		if got := divisors(n); !reflect.DeepEqual(got, want) {
			t.Errorf("divisors(%d) = %v; want %v", n, got, want)
		}
	}
	for n := 1; n <= 2000; n++ {
		check(n)
	}
	for _, n := range []int{65521, 65521 * 2, 1021 * 1021, 720720} {
		check(n)
	}
}
