package strategies

import (
	"fmt"
	"strconv"
	"strings"
)

// Dim is a mesh dimension. Ranks are numbered with pp outermost and tp fastest (rank =
// ((pp*DP + dp)*CP + cp)*TP + tp), Megatron-LM's default order, so that a tensor-parallel group is
// a run of consecutive devices and stays inside a node when tp divides the node size.
type Dim string

// The mesh dimensions.
const (
	DimPP Dim = "pp"
	DimDP Dim = "dp"
	DimCP Dim = "cp"
	DimTP Dim = "tp"
)

// DimOrder is the order of mesh dimensions from outermost to fastest-varying.
var DimOrder = []Dim{DimPP, DimDP, DimCP, DimTP}

// DimNames are DimOrder's names.
func DimNames() []string {
	s := make([]string, len(DimOrder))
	for i, d := range DimOrder {
		s[i] = string(d)
	}
	return s
}

// Mesh is a named device mesh. Sizes of absent dimensions are 1.
type Mesh struct {
	PP, DP, CP, TP int
}

// Size returns the size of dimension name; it panics on a name not in DimOrder.
func (m Mesh) Size(name Dim) int {
	switch name {
	case DimPP:
		return m.PP
	case DimDP:
		return m.DP
	case DimCP:
		return m.CP
	case DimTP:
		return m.TP
	}
	panic("strategies: unknown mesh dimension " + name)
}

// Devices is the number of ranks in the mesh.
func (m Mesh) Devices() int { return m.PP * m.DP * m.CP * m.TP }

// Meets reports whether m's ranks meet at collectives: m has a dp, cp or tp group of more than
// one. A pipeline's ranks alone meet only point to point.
func (m Mesh) Meets() bool { return m.DP*m.CP*m.TP > 1 }

// Stride is the distance in rank numbers between neighbours of a group along dimension name.
func (m Mesh) Stride(name Dim) int {
	s := 1
	for i := len(DimOrder) - 1; i >= 0; i-- {
		if DimOrder[i] == name {
			return s
		}
		s *= m.Size(DimOrder[i])
	}
	panic("strategies: unknown mesh dimension " + name)
}

// Coords returns the coordinate of rank along each dimension of DimOrder.
func (m Mesh) Coords(rank int) map[Dim]int {
	c := map[Dim]int{}
	for i := len(DimOrder) - 1; i >= 0; i-- {
		n := m.Size(DimOrder[i])
		c[DimOrder[i]] = rank % n
		rank /= n
	}
	return c
}

// String prints the mesh with the dimensions larger than 1, e.g. "dp=2,tp=4"; "dp=1" for one device.
func (m Mesh) String() string {
	var parts []string
	for _, d := range DimOrder {
		if n := m.Size(d); n > 1 {
			parts = append(parts, fmt.Sprintf("%s=%d", d, n))
		}
	}
	if len(parts) == 0 {
		return "dp=1"
	}
	return strings.Join(parts, ",")
}

// ParseMesh reads "dp=2,tp=4,pp=2" (any order, any subset of pp, dp, cp, tp; missing ones are 1).
func ParseMesh(s string) (Mesh, error) {
	m := Mesh{1, 1, 1, 1}
	s = strings.TrimSpace(s)
	if s == "" {
		return m, fmt.Errorf("strategies: empty mesh; write it as \"dp=2,tp=4\" with dimensions pp, dp, cp, tp")
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, err := splitKV(part)
		if err != nil {
			return m, err
		}
		if !isMeshDim(k) {
			return m, fmt.Errorf("strategies: unknown mesh dimension %q; valid dimensions: %s", k, strings.Join(DimNames(), ", "))
		}
		if err := setMeshDim(&m, k, v, seen); err != nil {
			return m, err
		}
	}
	return m, nil
}

func isMeshDim(k string) bool {
	for _, d := range DimOrder {
		if string(d) == k {
			return true
		}
	}
	return false
}

func setMeshDim(m *Mesh, k, v string, seen map[string]bool) error {
	if seen[k] {
		return fmt.Errorf("strategies: mesh dimension %q given twice", k)
	}
	seen[k] = true
	n, err := positive(k, v)
	if err != nil {
		return err
	}
	switch Dim(k) {
	case DimPP:
		m.PP = n
	case DimDP:
		m.DP = n
	case DimCP:
		m.CP = n
	case DimTP:
		m.TP = n
	}
	return nil
}

func splitKV(part string) (string, string, error) {
	part = strings.TrimSpace(part)
	k, v, ok := strings.Cut(part, "=")
	k, v = strings.TrimSpace(strings.ToLower(k)), strings.TrimSpace(v)
	if !ok || k == "" || v == "" {
		return "", "", fmt.Errorf("strategies: %q is not key=value; write options as \"dp=2,tp=4,mbs=1\"", part)
	}
	return k, v, nil
}

func positive(k, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("strategies: %s=%q is not an integer", k, v)
	}
	if n <= 0 {
		return 0, fmt.Errorf("strategies: %s=%d; it must be a positive integer", k, n)
	}
	return n, nil
}

// divisors returns the divisors of n in increasing order, by trial division up to sqrt(n): each
// d <= sqrt(n) that divides n brings its cofactor n/d, so the work is sqrt(n), not n (a plan of
// 2^30 devices spun for 13 s listing divisors one by one).
func divisors(n int) []int {
	var low, high []int
	for d := 1; d <= n/d; d++ {
		if n%d == 0 {
			low = append(low, d)
			if d != n/d {
				high = append(high, n/d)
			}
		}
	}
	for i := len(high) - 1; i >= 0; i-- {
		low = append(low, high[i])
	}
	return low
}

func intsString(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return "{" + strings.Join(s, ",") + "}"
}

// DivisorList lists the divisors of n as "{1,2,4}", for error messages that say which values work.
func DivisorList(n int) string { return intsString(divisors(n)) }
