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
