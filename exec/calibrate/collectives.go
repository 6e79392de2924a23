package calibrate

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// CollPoint is one collective at one group size and message size.
type CollPoint struct {
	Kind  string        `json:"kind"`  // all_reduce, all_gather or reduce_scatter
	P     int           `json:"ranks"` // group size
	Bytes units.Bytes   `json:"bytes"` // n: the full tensor (all-gather's output, reduce-scatter's input)
	Time  units.Seconds `json:"time_s"`
	// Model is the fitted steps x Latency + fraction x n/Bandwidth.
	Model  units.Seconds `json:"model_s"`
	RelErr float64       `json:"rel_err"`
}

// CollGroupFit is how well the one fitted level matches one kind at one group size.
type CollGroupFit struct {
	Kind string `json:"kind"`
	P    int    `json:"ranks"`
	Fit
}

// CollPFit is the level fitted to the measurements of one group size alone, all kinds together:
// how latency and bandwidth change with the number of ranks.
type CollPFit struct {
	P         int                  `json:"ranks"`
	Latency   units.Seconds        `json:"latency_s"`
	Bandwidth units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	Fit
}

// CollKindFit is the level fitted to the measurements of one kind alone, all group sizes
// together.
type CollKindFit struct {
	Kind      string               `json:"kind"`
	Latency   units.Seconds        `json:"latency_s"`
	Bandwidth units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	Fit
}

// CollFit is the one level fitted to every collective measured, how well it matches each kind
// and group size, and the levels fitted to each group size alone and to each kind alone.
type CollFit struct {
	Latency   units.Seconds        `json:"latency_s"`
	Bandwidth units.BytesPerSecond `json:"bandwidth_bytes_per_s"`
	Fit
	ByKindP []CollGroupFit `json:"by_kind_and_ranks"`
	ByP     []CollPFit     `json:"by_ranks"`
	ByKind  []CollKindFit  `json:"by_kind"`
}

var collKinds = []comm.Kind{comm.KindAllReduce, comm.KindAllGather, comm.KindReduceScatter}

// collPlan says which collectives to measure.
type collPlan struct {
	ranks []int
	elems []int // float32 elements of the full tensor, ascending
	// bigElems are measured only for bigRanks: the largest messages cost the most time.
	bigElems []int
	bigRanks []int
}

// ringShape returns the steps of the ring algorithm and the bytes each rank sends for
// collective p: program.RingSteps and program.SentBytes of its kind, group size and full tensor
// (Thakur, Rabenseifner and Gropp 2005, Sec. 4), as costmodel.CollectiveTime prices them.
func ringShape(p CollPoint) (steps, sent float64) {
	kind := program.OpKind(p.Kind)
	return float64(program.RingSteps(kind, p.P)), float64(program.SentBytes(kind, p.P, p.Bytes))
}

// measureCollectives runs each collective of the plan on a World of p goroutine ranks.
// progress is called before each group size.
func measureCollectives(ctx context.Context, plan collPlan, s sampler, progress func(p int)) ([]CollPoint, error) {
	var out []CollPoint
	for _, p := range plan.ranks {
		progress(p)
		w, err := comm.NewWorld([]comm.Dim{{Name: "host", Size: p}}, comm.WithTimeout(time.Minute))
		if err != nil {
			return nil, fmt.Errorf("calibrate: %v", err)
		}
		sizes := plan.elems
		for _, r := range plan.bigRanks {
			if r == p {
				sizes = append(append([]int(nil), sizes...), plan.bigElems...)
			}
		}
		for _, kind := range collKinds {
			prev, prevN := 0.0, 0
			for _, n := range sizes {
				// Calls per repetition: from the previous size's time scaled by size (an
				// overestimate, since the latency part does not grow), or from a pilot run.
				est := prev * float64(n) / float64(max(prevN, 1))
				if prev == 0 {
					if est, err = timeCollective(ctx, w, kind, n, 1, 1); err != nil {
						return nil, err
					}
				}
				iters := itersFor(s.budget/time.Duration(s.reps), est)
				t, err := timeCollective(ctx, w, kind, n, iters, s.reps)
				if err != nil {
					return nil, err
				}
				prev, prevN = t, n
				out = append(out, CollPoint{Kind: string(kind), P: p, Bytes: units.Bytes(4 * n), Time: units.Seconds(t)})
			}
		}
	}
	return out, nil
}

