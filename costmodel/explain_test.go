package costmodel

import (
	"testing"

	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

func TestCommBound(t *testing.T) {
	st, err := strategies.Parse("dp=4,tp=2,zero=1,sp=on")
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Time: Time{Step: 10, CommExposed: 3}, CommTime: map[strategies.Dim]units.Seconds{"dp": 2, "tp": 4},
		CommBytes: map[strategies.Dim]units.Bytes{"dp": 1 << 30, "tp": 1 << 20}}
	// 3 s of 10 exposed is 30% >= 20%; tp's 4 s is the longest.
	want := "Communication bound: exposed communication is 30.0% of the step. tp dominates (tp=2, tensor-parallel activation all-gathers and reduce-scatters): " +
		units.Seconds(4).String() + " per step, overlapped or not, " + units.Bytes(1<<20).String() + " sent per device."
	if got := r.CommBound(st); got != want {
		t.Errorf("CommBound =\n %q, want\n %q", got, want)
	}
	r.Time.CommExposed = 1.9 // 19%: not communication bound
	if got := r.CommBound(st); got != "" {
		t.Errorf("19%% exposed: %q, want \"\"", got)
	}
	if got := CommCarries(strategies.DimDP, st); got != "ZeRO-1 gradient reduce-scatter and parameter all-gather" {
		t.Errorf("CommCarries(dp, zero=1) = %q", got)
	}
}
