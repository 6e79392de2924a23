package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/strategies"
)

// Family is a kind of row of `tpsim compare`: how it lays out n ranks, and what it changes in
// the strategy once the mesh's configuration is resolved (global batch known).
type Family struct {
	Name string
	Help string
	// mesh is the family's mesh on n ranks; ok false when the family does not run on n ranks, with
	// skip saying why when that is worth reporting (empty: silently, as dp on one rank is the
	// single row).
	mesh func(n int) (m strategies.Mesh, skip string, ok bool)
	// apply changes the resolved strategy (schedule, microbatches, ZeRO stage, recompute).
	apply func(st *strategies.Strategy) error
	// smallest: the family runs only on the smallest number of --meshes it fits. Its rows show a
	// mechanism (a bubble, gathers, recompute), not scaling, which dp and tp show; --meshes 4
	// alone runs it on 4.
	smallest bool
}

// PipelineMicrobatchesPerStage is how many microbatches the pipeline rows run per pipeline stage:
// m = 2p, so that the bubble (p-1)/(m+p-1) (GPipe, Huang et al. 2019 §2.2; 1F1B has the same,
// Narayanan et al. 2021 §2.2) is large enough to measure but not the whole step: 1/5 at p = 2.
const PipelineMicrobatchesPerStage = 2

func one() strategies.Mesh { return strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 1} }

func onlyOne(n int) (strategies.Mesh, string, bool) { return one(), "", n == 1 }

func dpMesh(n int) (strategies.Mesh, string, bool) {
	m := one()
	m.DP = n
	return m, "", n >= 2
}

func ppMesh(n int) (strategies.Mesh, string, bool) {
	m := one()
	m.PP = n
	return m, "", n >= 2
}

// pipeline sets the schedule and the microbatch size that gives PipelineMicrobatchesPerStage
// microbatches per stage.
func pipeline(schedule strategies.Schedule) func(*strategies.Strategy) error {
	return func(st *strategies.Strategy) error {
		st.Schedule = schedule
		local := st.GBS / st.Mesh.DP
		m := PipelineMicrobatchesPerStage * st.Mesh.PP
		if local%m != 0 {
			return fmt.Errorf("the %d samples per pipeline do not split into %d microbatches (%d per stage of pp=%d); use --batch a multiple of %d",
				local, m, PipelineMicrobatchesPerStage, st.Mesh.PP, m*st.Mesh.DP)
		}
		st.MBS = local / m
		return nil
	}
}

func zero(stage int) func(*strategies.Strategy) error {
	return func(st *strategies.Strategy) error { st.ZeRO = stage; return nil }
}

// Families are the rows compare knows, in the order of the table.
var Families = []Family{
	{Name: "single", Help: "one rank (the 1 of --meshes)", mesh: onlyOne},
	{Name: "dp", Help: "data parallel dp=n", mesh: dpMesh},
	{Name: "tp", Help: "tensor parallel tp=n (--plan)", mesh: func(n int) (strategies.Mesh, string, bool) {
		m := one()
		m.TP = n
		return m, "", n >= 2
	}},
	{Name: "hybrid", Help: "dp=2 x tp=n/2, n even from 4", mesh: func(n int) (strategies.Mesh, string, bool) {
		m := one()
		if n < 4 || n%2 != 0 {
			return m, "hybrid is dp=2 x tp=n/2 and needs an even number of ranks, at least 4", n > 1
		}
		m.DP, m.TP = 2, n/2
		return m, "", true
	}},
	{Name: "pp", Help: "pipeline parallel pp=n, 1F1B, 2 microbatches per stage", mesh: ppMesh, apply: pipeline(strategies.Schedule1F1B), smallest: true},
	{Name: "gpipe", Help: "pp=n, GPipe (every forward, then every backward), 2 microbatches per stage", mesh: ppMesh, apply: pipeline(strategies.ScheduleGPipe), smallest: true},
	{Name: "ppdp", Help: "pp=2 x dp=n/2, 1F1B, n even from 4", mesh: func(n int) (strategies.Mesh, string, bool) {
		m := one()
		if n < 4 || n%2 != 0 {
			return m, "ppdp is pp=2 x dp=n/2 and needs an even number of ranks, at least 4", n > 1
		}
		m.PP, m.DP = 2, n/2
		return m, "", true
	}, apply: pipeline(strategies.Schedule1F1B), smallest: true},
	{Name: "zero1", Help: "dp=n with ZeRO-1 (optimizer state sharded)", mesh: dpMesh, apply: zero(1), smallest: true},
	{Name: "zero2", Help: "dp=n with ZeRO-2 (and gradients)", mesh: dpMesh, apply: zero(2), smallest: true},
	{Name: "zero3", Help: "dp=n with ZeRO-3 (and parameters, gathered per layer)", mesh: dpMesh, apply: zero(3), smallest: true},
	{Name: "recompute", Help: "one rank with full activation recompute (the 1 of --meshes)", mesh: onlyOne,
		apply: func(st *strategies.Strategy) error { st.Recompute = strategies.RecomputeFull; return nil }},
}

