package exec

import (
	"testing"
	"time"
)

// TestWorldSteps: ranks out of phase (one leaves the step's all-reduce early and starts the next
// step while another is still in it) have own step times that swing between 5 and 15 ms; the
// world still ends a step every 10 ms, and that is the step time. Hand values from gpt-tiny dp=4
// on 2 cores.
func TestWorldSteps(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	a := &rank{stepTimes: ms(12, 5, 15, 10), stepEnds: ms(12, 17, 32, 42)}
	b := &rank{stepTimes: ms(11, 15, 5, 10), stepEnds: ms(11, 26, 31, 41)}
	// World ends: 12, 26, 32, 42: steps 12 (the slowest first step), 14, 6, 10.
	got := worldSteps([]*rank{a, b}, 4)
	want := ms(12, 14, 6, 10)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("world steps %v, want %v", got, want)
		}
	}
	var sum time.Duration
	for _, d := range got {
		sum += d
	}
	if sum != 42*time.Millisecond {
		t.Errorf("steps sum to %v, want the run's 42 ms", sum)
	}
}
