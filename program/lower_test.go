package program

import (
	"strings"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func seedMLP(t *testing.T) *model.Model {
	t.Helper()
	m, err := model.MLP("seed-mlp", model.KindReLU, 10, 100, 1000, 10)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fp32(t *testing.T, s, plan string) strategies.Strategy {
	t.Helper()
	st, err := strategies.Parse(s + ",precision=fp32,optimizer=sgd")
	if err != nil {
		t.Fatal(err)
	}
	if plan != "" {
		if st.Plan, err = strategies.ParsePlan(plan); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// The figures of issue 3, derived by hand from docs/architecture.md's bytes-per-rank table (float32, batch 10):
//   - 0=rowwise,1=noparallel,2=colwise on tp=2: forward all-reduce of the 10x1000 activations
//     (2*(1/2)*40,000 = 40,000), all-gather of the 10x10 output ((1/2)*400 = 200), backward
//     all-reduce of the 10x1000 input gradient (40,000): 80,200.
//   - 0=colwise,2=rowwise on tp=2: one all-reduce of the 10x10 output: 400.
//   - dp=2: all 111,010 gradients all-reduced over 2 ranks: 2*(1/2)*444,040 = 444,040.
//   - dp=2,tp=2 with 0=colwise,2=rowwise: 400/2 = 200 on tp (batch 5 per dp rank) and the 55,510
//     local gradients (50,000+500 of layer 0, 5,000+10 of layer 2) on dp: 222,040.
func TestSeedMLPCommBytes(t *testing.T) {
	cases := []struct {
		mesh, plan string
		tp, dp     units.Bytes
	}{
		{"tp=2", "0=rowwise,1=noparallel,2=colwise", 80200, 0},
		{"tp=2", "0=colwise,2=rowwise", 400, 0},
		{"dp=2", "", 0, 444040},
		{"dp=2,tp=2", "0=colwise,2=rowwise", 200, 222040},
		{"tp=2", "megatron", 400, 0},
	}
	for _, c := range cases {
		st := fp32(t, c.mesh+",mbs=10", c.plan)
		if st.Mesh.DP > 1 {
			st.MBS = 10 / st.Mesh.DP
		}
		p, err := Lower(seedMLP(t), st)
		if err != nil {
			t.Fatalf("%s %s: %v", c.mesh, c.plan, err)
		}
		got := p.CommBytes(p.Stages[0])
		if got[strategies.DimTP] != c.tp || got[strategies.DimDP] != c.dp {
			t.Errorf("%s %s: tp %v dp %v bytes, want %v and %v", c.mesh, c.plan, float64(got[strategies.DimTP]), float64(got[strategies.DimDP]), float64(c.tp), float64(c.dp))
		}
	}
}

func TestPlanErrors(t *testing.T) {
	m := seedMLP(t)
	cases := []struct{ plan, want string }{
		{"rowwise", "apply to Linear and Embedding modules; Linear/Embedding modules: 0, 2"},
		{"linear1=rowwise,relu=noparallel,linear2=colwise", `plan key "linear1" matches no module of "seed-mlp"; modules: 0, 1, 2`},
		{"1=colwise", `module "1" (ReLU) cannot be colwise`},
	}
	for _, c := range cases {
		_, err := Lower(m, fp32(t, "tp=2,mbs=10", c.plan))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("plan %q: error %v, want it to contain %q", c.plan, err, c.want)
		}
	}
}

// Plan files: errors say where, as line and column of the offending character.
func TestParsePlanJSONErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{\"0\": \"colwise\",\n \"2\": rowwise}", "line 2, column 7: invalid character 'r'"},
		{"{\"0\": \"colwise\",\n \"é\": 3}", `line 2, column 7: the style of "é" must be a string`},
		{`["colwise"]`, "must hold a JSON object"},
		{`{}`, "has no entries"},
		{`{"0": "diagonal"}`, `unknown style "diagonal"`},
	}
	for _, c := range cases {
		_, err := strategies.ParsePlanJSON([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePlanJSON(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	p, err := strategies.ParsePlanJSON([]byte(`{"2": "rowwise", "0": "colwise"}`))
	if err != nil || p.String() != "2=rowwise,0=colwise" {
		t.Errorf("rules out of the file's order: %v, %v", p, err)
	}
}
