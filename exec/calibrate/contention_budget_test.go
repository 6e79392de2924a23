package calibrate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The issue: a cold compare spent 83.5 s of 142.7 s in the core-sharing phase on a loaded machine
// (489 s with the load average at 23), because every synced timing ran its planned meetings
// whatever each cost. A timing now stops, all ranks together, at the first check after its
// limit, and runs every planned unit when they fit (an idle machine: the figures do not change).
func TestSyncedBoundedStopsAtItsLimit(t *testing.T) {
	work := []*contWork{{}, {}}
	slow := func(*contWork) { time.Sleep(2 * time.Millisecond) } // a meeting's unit on a busy machine
	start := time.Now()
	n, per, err := syncedBounded(context.Background(), work, 1000, slow, 40*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 2 ms a unit (or more, when this machine is loaded): 20 fill 40 ms, and the clock is read
	// every fourth unit, so 24 at most; at least 4. Unbounded, 1000 units took 2 s.
	if n < 4 || n > 24 || n%4 != 0 || per < 0.002 {
		t.Errorf("%d units at %.3g s each; want a multiple of 4 in 4..24 at 2 ms or more", n, per)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v; the limit was 40 ms", d)
	}
	// Units that fit the limit all run.
	fast := func(*contWork) {}
	if n, _, err := syncedBounded(context.Background(), work, 50, fast, time.Second); err != nil || n != 50 {
		t.Errorf("fast units: %d of 50 timed, %v; want all", n, err)
	}
}

// Repetitions stop on a busy machine once the budget is spent, never before minShareReps, and
// say so; with time left all planned run.
func TestRepsDone(t *testing.T) {
	var said []string
	say := func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) }
	long := time.Now().Add(-2 * sharePhaseBudget)
	if repsDone(minShareReps-1, 9, long, "x", say) {
		t.Error("stopped before the minimum repetitions")
	}
	if !repsDone(minShareReps, 9, long, "x", say) || len(said) != 1 || !strings.Contains(said[0], "x: 3 of 9 repetitions") || !strings.Contains(said[0], "busy") {
		t.Errorf("over budget after the minimum: want a stop that says so; said %q", said)
	}
	if repsDone(5, 9, time.Now(), "x", nil) || !repsDone(9, 9, time.Now(), "x", nil) {
		t.Error("within budget: want every planned repetition, then a stop")
	}
}
