package validate

import (
	"slices"
	"testing"
)

// Every rule of a record's strategy is named and says its source; a knob's rules after one that
// always holds could never run.
func TestStrategyRulesNamedAndSourced(t *testing.T) {
	names := map[string]bool{}
	for _, k := range strategyRules {
		for i, r := range k.Rules {
			if r.Name == "" || r.Source == "" {
				t.Errorf("knob %s, rule %d (%q): needs a name and a source", k.Knob, i, r.Name)
			}
			if names[r.Name] {
				t.Errorf("knob %s: rule name %q used twice", k.Knob, r.Name)
			}
			names[r.Name] = true
			if r.When == nil && i != len(k.Rules)-1 {
				t.Errorf("knob %s: rule %q always holds, so the rules after it never run", k.Knob, r.Name)
			}
		}
	}
}

// The first rule of a knob that holds applies, as a switch: a NeMo record with tp 2 and dp 4 that
// states neither sequence parallel nor the ZeRO stage gets NeMo's (sp on, ZeRO-1, the recipes' and
// Megatron-Core's), a stated sp=off wins over NeMo's default.
func TestApplyRulesFirstMatch(t *testing.T) {
	two, four := 2, 4
	r := &Record{ID: "x"}
	r.Source.Title = "NeMo 24.03 performance summary" // Family reads the source
	r.Parallel.TP, r.Parallel.DP = &two, &four
	c := &ruleCase{r: r, fam: FamilyNeMo, tp: 2, pp: 1, dp: 4, cp: 1, gbs: 8, zeroStated: true}
	runKnobs(c, "zero", "sp")
	if !slices.Contains(c.keys, "sp=on") || c.zero != 1 || !c.zeroStated {
		t.Errorf("NeMo defaults: keys %q, zero %d (stated %v); want sp=on and ZeRO-1 by NeMo's rule", c.keys, c.zero, c.zeroStated)
	}
	off := false
	r.Parallel.SP = &off
	c = &ruleCase{r: r, fam: FamilyNeMo, tp: 2, pp: 1, dp: 4, cp: 1, gbs: 8, zeroStated: true}
	runKnobs(c, "sp")
	if !slices.Equal(c.keys, []string{"sp=off"}) || len(c.assumed) != 0 {
		t.Errorf("stated sp=off: keys %q, assumed %q; want sp=off with nothing assumed", c.keys, c.assumed)
	}
}

// runKnobs applies the rules of the named knobs only.
func runKnobs(c *ruleCase, knobs ...string) {
	var some []knobRules
	for _, k := range strategyRules {
		if slices.Contains(knobs, k.Knob) {
			some = append(some, k)
		}
	}
	applyRules(c, some)
}
