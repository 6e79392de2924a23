package calibrate

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/units"
)

// ContentionPoint is how much longer work takes when k goroutines do it at once on the shared
// cores: wall time with k over wall time alone (each goroutine does the same work). 0 means not
// measured.
type ContentionPoint struct {
	K int `json:"k"`
	// Mix is one GEMM and elementwise adds that take about as
	// long alone as the GEMM.
	Mix float64 `json:"mix"`
	// Synced is Mix with the goroutines meeting after every unit in an exec/comm all-reduce of
	// one float, as exec's ranks meet at their collectives: a rank that finishes its share first
	// waits for the others to be scheduled. The profile's slowdown is this one.
	Synced float64 `json:"synced"`
	// GEMM and Elementwise are the two halves of the mix alone.
	GEMM        float64 `json:"gemm"`
	Elementwise float64 `json:"elementwise"`
}

// contention shapes: a mid-size GEMM (on one core: below gemm.ParallelMACs)
// and an add of gpt-tiny's activation size (256 x 256 floats, 256 KiB, serial).
const (
	contM, contK, contN = 256, 256, 256
	contElems           = 1 << 16
)

// contWork is one goroutine's buffers: the inputs are shared read-only, the outputs its own.
type contWork struct {
	a, b, x, y []float32 // shared inputs
	c, z       []float32 // own outputs
}

func (w *contWork) gemm() { kernels.MatMul(w.c, w.a, w.b, contM, contK, contN, false, false, 1, 0) }
func (w *contWork) add()  { kernels.Add(w.z, w.x, w.y) }

// The core-sharing measurements' bounds. A cold compare took 142.7 s on a loaded 2-core machine,
// 83.5 s of it here, and 489 s with the load average at 23 (15.4 s of it in the contention table
// and 340 s in the meetings, measured on 2026-12-07 with this package's test harness): with more
// ranks than cores, every meeting of k ranks waits for all k to be scheduled, and under load that
// wait, not the work, set the duration. Now:
//
//   - each synced timing stops, all ranks together, once it has run k x s.budget (the time k
//     ranks' work takes on one core, so never fewer units than planned on an idle machine, whose
//     meetings cost a fraction of the work: the figures do not change there);
//   - the repetitions stop once a measurement has taken sharePhaseBudget, after at least
//     minShareReps (the median of three still discards one outlier), and progress says so.
//
// On an idle 2-core machine the default plan's 9 repetitions fit the budget (about 4 s each for
// the contention table and the meetings); under load the calibration stays within about twice
// the budget instead of growing with the load, with fewer repetitions, which the progress says.
const (
	sharePhaseBudget = 6 * time.Second
	minShareReps     = 3
)

// repsDone reports, after rep repetitions, whether a measurement started at start stops: all
// planned, or the budget spent after minShareReps. say (may be nil) reports an early stop.
func repsDone(rep, planned int, start time.Time, what string, say func(string, ...any)) bool {
	if rep >= planned {
		return true
	}
	if rep < minShareReps || time.Since(start) < sharePhaseBudget {
		return false
	}
	if say != nil {
		say("  %s: %d of %d repetitions in %.1f s; the machine is busy, the rest skipped (a busy machine's figures are noisier)", what, rep, planned, time.Since(start).Seconds())
	}
	return true
}

