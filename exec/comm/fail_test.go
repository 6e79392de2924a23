package comm

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The failure tests run in a synctest bubble: a deadlock fails the test instead of hanging it, and
// timeouts run on the bubble's fake clock.

func TestRankReturnsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 2})
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 1 {
				return nil
			}
			return group(c, "tp").AllReduce(make([]float32, 4))
		})
		want := "rank 0: comm: all_reduce on tp group [0 1]: rank 1 did not arrive (it returned)"
		if err == nil || err.Error() != want {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
		var ce *Error
		if !errors.As(err, &ce) || ce.Kind != KindAllReduce || ce.Dim != "tp" || !slices.Equal(ce.Group, []int{0, 1}) || !slices.Equal(ce.Missing, []int{1}) {
			t.Errorf("Error = %+v", ce)
		}
	})
}

func TestRankPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"dp", 2}, Dim{"tp", 2})
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 1 {
				panic("boom")
			}
			buf := make([]float32, 8)
			if err := group(c, "tp").AllReduce(buf); err != nil {
				return err
			}
			return group(c, "dp").AllReduce(buf)
		})
		var re *RunError
		if !errors.As(err, &re) {
			t.Fatalf("Run() = %v, want a *RunError", err)
		}
		// The panic is the cause whichever rank noticed it first; rank 0, waiting for rank 1 in
		// the tp all-reduce, names it.
		want := "rank 1 panicked: boom\nrank 0: comm: all_reduce on tp group [0 1]: rank 1 did not arrive (it failed: rank 1 panicked: boom)\n"
		if !strings.HasPrefix(err.Error()+"\n", want) {
			t.Errorf("Run() = %q, want it to start with %q", err, want)
		}
		var pe *PanicError
		if re.CauseRank != 1 || !errors.As(re.Errs[1], &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
			t.Errorf("RunError = %+v", re)
		}
		// Rank 3 shares its dp group [1 3] with rank 1: whether it is stopped in the tp all-reduce
		// by the abort or reaches the dp all-reduce, it fails.
		if re.Errs[3] == nil {
			t.Errorf("rank 3 returned nil")
		}
	})
}

func TestRingRankMissing(t *testing.T) {
	// Rank 3 of a ring of 4 never calls the all-reduce: every other rank fails and names rank 3,
	// including ranks 1 and 2, which do not receive from it directly.
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 4})
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 3 {
				return nil
			}
			return group(c, "tp").AllReduce(make([]float32, 1000))
		})
		var re *RunError
		if !errors.As(err, &re) {
			t.Fatalf("Run() = %v", err)
		}
		for r := range 3 {
			want := "comm: all_reduce on tp group [0 1 2 3]: rank 3 did not arrive (it returned)"
			if re.Errs[r] == nil || re.Errs[r].Error() != want {
				t.Errorf("rank %d: %v, want %q", r, re.Errs[r], want)
			}
		}
		if re.Errs[3] != nil {
			t.Errorf("rank 3: %v", re.Errs[3])
		}
	})
}

func TestTimeout(t *testing.T) {
	// Rank 1 is stuck outside the package until the run is aborted; rank 0 gives up after the
	// timeout, on the bubble's fake clock.
	synctest.Test(t, func(t *testing.T) {
		w, err := NewWorld([]Dim{{"tp", 2}}, WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 1 {
				<-c.Context().Done()
				return nil
			}
			return group(c, "tp").AllReduce(make([]float32, 4))
		})
		want := "rank 0: comm: all_reduce on tp group [0 1]: rank 1 did not arrive within 1m0s (it is still running)"
		if err == nil || err.Error() != want {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("errors.Is(err, ErrTimeout) = false")
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("Run took %v, want 1m0s", d)
		}
	})
}

func TestAbandonedRank(t *testing.T) {
	// Rank 1 ignores the abort: Run returns one timeout after the abort and reports it abandoned,
	// and the World refuses to run again until rank 1 returns.
	synctest.Test(t, func(t *testing.T) {
		w, err := NewWorld([]Dim{{"tp", 2}}, WithTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 1 {
				time.Sleep(time.Hour)
				return nil
			}
			return group(c, "tp").AllReduce(make([]float32, 4))
		})
		want := "rank 0: comm: all_reduce on tp group [0 1]: rank 1 did not arrive within 1m0s (it is still running)\n" +
			"rank 1: still running 1m0s after the world was aborted; abandoned"
		if err == nil || err.Error() != want {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
		if d := time.Since(start); d != 2*time.Minute {
			t.Errorf("Run took %v, want 2m0s", d)
		}
		noop := func(*Comm) error { return nil }
		err = w.Run(t.Context(), noop)
		if want := "comm: 1 rank(s) abandoned by an earlier Run are still running; Run again once they return"; err == nil || err.Error() != want {
			t.Errorf("second Run() = %v, want %q", err, want)
		}
		time.Sleep(time.Hour)
		if err := w.Run(t.Context(), noop); err != nil {
			t.Errorf("Run after the straggler returned: %v", err)
		}
	})
}

func TestContextCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 2})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := w.Run(ctx, func(c *Comm) error {
			if c.Rank() == 1 {
				<-c.Context().Done()
				return nil
			}
			return group(c, "tp").AllReduce(make([]float32, 4))
		})
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run() = %v, want context.DeadlineExceeded", err)
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != 2 || lines[0] != "comm: run canceled: context deadline exceeded" ||
			!strings.HasPrefix(lines[1], "rank 0: comm: all_reduce on tp group [0 1]: rank 1 did not arrive (") {
			t.Errorf("Run() = %q", err)
		}
	})
}

func TestMismatchedKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 2})
		err := w.Run(t.Context(), func(c *Comm) error {
			g := group(c, "tp")
			if c.Rank() == 0 {
				return g.AllReduce(make([]float32, 4))
			}
			return g.AllGather(make([]float32, 4), make([]float32, 2))
		})
		if err == nil || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "(the ranks of the group called operations in different orders)") {
			t.Fatalf("Run() = %v", err)
		}
	})
}

func TestMismatchedLengths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 2})
		err := w.Run(t.Context(), func(c *Comm) error {
			return group(c, "tp").AllReduce(make([]float32, 4+2*c.Rank()))
		})
		// Rank 0 expects chunk 0 of 4 (2 elements) and rank 1 sends chunk 0 of 6 (3 elements);
		// rank 1 expects chunk 1 of 6 (3) and rank 0 sends chunk 1 of 4 (2). Whichever rank
		// receives first names the mismatch (ranks poll before they block, so the order is the
		// scheduler's).
		want0 := "comm: all_reduce on tp group [0 1]: rank 1 sent 3 elements where 2 were expected (buffer lengths differ across ranks)"
		want1 := "comm: all_reduce on tp group [0 1]: rank 0 sent 2 elements where 3 were expected (buffer lengths differ across ranks)"
		if err == nil || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), want0) && !strings.Contains(err.Error(), want1) {
			t.Fatalf("Run() = %v, want it to contain %q or %q", err, want0, want1)
		}
	})
}

func TestRecvFromReturnedRank(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"pp", 2})
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 1 {
				return nil
			}
			return c.Recv(1, make([]float32, 3))
		})
		want := "rank 0: comm: recv on world group [0 1] from rank 1: rank 1 did not arrive (it returned)"
		if err == nil || err.Error() != want {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
	})
}

func TestSendReceivedAfterSenderReturned(t *testing.T) {
	// Messages queued by a rank that then returns are still delivered.
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"pp", 2})
		got := make([]float32, 2)
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 0 {
				return c.Send(1, []float32{1, 2})
			}
			time.Sleep(time.Second) // let rank 0 return first
			return c.Recv(0, got)
		})
		if err != nil || !slices.Equal(got, []float32{1, 2}) {
			t.Fatalf("Run() = %v, got %v", err, got)
		}
	})
}

func TestRankError(t *testing.T) {
	// An ordinary error aborts the world like a panic.
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 2})
		oops := errors.New("oops")
		err := w.Run(t.Context(), func(c *Comm) error {
			if c.Rank() == 0 {
				return oops
			}
			return group(c, "tp").AllGather(make([]float32, 2), make([]float32, 1))
		})
		want := "rank 0: oops\nrank 1: comm: all_gather on tp group [0 1]: rank 0 did not arrive (it failed: oops)"
		if err == nil || err.Error() != want || !errors.Is(err, oops) {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
	})
}

func TestGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := mustWorld(t, Dim{"tp", 1})
		err := w.Run(t.Context(), func(c *Comm) error {
			runtime.Goexit()
			return nil
		})
		want := "rank 0: rank 0 exited by runtime.Goexit (t.FailNow or t.Fatal in a rank goroutine?)"
		if err == nil || err.Error() != want {
			t.Fatalf("Run() = %v, want %q", err, want)
		}
	})
}