// timeCollective runs kind on n float32 elements over every rank of w: one warm-up call, then
// reps repetitions of iters calls back to back. A repetition's time per call is that of the
// slowest rank; it returns the median over repetitions, in seconds.
func timeCollective(ctx context.Context, w *comm.World, kind comm.Kind, n, iters, reps int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p := w.Size()
	per := make([][]float64, p) // per[rank][rep]
	err := w.Run(ctx, func(c *comm.Comm) error {
		g := c.WorldGroup()
		lo, hi := comm.ChunkBounds(n, p, g.Index())
		full, shard := make([]float32, n), make([]float32, hi-lo)
		for i := range full {
			full[i] = 1
		}
		call := func() error {
			switch kind {
			case comm.KindAllReduce:
				return g.AllReduce(full)
			case comm.KindAllGather:
				return g.AllGather(full, shard)
			default:
				return g.ReduceScatter(shard, full)
			}
		}
		if err := call(); err != nil {
			return err
		}
		times := make([]float64, reps)
		for r := range reps {
			t := time.Now()
			for range iters {
				if err := call(); err != nil {
					return err
				}
			}
			times[r] = time.Since(t).Seconds() / float64(iters)
		}
		per[c.Rank()] = times
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("calibrate: %s of %d bytes on %d ranks: %w", kind, 4*n, p, err)
	}
	slowest := make([]float64, reps)
	for _, times := range per {
		for r, t := range times {
			slowest[r] = max(slowest[r], t)
		}
	}
	return median(slowest), nil
}

// fitLevel fits t = steps x latency + fraction x n/bandwidth (fit2) to pts and returns latency,
// bandwidth and the relative errors.
func fitLevel(pts []CollPoint) (lat, bw float64, errs []float64) {
	steps, bytes, t := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		steps[i], bytes[i] = ringShape(p)
		t[i] = float64(p.Time)
	}
	lat, inv := fit2(steps, bytes, t)
	bw = math.Inf(1)
	if inv > 0 {
		bw = 1 / inv
	}
	errs = make([]float64, len(pts))
	for i := range pts {
		errs[i] = relErr(lat*steps[i]+inv*bytes[i], t[i])
	}
	return lat, bw, errs
}

// fitCollectives fits one level to all points, fills each point's model time, and summarises the
// errors per kind and group size; it also fits a level to each group size alone.
func fitCollectives(pts []CollPoint) CollFit {
	lat, bw, errs := fitLevel(pts)
	cf := CollFit{Latency: units.Seconds(lat), Bandwidth: units.BytesPerSecond(bw), Fit: summarise(errs)}
	groups := map[[2]any][]float64{}
	byP := map[int][]CollPoint{}
	byKind := map[string][]CollPoint{}
	for i := range pts {
		st, sent := ringShape(pts[i])
		pts[i].Model = units.Seconds(st*lat + sent/bw)
		pts[i].RelErr = errs[i]
		k := [2]any{pts[i].Kind, pts[i].P}
		groups[k] = append(groups[k], errs[i])
		byP[pts[i].P] = append(byP[pts[i].P], pts[i])
		byKind[pts[i].Kind] = append(byKind[pts[i].Kind], pts[i])
	}
	for _, kind := range collKinds {
		for _, p := range sortedInts(byP) {
			if e, ok := groups[[2]any{string(kind), p}]; ok {
				cf.ByKindP = append(cf.ByKindP, CollGroupFit{Kind: string(kind), P: p, Fit: summarise(e)})
			}
		}
	}
	for _, p := range sortedInts(byP) {
		l, b, e := fitLevel(byP[p])
		cf.ByP = append(cf.ByP, CollPFit{P: p, Latency: units.Seconds(l), Bandwidth: units.BytesPerSecond(b), Fit: summarise(e)})
	}
	for _, kind := range collKinds {
		if k := byKind[string(kind)]; len(k) > 0 {
			l, b, e := fitLevel(k)
			cf.ByKind = append(cf.ByKind, CollKindFit{Kind: string(kind), Latency: units.Seconds(l), Bandwidth: units.BytesPerSecond(b), Fit: summarise(e)})
		}
	}
	return cf
}

func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