// DefaultFamilies are the families of a plain `tpsim compare`: every way of splitting the model
// once, at the sizes --meshes gives (pipelines where the model has a layer per stage).
//
// ZeRO-1 and -2 are left to --strategies: with compare's default SGD there is no optimizer state
// to shard, so zero1 differs from dp only in its gathers; zero3 shows the gathers of every layer.
var DefaultFamilies = []string{"single", "dp", "tp", "hybrid", "pp", "gpipe", "zero3", "recompute"}

// FamilyNames lists the names of Families.
func FamilyNames() []string {
	out := make([]string, len(Families))
	for i, f := range Families {
		out[i] = f.Name
	}
	return out
}

// FamilyHelp is one line per family, for --help.
func FamilyHelp() string {
	var b strings.Builder
	for _, f := range Families {
		once := ""
		if f.smallest {
			once = " (smallest only)"
		}
		fmt.Fprintf(&b, "  %-10s %s%s\n", f.Name, f.Help, once)
	}
	return b.String()
}

// FamilyNamed returns the family called name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// sorted returns the numbers in meshes in increasing order.
func sorted(meshes []int) []int {
	s := slices.Clone(meshes)
	slices.Sort(s)
	return s
}

// GridPoint is one (family, mesh) to run; Apply finishes its resolved strategy.
type GridPoint struct {
	Strategy string
	Mesh     strategies.Mesh
	family   Family
}

// Apply changes st, resolved for the point's mesh, into the family's strategy; an error says why
// the point cannot run (it is skipped with that reason).
func (g GridPoint) Apply(st *strategies.Strategy) error {
	if g.family.apply == nil {
		return nil
	}
	return g.family.apply(st)
}

// Grid lists the points of the families on the numbers of ranks in meshes, each once, in the
// order of families then meshes; what cannot be laid out is returned with the reason. An unknown
// family is an error naming the valid ones.
func Grid(families []string, meshes []int) ([]GridPoint, []Skipped, error) {
	seen := map[string]bool{}
	var pts []GridPoint
	var skipped []Skipped
	for _, name := range families {
		f, ok := FamilyNamed(name)
		if !ok {
			return nil, nil, fmt.Errorf("unknown strategy %q%s; valid: %s", name, suggest.DidYouMean(name, FamilyNames()), strings.Join(FamilyNames(), ", "))
		}
		order := meshes
		if f.smallest {
			order = sorted(meshes)
		}
		done := false
		for _, n := range order {
			if done {
				break
			}
			m, skip, ok := f.mesh(n)
			switch {
			case skip != "":
				skipped = append(skipped, Skipped{Strategy: f.Name, Mesh: fmt.Sprint(n), Reason: skip})
				continue
			case !ok:
				continue
			}
			if k := f.Name + " " + m.String(); !seen[k] {
				seen[k] = true
				pts = append(pts, GridPoint{Strategy: f.Name, Mesh: m, family: f})
			}
			done = f.smallest
		}
	}
	return pts, skipped, nil
}
