package compare

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/exec/calibrate"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// TimeKernels returns hw with the compute kernels the points' Programs run timed again alone on
// this machine, just before compare measures them, and the contention of their numbers of ranks
// (calibrate.MeasureSharing) measured again (the lower of the profile's and the new figure): every matrix product of their linears on one
// core (calibrate.TimeGEMMs; hardware.Efficiency.GEMMTimes, the profile's own products kept for
// other shapes) and the kernels priced by their rates (calibrate.KernelRates). A cached profile
// may be minutes or days old, and this shared machine runs the same kernels tens of percent
// faster or slower from one minute to the next; its collectives and memory figures are kept. Nothing of a training step is timed. hw itself is not changed. A profile that is not
// of a CPU (no GEMMParallelMACs: a GPU preset under --foreign-hardware) is returned as it is.
func TimeKernels(ctx context.Context, hw *hardware.Hardware, pts []Point, progress io.Writer) (*hardware.Hardware, error) {
	if hw.Cores == 0 || hw.GEMMParallelMACs <= 0 {
		return hw, nil
	}
	products := Products(pts)
	if progress != nil {
		fmt.Fprintf(progress, "tpsim compare: timing the model's %d matrix products and the profile's kernels, each alone, before measuring\n", len(products))
	}
	timed, err := calibrate.TimeGEMMs(ctx, products)
	if err != nil {
		return nil, err
	}
	rates, err := calibrate.KernelRates(ctx)
	if err != nil {
		return nil, err
	}
	out := *hw
	out.Efficiency.GEMMTimes = timed
	for _, g := range hw.Efficiency.GEMMTimes {
		if !slices.ContainsFunc(timed, g.Same) {
			out.Efficiency.GEMMTimes = append(out.Efficiency.GEMMTimes, g)
		}
	}
	out.Efficiency.KernelRates = rates
	// And what the points' ranks lose to sharing the cores (contention, met and unmet, and the
	// meeting overhead), at their numbers of ranks.
	var ks []int
	for _, pt := range pts {
		if d := pt.Program.Strategy.Mesh.Devices(); d >= 2 && d <= 8 && !slices.Contains(ks, d) {
			ks = append(ks, d)
		}
	}
	slices.Sort(ks)
	sh, err := calibrate.MeasureSharing(ctx, ks)
	if err != nil {
		return nil, err
	}
	out.Slowdown, out.UnmetSlowdown, out.MeetOverhead = withSharing(hw, sh)
	return &out, nil
}

// withSharing returns hw's contention tables (met, unmet) and meeting overheads with the entries
// sh measured. Interference from outside only ever slows the ranks down, and it comes in spells
// of a few seconds (one calibration measured two ranks at 1.89x where the others of that
// afternoon gave 1.03-1.18x, and one of compare's own measurements 1.6x): of the profile's figure
// and the one measured now, the smaller is the machine's. Meeting never makes ranks faster: the
// unmet slowdown stays at most the met one.
func withSharing(hw *hardware.Hardware, sh calibrate.Sharing) (slow, unmet []float64, meet []units.Seconds) {
	slow = withEntries(hw.Slowdown, lower(hw.Slowdown, sh.Slowdown), 1)
	unmet = withEntries(hw.UnmetSlowdown, lower(hw.UnmetSlowdown, sh.Unmet), 1)
	meet = withEntries(hw.MeetOverhead, lower(hw.MeetOverhead, sh.Meeting), 0)
	hardware.CapUnmet(unmet, slow)
	return slow, unmet, meet
}

// lower returns at with each entry k lowered to table's entry k-1 where the table has one.
func lower[T float64 | units.Seconds](table []T, at map[int]T) map[int]T {
	out := make(map[int]T, len(at))
	for k, v := range at {
		if k-1 < len(table) {
			v = min(v, table[k-1])
		}
		out[k] = v
	}
	return out
}

// withEntries returns a copy of table (entry k-1 for k ranks) with the entries of at set, in
// increasing k; where at reaches past its end, the table is extended with its last entry (empty:
// with first), so the same inputs give the same table whatever the map's order.
func withEntries[T float64 | units.Seconds](table []T, at map[int]T, first T) []T {
	out := slices.Clone(table)
	if len(out) == 0 {
		out = []T{first}
	}
	for _, k := range slices.Sorted(maps.Keys(at)) {
		for len(out) < k {
			out = append(out, out[len(out)-1])
		}
		out[k-1] = at[k]
	}
	return out
}

// Products are the distinct matrix products the linears of the points' Programs run
// (costmodel.HostGEMMs), in Program order.
func Products(pts []Point) []hardware.GEMMTime {
	var out []hardware.GEMMTime
	for _, pt := range pts {
		for _, s := range pt.Program.Stages {
			for _, ops := range [][]program.Op{s.Forward, s.Backward} {
				for i := range ops {
					if ops[i].Kind != program.OpLinear {
						continue
					}
					for _, g := range costmodel.HostGEMMs(&ops[i]) {
						if !slices.ContainsFunc(out, g.Same) {
							out = append(out, g)
						}
					}
				}
			}
		}
	}
	return out
}

// MedianProfile is the profile whose timed figures are, entry by entry, the median of those of
// profiles (the same profile's kernels timed again before each round): the products' times, the
// kernels' rates, the contention tables and the meeting overheads. The rest is profiles[0]'s.
// Measured steps are the median over the rounds; predicting with the median of the timings
// taken beside them keeps a spell of load or of speed during one timing from shifting every row.
func MedianProfile(profiles []*hardware.Hardware) *hardware.Hardware {
	out := *profiles[0]
	if len(profiles) == 1 {
		return &out
	}
	e := &out.Efficiency
	e.GEMMTimes = slices.Clone(e.GEMMTimes)
	for i, g := range e.GEMMTimes {
		var xs []float64
		for _, p := range profiles {
			if s, ok := p.Efficiency.Measured(g); ok {
				xs = append(xs, float64(s))
			}
		}
		e.GEMMTimes[i].Seconds = units.Seconds(median(xs))
	}
	e.KernelRates = maps.Clone(e.KernelRates)
	for k := range e.KernelRates {
		var xs []float64
		for _, p := range profiles {
			if r, ok := p.Efficiency.KernelRates[k]; ok {
				xs = append(xs, r)
			}
		}
		e.KernelRates[k] = median(xs)
	}
	out.Slowdown = medianTable(profiles, func(h *hardware.Hardware) []float64 { return h.Slowdown })
	out.UnmetSlowdown = medianTable(profiles, func(h *hardware.Hardware) []float64 { return h.UnmetSlowdown })
	hardware.CapUnmet(out.UnmetSlowdown, out.Slowdown)
	out.MeetOverhead = medianTable(profiles, func(h *hardware.Hardware) []units.Seconds { return h.MeetOverhead })
	return &out
}

// medianTable is, entry by entry, the median of the table get reads from each of profiles
// (profiles[0]'s length; a shorter table has no say past its end).
func medianTable[T float64 | units.Seconds](profiles []*hardware.Hardware, get func(*hardware.Hardware) []T) []T {
	t := slices.Clone(get(profiles[0]))
	for i := range t {
		var xs []float64
		for _, p := range profiles {
			if v := get(p); i < len(v) {
				xs = append(xs, float64(v[i]))
			}
		}
		t[i] = T(median(xs))
	}
	return t
}