// measureContentionAt measures the slowdown of k = 1..maxK goroutines running the mix, and the
// GEMM and elementwise parts alone for the ks in parts. Each k is timed up to s.reps times (fewer
// when the machine is so busy that sharePhaseBudget is spent first, at least minShareReps); the
// median counts. units is chosen so that one goroutine alone takes about s.budget.
//
// With at set, only the ks in it are measured (1 always; the others' points stay zero), and the
// GEMM and elementwise halves at the ks of parts among them. say (may be nil) reports progress.
func measureContentionAt(ctx context.Context, maxK int, at, parts []int, s sampler, say func(string, ...any)) ([]ContentionPoint, int, error) {
	rng := kernels.NewRand(seed + 2)
	shared := contWork{a: make([]float32, contM*contK), b: make([]float32, contK*contN),
		x: make([]float32, contElems), y: make([]float32, contElems)}
	for _, v := range [][]float32{shared.a, shared.b, shared.x, shared.y} {
		kernels.FillUniform(v, rng, 0.5, 1.5)
	}
	work := make([]*contWork, maxK)
	for i := range work {
		w := shared
		w.c, w.z = make([]float32, contM*contN), make([]float32, contElems)
		work[i] = &w
	}
	one := sampler{budget: s.budget / 4, reps: 3}
	tg, err := one.seconds(ctx, work[0].gemm)
	if err != nil {
		return nil, 0, err
	}
	ta, err := one.seconds(ctx, work[0].add)
	if err != nil {
		return nil, 0, err
	}
	adds := max(1, int(tg/ta+0.5))
	mix := func(w *contWork) {
		w.gemm()
		for range adds {
			w.add()
		}
	}
	kinds := []struct {
		fn   func(*contWork)
		one  float64
		set  func(*ContentionPoint, float64)
		only []int
	}{
		{mix, tg + float64(adds)*ta, func(p *ContentionPoint, v float64) { p.Mix = v }, nil},
		{nil, tg + float64(adds)*ta, func(p *ContentionPoint, v float64) { p.Synced = v }, nil},
		{(*contWork).gemm, tg, func(p *ContentionPoint, v float64) { p.GEMM = v }, parts},
		{(*contWork).add, ta, func(p *ContentionPoint, v float64) { p.Elementwise = v }, parts},
	}
	pts := make([]ContentionPoint, maxK)
	for k := range pts {
		pts[k].K = k + 1
	}
	names := []string{"mixed work", "mixed work meeting after each unit", "matrix multiply", "elementwise"}
	for ki, kd := range kinds {
		units := itersFor(s.budget, kd.one)
		var ks []int
		for k := 1; k <= maxK; k++ {
			if k == 1 || (kd.only == nil || contains(kd.only, k)) && (at == nil || contains(at, k)) {
				ks = append(ks, k)
			}
		}
		// Repetitions on the outside, so that a burst of load from another process lands on one
		// repetition of every k rather than on every repetition of one k.
		times := make([][]float64, len(ks))
		start := time.Now()
		if say != nil {
			say("  %s on %v goroutines", names[ki], ks)
		}
		for rep := 0; !repsDone(rep, s.reps, start, names[ki], say); rep++ {
			for i, k := range ks {
				if err := ctx.Err(); err != nil {
					return nil, 0, err
				}
				var t float64
				if kd.fn == nil {
					// Per unit, scaled back to units: a busy machine runs fewer meetings.
					_, per, err := syncedBounded(ctx, work[:k], units, mix, time.Duration(k)*s.budget)
					if err != nil {
						return nil, 0, err
					}
					t = per * float64(units)
				} else {
					t = concurrently(work[:k], units, kd.fn)
				}
				times[i] = append(times[i], t)
			}
		}
		for i, k := range ks {
			// The ratio of each repetition to the one goroutine timed just before it, then their
			// median: this machine changes speed within tens of milliseconds, and timings next to
			// each other share the speed. Sharing cores never speeds a goroutine up; a ratio
			// below 1 is noise.
			ratios := make([]float64, len(times[i]))
			for r, t := range times[i] {
				ratios[r] = t / times[0][r]
			}
			kd.set(&pts[k-1], max(1, median(ratios)))
		}
	}
	return pts, adds, nil
}

// monotone returns the non-decreasing sequence closest to v in least squares (isotonic
// regression by pooling adjacent violators; Barlow et al. 1972, "Statistical Inference under
// Order Restrictions", ch. 1): k+1 goroutines sharing the cores are never faster than k, so a
// dip in the measured ratios is noise.
func monotone(v []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	var bs []block
	for _, x := range v {
		bs = append(bs, block{x, 1})
		for len(bs) > 1 && bs[len(bs)-2].sum/float64(bs[len(bs)-2].n) > bs[len(bs)-1].sum/float64(bs[len(bs)-1].n) {
			last := bs[len(bs)-1]
			bs = bs[:len(bs)-1]
			bs[len(bs)-1].sum += last.sum
			bs[len(bs)-1].n += last.n
		}
	}
	out := make([]float64, 0, len(v))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.sum/float64(b.n))
		}
	}
	return out
}

