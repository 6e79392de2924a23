package program

import (
	"reflect"
	"testing"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// A Lowerer's Programs are Lower's, whatever it lowered before (it shares the resolved Megatron
// styles between them), and LowerPasses' are the same without the optimizer phase; so are those
// lowered into the arrays of Programs given back by Recycle.
func TestLowererEqualsLower(t *testing.T) {
	cfgs := map[string]model.Transformer{
		"gpt":        {Layers: 3, Hidden: 64, Heads: 4, KVHeads: 4, HeadDim: 16, FFN: 256, Vocab: 256, Seq: 32, Bias: true, Learned: true, Batch: 16},
		"llama-tied": {Layers: 3, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256, Seq: 32, Gated: true, RMSNorm: true, Tied: true, Batch: 16},
	}
	strats := []string{
		"tp=2,mbs=2,gbs=4", "tp=2,sp=on,recompute=full,mbs=1,gbs=2", "dp=2,zero=3,mbs=1,gbs=2", "tp=2,sp=on,mbs=2,gbs=4",
		"pp=3,tp=2,mbs=1,gbs=6", "pp=3,dp=2,tp=2,sp=on,zero=1,recompute=selective,mbs=1,gbs=6", "cp=2,tp=2,sp=on,mbs=1,gbs=1",
		"dp=2,mbs=1,gbs=4", "tp=2,mbs=2,gbs=4",
	}
	for name, c := range cfgs {
		m, err := c.Build(name, "gpt")
		if err != nil {
			t.Fatal(err)
		}
		l := NewLowerer(m)
		for _, s := range strats {
			st, err := strategies.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Lower(m, st)
			if err != nil {
				t.Fatalf("%s %s: %v", name, s, err)
			}
			got, err := l.Lower(st)
			if err != nil {
				t.Fatalf("%s %s: %v", name, s, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: the Lowerer's Program differs from Lower's", name, s)
			}
			passes, err := l.LowerPasses(st)
			if err != nil {
				t.Fatal(err)
			}
			opt := 0
			for _, s := range want.Stages {
				opt += len(s.Optimizer)
				s.Optimizer = nil
			}
			if opt == 0 {
				t.Fatalf("%s %s: no optimizer ops to leave out", name, s)
			}
			// LowerPasses leaves derived values unnamed; the names it keeps are Lower's.
			for i, st := range passes.Stages {
				for j, v := range st.Values {
					if w := want.Stages[i].Values[j].Name; v.Name != "" && v.Name != w {
						t.Errorf("%s %s: LowerPasses names value %d of stage %d %q, Lower %q", name, s, j, i, v.Name, w)
					}
				}
			}
			bare := unnamed(t, want)
			if !reflect.DeepEqual(unnamed(t, passes), bare) {
				t.Errorf("%s %s: LowerPasses is not Lower without the optimizer phase", name, s)
			}
			// The next strategy lowers into these arrays (and the same one, lowered again from
			// them, is still Lower's).
			Recycle(passes)
			again, err := l.LowerPasses(st)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(unnamed(t, again), bare) {
				t.Errorf("%s %s: lowered into recycled arrays, the Program differs", name, s)
			}
			Recycle(again)
		}
	}
}

// unnamed is a copy of p whose values have no names.
func unnamed(t *testing.T, p *Program) *Program {
	t.Helper()
	q := *p
	q.Stages = nil
	for _, s := range p.Stages {
		c := *s
		c.Values = append([]Value(nil), s.Values...)
		for i := range c.Values {
			c.Values[i].Name = ""
		}
		q.Stages = append(q.Stages, &c)
	}
	return &q
}
