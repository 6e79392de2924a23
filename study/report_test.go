package study

import (
	"math"
	"strconv"
	"testing"
)

// cells.csv prints integers as integers and everything else in full: the digits read back to the
// same float64.
func TestNum(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{3, "3"}, {0, "0"}, {-2048, "-2048"}, {80e9, "80000000000"}, {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"},
		{2.19e-4, "0.000219"}, {1e20, "1e+20"}, {math.Pi * 1e6, "3.141592653589793e+06"}} {
		got := Num(c.v)
		if got != c.want {
			t.Errorf("Num(%v) = %q, want %q", c.v, got, c.want)
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || back != c.v {
			t.Errorf("Num(%v) = %q reads back as %v", c.v, got, back)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"plan", "--model", "my models/config.json", "--fix", "attn=flash,precision=mixed", "--x", "it's"})
	want := `plan --model 'my models/config.json' --fix attn=flash,precision=mixed --x 'it'\''s'`
	if got != want {
		t.Errorf("ShellJoin = %s, want %s", got, want)
	}
}

// A winner of a model without a sequence (an MLP prints seq=0) reads back, and predict's
// --strategy gets it without seq=0.
func TestStrategyArg(t *testing.T) {
	s := "pp=1,dp=2,cp=1,tp=1,mbs=8,gbs=16,seq=0,zero=0"
	if got := StrategyArg(s); got != "pp=1,dp=2,cp=1,tp=1,mbs=8,gbs=16,zero=0" {
		t.Errorf("StrategyArg = %s", got)
	}
	st, err := ParseWinner(s)
	if err != nil || st.Mesh.DP != 2 || st.MBS != 8 {
		t.Errorf("ParseWinner: %+v, %v", st, err)
	}
}
