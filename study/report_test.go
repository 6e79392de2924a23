package study

import (
	"testing"
)

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
