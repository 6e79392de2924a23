package exec

import (
	"time"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// deviceClock is a rank's time as if the rank had a device to itself: it advances by each op's
// own duration and, at a pipeline receive, jumps to the sender's clock at the send when that is
// later; the jump is the rank's idle time waiting for its input (the bubble). The wall clock
// cannot show that on a machine with fewer cores than ranks: a rank whose input has arrived may
// wait for a core inside its receive (up to Go's 10 ms time slice), and the bubble measured on the
// wall clock grows the shorter each stage's compute (about half the step for
// BenchmarkPipelineBubble's 4 stages on 2 cores, against (p-1)/(m+p-1) = 27.3%; the device
// clock reads 29-32% there).
//
// An op's own duration is its wall time, except in a pipeline alone (pp ranks only) with more
// ranks than cores (Result.DeviceClock): there it is the CPU time of the rank's thread
// (CLOCK_THREAD_CPUTIME_ID; each rank then keeps its OS thread and runs its products on it,
// gemm.SetThreads(1)), which excludes the time the rank waited for a core. Meshes with dp or tp
// stay on the wall clock: a thread's CPU clock would count a collective's polling for its peers
// as work, and handing messages between locked threads slows small collectives (gpt-tiny
// pp=2,dp=2 on 2 cores: 5.7-6.5 ms a step against 3.2-5.1 ms), so their collectives count what
// the rank spent in them, waits for peers included, as the wall-clock breakdown does.
type deviceClock struct {
	cpu bool // ops are timed on the thread's CPU clock, not the wall clock
	now time.Duration
	// idle is the part of now spent waiting for pipeline inputs; steps and idles are each
	// step's device time and its idle part.
	idle, stepAt, idleAt time.Duration
	steps, idles         []time.Duration
}

// alwaysCPUClock times every pipeline's ops on the thread CPU clock, a core per rank or not
// (BenchmarkPipelineBubble compares the two clocks where both apply).
var alwaysCPUClock bool

// read is the clock an op's own duration is measured on: the thread's CPU clock, or wall, the
// wall clock's reading the caller has taken (time since the run's start).
func (d *deviceClock) read(wall time.Duration) time.Duration {
	if d.cpu {
		c, _ := threadCPU() // runProgram turns cpu on only where the clock reads
		return c
	}
	return wall
}

// arrive moves the clock to a message sent at the sender's device time at; bubble says the wait
// is a pipeline receive's (the optimizer's tied-embedding exchange is not the bubble).
func (d *deviceClock) arrive(at time.Duration, bubble bool) {
	if at <= d.now {
		return
	}
	if bubble {
		d.idle += at - d.now
	}
	d.now = at
}

func (d *deviceClock) startStep() { d.stepAt, d.idleAt = d.now, d.idle }

func (d *deviceClock) endStep() {
	d.steps = append(d.steps, d.now-d.stepAt)
	d.idles = append(d.idles, d.idle-d.idleAt)
}

// waitsForStage says op waits for another pipeline stage's message, so its wall time is not its
// own: the clock moves by the arrival instead (deviceClock.arrive).
func waitsForStage(op *program.Op) bool {
	return op.Kind == program.OpRecv || (op.Kind.IsCollective() && op.Dim == strategies.DimPP)
}

// deviceBubble is Result.DeviceBubbleFraction: each pipeline rank's idle device time over its
// device time, both summed over the steps after the warm-up, averaged over the pipeline ranks of
// dp and tp coordinate 0.
func deviceBubble(ranks []*rank, st strategies.Strategy, warmup int) float64 {
	if st.Mesh.PP == 1 {
		return 0
	}
	var sum float64
	for _, r := range ranks {
		if r.dpIdx != 0 || r.tpIdx != 0 {
			continue
		}
		var idle, step time.Duration
		for k := warmup; k < len(r.dev.steps); k++ {
			idle, step = idle+r.dev.idles[k], step+r.dev.steps[k]
		}
		if step > 0 {
			sum += idle.Seconds() / step.Seconds()
		}
	}
	return sum / float64(st.Mesh.PP)
}
