package program

import (
	"strings"
	"testing"

	"github.com/tpsim/tpsim/strategies"
)

// The schedules' orders, by hand from their definitions (exec runs them, costmodel and sim lay
// them out).
func TestScheduleOrders(t *testing.T) {
	str := func(as []Task) string {
		var b []string
		for _, a := range as {
			b = append(b, a.String())
		}
		return strings.Join(b, " ")
	}
	cases := []struct {
		sched         strategies.Schedule
		pp, vpp, r, m int
		want          string
	}{
		{"gpipe", 4, 1, 0, 3, "F0.0 F0.1 F0.2 B0.2 B0.1 B0.0"},
		// 1F1B: pp-rank-1 warm-up forwards, then alternate, then drain.
		{"1f1b", 4, 1, 0, 5, "F0.0 F0.1 F0.2 F0.3 B0.0 F0.4 B0.1 B0.2 B0.3 B0.4"},
		{"1f1b", 4, 1, 3, 3, "F0.0 B0.0 F0.1 B0.1 F0.2 B0.2"},
		// Megatron-LM's interleaved schedule, pp=2, vpp=2, 4 microbatches, rank 0: warm-up
		// (2-0-1)*2 + (2-1)*2 = 4 forwards, chunk (k/2) mod 2 on microbatch (k/4)*2 + k mod 2.
		{"interleaved", 2, 2, 0, 4, "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 B1.2 B1.3 B0.2 B0.3"},
		{"interleaved", 2, 2, 1, 4, "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 F1.3 B1.3 B0.2 B0.3"},
		// As many microbatches as stages: Megatron-LM warms up with every forward, on every rank.
		{"interleaved", 2, 2, 1, 2, "F0.0 F0.1 F1.0 F1.1 B1.0 B1.1 B0.0 B0.1"},
	}
	for _, c := range cases {
		tasks, err := AppendSchedule(nil, c.sched, c.pp, c.vpp, c.m, c.r)
		if err != nil {
			t.Fatal(err)
		}
		if got := str(tasks); got != c.want {
			t.Errorf("%s pp=%d vpp=%d rank %d m=%d:\n got %s\nwant %s", c.sched, c.pp, c.vpp, c.r, c.m, got, c.want)
		}
	}
	// Every schedule runs each forward and backward once, a backward after its forward, and 1F1B
	// keeps at most pp-rank microbatches in flight (its point: Narayanan et al. 2021 §2.2.1).
	for _, sched := range []strategies.Schedule{"gpipe", "1f1b", "interleaved"} {
		for _, pp := range []int{2, 4} {
			vpp := map[bool]int{true: 2, false: 1}[sched == "interleaved"]
			for r := 0; r < pp; r++ {
				for _, m := range []int{pp, 2 * pp, 3 * pp} {
					done := map[Task]bool{}
					inflight, most := 0, 0
					tasks, err := AppendSchedule(nil, sched, pp, vpp, m, r)
					if err != nil {
						t.Fatal(err)
					}
					for _, a := range tasks {
						f := Task{Chunk: a.Chunk, Micro: a.Micro}
						if done[a] || (a.Backward && !done[f]) {
							t.Fatalf("%s pp=%d rank %d m=%d: %v out of order", sched, pp, r, m, a)
						}
						done[a] = true
						if a.Backward {
							inflight--
						} else {
							inflight++
						}
						most = max(most, inflight)
					}
					if len(done) != 2*m*vpp {
						t.Errorf("%s pp=%d rank %d m=%d: %d actions, want %d", sched, pp, r, m, len(done), 2*m*vpp)
					}
					if sched == "1f1b" && most > min(pp-r, m) {
						t.Errorf("1f1b pp=%d rank %d m=%d: %d microbatches in flight, want at most %d", pp, r, m, most, pp-r)
					}
				}
			}
		}
	}
}