// concurrently starts one goroutine per work item, releases them together, lets each run fn
// units times and returns the wall time until the last finishes, in seconds.
func concurrently(work []*contWork, units int, fn func(*contWork)) float64 {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, w := range work {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for range units {
				fn(w)
			}
		}()
	}
	ready.Wait()
	t := time.Now()
	close(start)
	done.Wait()
	return time.Since(t).Seconds()
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// syncedBounded is synced with its duration bounded: the ranks stop together after the unit
// during which limit passed (rank 0 checks the clock every fourth unit and says so in the
// all-reduce every unit ends with, so all ranks see the same count), at most units. It returns
// the units run and the wall time per unit, in seconds. On an idle machine limit holds all units
// (the callers give k x the budget of one rank's work), so the counts and figures do not change
// there; on a busy one the meetings, which wait for every rank to be scheduled, stop running the
// clock. (A pilot run to choose the count cost 30% more time on the mixed work's ten units.)
func syncedBounded(ctx context.Context, work []*contWork, units int, fn func(*contWork), limit time.Duration) (int, float64, error) {
	w, err := comm.NewWorld([]comm.Dim{{Name: "k", Size: len(work)}}, comm.WithTimeout(time.Minute))
	if err != nil {
		return 0, 0, err
	}
	ran := units
	t := time.Now()
	err = w.Run(ctx, func(c *comm.Comm) error {
		g, err := c.Group("k")
		if err != nil {
			return err
		}
		buf := make([]float32, 1)
		for i := range units {
			fn(work[c.Rank()])
			buf[0] = 0
			if c.Rank() == 0 && i%4 == 3 && time.Since(t) > limit {
				buf[0] = 1
			}
			if err := g.AllReduce(buf); err != nil {
				return err
			}
			if buf[0] > 0 {
				if c.Rank() == 0 {
					ran = i + 1
				}
				return nil
			}
		}
		return nil
	})
	d := time.Since(t).Seconds()
	return ran, d / float64(ran), err
}

// synced runs fn units times on one goroutine rank per work item of an exec/comm world, the
// ranks meeting in an all-reduce of one float after every unit, and returns the wall time:
// syncedBounded with no limit.
func synced(ctx context.Context, work []*contWork, units int, fn func(*contWork)) (float64, error) {
	ran, per, err := syncedBounded(ctx, work, units, fn, time.Duration(math.MaxInt64))
	return per * float64(ran), err
}

// Meeting is what a blocking collective costs exec's ranks beyond the collective itself when
// they arrive from computing, as they do at every ZeRO-3 gather and tensor-parallel all-reduce:
// the early ranks wait out the last one's jitter, the handoff finds caches and threads in another
// state than back to back, and where the ranks outnumber the cores a meeting waits for ranks to
// be scheduled. Measured with K goroutine ranks each running Work, a few elementwise adds of
// gpt-tiny's activation size, then meeting in an all-reduce of one float: Overhead = Synced -
// Alone - Collective per meeting, the median over repetitions.
type Meeting struct {
	K          int           `json:"k"`
	Adds       int           `json:"adds"`
	Alone      units.Seconds `json:"alone_s"`      // the work, the K ranks at once without meeting
	Collective units.Seconds `json:"collective_s"` // the all-reduce back to back
	Synced     units.Seconds `json:"synced_s"`     // work then all-reduce
	Overhead   units.Seconds `json:"overhead_s"`
}

// meetWork is the work between two meetings: about 50 µs alone, the time of one of gpt-tiny's
// mid-size ops.
const meetWork = 50 * time.Microsecond

