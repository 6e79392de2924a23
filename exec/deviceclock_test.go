package exec

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// A rank's device clock, by hand: 3 ms of its own work, an input sent at 5 ms (2 ms idle, the
// bubble), 1 ms more, an input sent before the rank wanted it (no wait), then the optimizer's
// tied-embedding exchange arriving 1 ms late (a wait, but not the bubble).
func TestDeviceClockByHand(t *testing.T) {
	ms := time.Millisecond
	var d deviceClock
	d.startStep()
	d.now += 3 * ms
	d.arrive(5*ms, true)
	d.now += ms
	d.arrive(4*ms, true)
	d.arrive(7*ms, false)
	d.endStep()
	d.startStep()
	d.now += ms
	d.endStep()
	if d.now != 8*ms || d.idle != 2*ms {
		t.Fatalf("clock %v idle %v, want 8ms and 2ms", d.now, d.idle)
	}
	if len(d.steps) != 2 || d.steps[0] != 7*ms || d.idles[0] != 2*ms || d.steps[1] != ms || d.idles[1] != 0 {
		t.Fatalf("steps %v idles %v, want [7ms 1ms] and [2ms 0s]", d.steps, d.idles)
	}
}

// A pipeline alone with more ranks than cores has its ops timed on the threads' CPU clocks
// (Linux); with a rank per core, or dp or tp beside pp, the wall clock times them. Either way
// the device clock's bubble is an idle share of each pipeline rank's device time.
func TestDeviceClockChoice(t *testing.T) {
	m, err := model.Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		strategy string
		procs    int
		want     string
	}{{"pp=2,mbs=1", 2, "wall"}, {"pp=2,mbs=1", 1, "thread-cpu"}, {"pp=2,dp=2,mbs=1", 1, "wall"}, {"dp=2", 1, "wall"}} {
		st, err := strategies.Parse(c.strategy)
		if err != nil {
			t.Fatal(err)
		}
		prev := runtime.GOMAXPROCS(c.procs)
		res, err := Run(context.Background(), Config{Model: m, Strategy: st.Resolve(m), Steps: 3, Warmup: 1, Seed: 1})
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if _, ok := threadCPU(); !ok {
			want = "wall"
		}
		if res.DeviceClock != want {
			t.Errorf("%s on %d cores: device clock %q, want %q", c.strategy, c.procs, res.DeviceClock, want)
		}
		if pp := st.Mesh.PP > 1; pp != (res.DeviceBubbleFraction > 0 && res.DeviceBubbleFraction < 1) {
			t.Errorf("%s: device bubble %v, want a share in (0, 1) with a pipeline, 0 without", c.strategy, res.DeviceBubbleFraction)
		}
	}
}
