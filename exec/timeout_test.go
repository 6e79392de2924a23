package exec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/program"
)

// In exec's tests every wait of a rank for another (a collective, a pipeline send or receive)
// fails after 30 s instead of the 2 minutes of production runs: a hang fails its test within a
// minute with an error that names the rank, the op and the peer, instead of stalling the run
// (issue 39: a wrong interleaved schedule once hung a test for 6.5 minutes). The slowest wait a
// correct test run has, a rank waiting for another's step at -race on a loaded machine, is
// under a second.
func init() { DefaultTimeout = 30 * time.Second }

// hangTimeout is the timeout of the deliberate hangs below.
const hangTimeout = 2 * time.Second

// A pipeline stage that never sends its activations: a waiting rank fails after the timeout with
// an error that names it, the transfer, and the rank that did not send.
func TestPipelineHangFails(t *testing.T) {
	cfg := gptTiny4(t, "pp=2,mbs=2,optimizer=sgd")
	cfg.Timeout = hangTimeout
	p, err := Lowered(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Stage 0 (rank 0) never sends microbatch 0's activation... nor any other: its forward sends
	// are gone.
	if n := dropOps(p, func(op *program.Op) bool { return op.Kind == program.OpSend && op.Phase == program.Forward }); n == 0 {
		t.Fatal("no forward send to drop")
	}
	start := time.Now()
	_, err = runProgram(context.Background(), cfg, p)
	took := time.Since(start)
	t.Logf("after %v: %v", took, err)
	// Rank 1 waits for the activation rank 0 never sends, and rank 0, after its forwards, for
	// the gradient rank 1 never sends back: whichever wait began first times out first (rank 1's
	// unless it started late on a loaded machine) and its error is the run's cause.
	wants := []string{
		"rank 1: exec: pipeline recv of microbatch 0's activation on stage 1 from stage 0 on rank 0: rank 0 did not send it within 2s",
		"rank 0: exec: pipeline recv of microbatch 0's gradient on stage 0 from stage 1 on rank 1: rank 1 did not send it within 2s",
	}
	if err == nil || !errors.Is(err, comm.ErrTimeout) || !(strings.HasPrefix(err.Error(), wants[0]) || strings.HasPrefix(err.Error(), wants[1])) {
		t.Errorf("a stage that never sends: error %v; want one that starts with %q or %q and wraps comm.ErrTimeout", err, wants[0], wants[1])
	}
	// The timeout, then up to one more for the ranks to return after the abort, plus slack for a
	// loaded machine.
	if took > 2*hangTimeout+10*time.Second {
		t.Errorf("the hang failed after %v, want about %v", took, hangTimeout)
	}
}

// A rank stuck outside exec (here in its OnStep callback, after step 1): the rank waiting for it
// in the gradients' all-reduce fails after the timeout, naming itself, the all-reduce, the group
// and the rank that did not arrive.
func TestCollectiveHangFails(t *testing.T) {
	cfg := gptTiny4(t, "dp=2,optimizer=sgd")
	cfg.Timeout = hangTimeout
	release := make(chan struct{})
	defer close(release)
	cfg.OnStep = func(step int) { // called by rank 0 only
		if step == 0 {
			<-release
		}
	}
	start := time.Now()
	_, err := Run(context.Background(), cfg)
	took := time.Since(start)
	t.Logf("after %v: %v", took, err)
	want := "rank 1: comm: all_reduce on dp group [0 1]: rank 0 did not arrive within 2s (it is still running)"
	if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, comm.ErrTimeout) {
		t.Errorf("a rank that never arrives: error %v; want one containing %q that wraps comm.ErrTimeout", err, want)
	}
	if took > 2*hangTimeout+10*time.Second {
		t.Errorf("the hang failed after %v, want about %v", took, 2*hangTimeout)
	}
}