// measureMeetingsAt measures Meeting on k = 2..maxK ranks. Repetitions go on the outside, as
// measureContentionAt does, so that a change of the machine's speed falls on every timing alike.
// With at set, only the ks in it are measured (nil: every k from 2). Each timing of work and
// meeting stops once it has run k x s.budget, and the repetitions stop early on a busy machine
// (repsDone); say (may be nil) reports progress.
func measureMeetingsAt(ctx context.Context, maxK int, at []int, s sampler, say func(string, ...any)) ([]Meeting, error) {
	rng := kernels.NewRand(seed + 5)
	x, y := make([]float32, contElems), make([]float32, contElems)
	kernels.FillUniform(x, rng, 0.5, 1.5)
	kernels.FillUniform(y, rng, 0.5, 1.5)
	work := make([]*contWork, maxK)
	for i := range work {
		work[i] = &contWork{x: x, y: y, z: make([]float32, contElems)}
	}
	ta, err := sampler{budget: s.budget / 4, reps: 3}.seconds(ctx, work[0].add)
	if err != nil {
		return nil, err
	}
	adds := max(1, int(meetWork.Seconds()/ta+0.5))
	unit := func(w *contWork) {
		for range adds {
			w.add()
		}
	}
	n := itersFor(s.budget, float64(adds)*ta)
	out := make([]Meeting, 0, maxK-1)
	alone, coll, met := make([][]float64, maxK+1), make([][]float64, maxK+1), make([][]float64, maxK+1)
	var ks []int
	for k := 2; k <= maxK; k++ {
		if at == nil || contains(at, k) {
			ks = append(ks, k)
		}
	}
	start := time.Now()
	if say != nil {
		say("  meetings of %v ranks", ks)
	}
	for rep := 0; !repsDone(rep, s.reps, start, "meetings", say); rep++ {
		for _, k := range ks {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			// The work and meeting first, bounded: its count sets the others', so that the three
			// are per meeting over the same number of meetings.
			m, per, err := syncedBounded(ctx, work[:k], n, unit, time.Duration(k)*s.budget)
			if err != nil {
				return nil, err
			}
			met[k] = append(met[k], per)
			alone[k] = append(alone[k], concurrently(work[:k], m, unit)/float64(m))
			t, err := synced(ctx, work[:k], m, func(*contWork) {})
			if err != nil {
				return nil, err
			}
			coll[k] = append(coll[k], t/float64(m))
		}
	}
	for _, k := range ks {
		m := Meeting{K: k, Adds: adds, Alone: units.Seconds(median(alone[k])), Collective: units.Seconds(median(coll[k])), Synced: units.Seconds(median(met[k]))}
		m.Overhead = max(0, m.Synced-m.Alone-m.Collective)
		out = append(out, m)
	}
	return out, nil
}

// Sharing is what ranks sharing this machine's cores lose, measured as calibrate measures it, at
// some numbers of ranks: Slowdown and Unmet (met and unmet contention, as hardware.Slowdown and
// UnmetSlowdown) and Meeting (hardware.MeetOverhead), each by k; 0 where not measured.
type Sharing struct {
	Slowdown, Unmet map[int]float64
	Meeting         map[int]units.Seconds
}

// MeasureSharing measures Sharing at the ranks in ks (each 2..8) in about 0.3 s per k, for compare
// to price a run with contention measured seconds before it: this machine's contention changes
// with its neighbours' load (two ranks meeting at collectives measured 1.03x to 1.89x one alone in
// calibrations of one afternoon). It returns ctx's error when ctx is done first.
func MeasureSharing(ctx context.Context, ks []int) (Sharing, error) {
	sh := Sharing{Slowdown: map[int]float64{}, Unmet: map[int]float64{}, Meeting: map[int]units.Seconds{}}
	maxK := 1
	for _, k := range ks {
		if k < 2 || k > maxShareK {
			return sh, fmt.Errorf("calibrate: sharing of %d ranks; measure 2 to %d", k, maxShareK)
		}
		maxK = max(maxK, k)
	}
	if maxK == 1 {
		return sh, nil
	}
	s := defaultPlan().contS
	pts, _, err := measureContentionAt(ctx, maxK, ks, []int{}, s, nil)
	if err != nil {
		return sh, err
	}
	ms, err := measureMeetingsAt(ctx, maxK, ks, s, nil)
	if err != nil {
		return sh, err
	}
	for _, k := range ks {
		p := pts[k-1]
		sh.Slowdown[k] = round3(p.Synced)
		sh.Unmet[k] = min(sh.Slowdown[k], round3(p.Mix))
	}
	for _, m := range ms {
		sh.Meeting[m.K] = units.Seconds(sig(float64(m.Overhead)))
	}
	return sh, nil
}

// maxShareK is the most ranks MeasureSharing measures, as calibrate's contention table.
const maxShareK = 8
