package strategies

import (
	"strings"
	"testing"
)

// The issue: "0=colwise,0=rowwise" was accepted with the last one winning. A module gets one
// style, in a map and in a plan file alike.
func TestParsePlanRefusesDuplicateKeys(t *testing.T) {
	for _, in := range []string{"0=colwise,0=rowwise", "0=colwise, 2=rowwise, 0 = colwise"} {
		_, err := ParsePlan(in)
		if err == nil || !strings.Contains(err.Error(), `plan key "0" appears twice`) {
			t.Errorf("ParsePlan(%q) = %v; want the duplicate key named", in, err)
		}
	}
	_, err := ParsePlanJSON([]byte(`{"layers.*.mlp.fc1": "colwise", "layers.*.mlp.fc1": "rowwise"}`))
	if err == nil || !strings.Contains(err.Error(), `plan key "layers.*.mlp.fc1" appears twice (colwise and rowwise)`) {
		t.Errorf("ParsePlanJSON with a duplicate key: %v", err)
	}
	if p, err := ParsePlan("0=colwise,2=rowwise"); err != nil || len(p.Rules) != 2 {
		t.Errorf("distinct keys: %v, %v", p, err)
	}
}

// The issue: --plan '{"0":"colwise"}' was read as a style name and came back as a garbled
// `unknown style "{\" (did you mean "noparallel"?)0\":...`. An inline JSON object is read as a plan
// file's content would be; a name with quotes is refused without a "did you mean"; a misspelt
// name gets one.
func TestParsePlanInlineJSONAndStyleMessages(t *testing.T) {
	p, err := ParsePlan(`{"0":"colwise", "2": "RowwiseParallel"}`)
	if err != nil || p.String() != "0=colwise,2=rowwise" {
		t.Errorf("inline JSON plan = %v, %v; want 0=colwise,2=rowwise", p, err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"0":"colwize"}`, `strategies: unknown style "colwize" (did you mean "colwise"?); valid styles: colwise, rowwise,`},
		{`{"0":}`, "strategies: plan JSON at line 1, column 6:"},
		{`"colwise"`, `strategies: "\"colwise\"" is not a style name; valid styles: colwise,`},
		{`rowwize`, `strategies: unknown style "rowwize" (did you mean "rowwise"?); valid styles:`},
		{`banana`, `strategies: unknown style "banana"; valid styles:`},
	} {
		_, err := ParsePlan(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParsePlan(%s) = %v; want it to begin %q", c.in, err, c.want)
		}
		if err != nil && strings.Count(err.Error(), "did you mean") > 1 {
			t.Errorf("ParsePlan(%s): %v", c.in, err)
		}
	}
}
