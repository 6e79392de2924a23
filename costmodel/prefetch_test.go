package costmodel

import (
	"math"
	"testing"

	"github.com/tpsim/tpsim/units"
)

// Derived walks a ZeRO-3 stage's link over a few layers and, where the walk has settled into a
// steady state, extrapolates it to the stage's layers (linkTemplate.walk); that must be what
// walking every layer gives, on stages that settle and on stages whose link is still draining
// (a large head whose reduce-scatter queues ahead of the layers' gathers; the link-bound dp=64
// on one layer's compute), at several prefetch depths.
func TestLinkWalkExtrapolationEqualsFullWalk(t *testing.T) {
	hw := loadHW(t, "a100-80g")
	shortcut, full := 0, 0
	for _, c := range []struct{ model, strategy string }{
		{"gpt3-1.3b", "dp=8,zero=3,mbs=1,gbs=8"},
		{"gpt3-1.3b", "dp=64,zero=3,mbs=1,gbs=64"},
		{"gpt3-1.3b", "dp=4,tp=2,sp=on,zero=3,recompute=full,mbs=2,gbs=8"},
		{"llama2-7b", "dp=16,zero=3,mbs=1,gbs=16,recompute=selective"},
		{"llama2-7b", "dp=8,cp=2,zero=3,mbs=1,gbs=8,seq=8192,attn=flash"},
	} {
		m := mustPreset(t, c.model)
		for _, pf := range []string{"1", "2", "3"} {
			st := mustParse(t, c.strategy+",prefetch="+pf).Resolve(m)
			d, err := NewDerived(m, hw)
			if err != nil {
				t.Fatal(err)
			}
			kp, err := d.kindPieces(st, 1)
			if err != nil {
				t.Fatal(err)
			}
			if kp.link == nil {
				t.Fatalf("%s %s: no link template", c.model, c.strategy)
			}
			for _, n := range []int{12, 24, 40} {
				got := kp.link.walk(n, st)
				var held, none units.Bytes
				for ph, want := range []float64{float64(got.f), float64(got.b)} {
					w := kp.link.walkLayers(ph, n, st.Prefetch)
					held, none = max(held, w.heldOverlap), max(none, w.heldNone)
					if math.Abs(want-float64(w.exposed)) > 1e-9*float64(w.exposed)+1e-15 {
						t.Errorf("%s %s prefetch %s, %d layers, phase %d: walked %v exposed, extrapolated %v", c.model, c.strategy, pf, n, ph, w.exposed, want)
					}
				}
				if held != got.heldOverlap || none != got.heldNone {
					t.Errorf("%s %s prefetch %s, %d layers: walked %v and %v held, extrapolated %v and %v", c.model, c.strategy, pf, n, held, none, got.heldOverlap, got.heldNone)
				}
				for ph := range kp.link.phases {
					if kp.link.walkLayers(ph, st.Prefetch+8, st.Prefetch).steady {
						shortcut++
					} else {
						full++
					}
				}
			}
		}
	}
	t.Logf("%d phases extrapolated from the steady state, %d walked in full", shortcut, full)
	if shortcut == 0 || full == 0 {
		t.Errorf("%d phases extrapolated, %d walked in full: the test exercises one path only", shortcut, full)
	}
}
