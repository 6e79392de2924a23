package comm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

const seed = 20240601

// sizes include lengths that no p in 2..8 divides, lengths below p (empty chunks) and 0.
var sizes = []int{0, 1, 7, 13, 1000}

func mustWorld(t testing.TB, dims ...Dim) *World {
	t.Helper()
	w, err := NewWorld(dims)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// testTimeout bounds every wait of the tests that run on the real clock (timedWorld): a
// collective that hangs fails its test within a minute, naming the rank, the operation and the
// rank that did not arrive, instead of stalling until go test's 10-minute limit. The failure
// tests (fail_test.go) run in synctest bubbles instead, where a deadlock fails at once.
const testTimeout = 30 * time.Second

// timedWorld is mustWorld with testTimeout.
func timedWorld(t testing.TB, dims ...Dim) *World {
	t.Helper()
	w, err := NewWorld(dims, WithTimeout(testTimeout))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// randData returns n values in [-1, 1) from a PCG seeded with (seed, rank).
func randData(rank, n int) []float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)))
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// serialSum is the reference all-reduce: a float64 sum in rank order.
func serialSum(in [][]float32) []float64 {
	out := make([]float64, len(in[0]))
	for _, v := range in {
		for i, x := range v {
			out[i] += float64(x)
		}
	}
	return out
}

// tol bounds the float32 rounding of a sum of at most 8 values in [-1, 1): 8 additions of error at
// most 8 * 2^-24 each is about 4e-6.
const tol = 1e-5

func checkClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > tol {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func chunkLen(n, p, i int) int {
	lo, hi := ChunkBounds(n, p, mod(i, p))
	return hi - lo
}

// run runs fn on every rank of w and fails the test on error.
func run(t *testing.T, w *World, fn func(c *Comm) error) {
	t.Helper()
	if err := w.Run(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func group(c *Comm, dim string) *Group {
	g, err := c.Group(dim)
	if err != nil {
		panic(err)
	}
	return g
}

func TestChunkBounds(t *testing.T) {
	// Hand-derived: 7 over 3 is 3+2+2; 1 over 4 puts the element in chunk 0; 8 over 4 is 2 each.
	tests := []struct {
		n, p int
		want [][2]int
	}{
		{7, 3, [][2]int{{0, 3}, {3, 5}, {5, 7}}},
		{1, 4, [][2]int{{0, 1}, {1, 1}, {1, 1}, {1, 1}}},
		{8, 4, [][2]int{{0, 2}, {2, 4}, {4, 6}, {6, 8}}},
		{0, 2, [][2]int{{0, 0}, {0, 0}}},
		{13, 1, [][2]int{{0, 13}}},
	}
	for _, tt := range tests {
		for i, w := range tt.want {
			lo, hi := ChunkBounds(tt.n, tt.p, i)
			if lo != w[0] || hi != w[1] {
				t.Errorf("ChunkBounds(%d, %d, %d) = [%d, %d), want [%d, %d)", tt.n, tt.p, i, lo, hi, w[0], w[1])
			}
		}
	}
	// Property: chunks tile [0, n) in order with sizes n/p or n/p+1.
	for n := range 40 {
		for p := 1; p <= 9; p++ {
			next := 0
			for i := range p {
				lo, hi := ChunkBounds(n, p, i)
				if lo != next || (hi-lo != n/p && hi-lo != n/p+1) {
					t.Fatalf("ChunkBounds(%d, %d, %d) = [%d, %d)", n, p, i, lo, hi)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("chunks of %d over %d end at %d", n, p, next)
			}
		}
	}
}

func TestNewWorldErrors(t *testing.T) {
	tests := []struct {
		dims []Dim
		want string
	}{
		{nil, "comm: mesh has no dims; give at least one, e.g. [{tp 2}]"},
		{[]Dim{{"", 2}}, "comm: mesh dim with an empty name; name every dim, e.g. tp"},
		{[]Dim{{"tp", 2}, {"tp", 2}}, `comm: mesh dim "tp" appears twice; give each dim once`},
		{[]Dim{{"tp", 0}}, "comm: mesh dim tp=0; sizes must be at least 1"},
		{[]Dim{{"world", 2}}, `comm: mesh dim may not be named "world" (reserved for the group of all ranks); rename it`},
		{[]Dim{{"a", 1 << 10}, {"b", 1 << 10}}, "comm: mesh a=1024,b=1024 has more than 65536 ranks; goroutine ranks share one host"},
	}
	for _, tt := range tests {
		_, err := NewWorld(tt.dims)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewWorld(%v) = %v, want %q", tt.dims, err, tt.want)
		}
	}
}

func TestMesh2D(t *testing.T) {
	// dp=2,tp=2 row-major (tp fastest): rank = 2*dp + tp, as torch.arange(4).reshape(2, 2).
	w := timedWorld(t, Dim{"dp", 2}, Dim{"tp", 2})
	if w.Size() != 4 || w.String() != "dp=2,tp=2" {
		t.Fatalf("Size() = %d, String() = %q", w.Size(), w)
	}
	tests := []struct {
		rank       int
		coords     []int
		tp, dp     []int
		tpIx, dpIx int
	}{
		{0, []int{0, 0}, []int{0, 1}, []int{0, 2}, 0, 0},
		{1, []int{0, 1}, []int{0, 1}, []int{1, 3}, 1, 0},
		{2, []int{1, 0}, []int{2, 3}, []int{0, 2}, 0, 1},
		{3, []int{1, 1}, []int{2, 3}, []int{1, 3}, 1, 1},
	}
	for _, tt := range tests {
		c := w.Comm(tt.rank)
		if got := w.Coords(tt.rank); !slices.Equal(got, tt.coords) {
			t.Errorf("Coords(%d) = %v, want %v", tt.rank, got, tt.coords)
		}
		if got := w.Rank(tt.coords); got != tt.rank {
			t.Errorf("Rank(%v) = %d, want %d", tt.coords, got, tt.rank)
		}
		tp, dp := group(c, "tp"), group(c, "dp")
		if !slices.Equal(tp.Ranks(), tt.tp) || tp.Index() != tt.tpIx || tp.Dim() != "tp" || tp.Size() != 2 {
			t.Errorf("rank %d: tp group %v index %d, want %v index %d", tt.rank, tp.Ranks(), tp.Index(), tt.tp, tt.tpIx)
		}
		if !slices.Equal(dp.Ranks(), tt.dp) || dp.Index() != tt.dpIx || dp.Dim() != "dp" {
			t.Errorf("rank %d: dp group %v index %d, want %v index %d", tt.rank, dp.Ranks(), dp.Index(), tt.dp, tt.dpIx)
		}
		if c.Rank() != tt.rank || c.WorldGroup().Index() != tt.rank || c.WorldGroup().Size() != 4 {
			t.Errorf("rank %d: Rank() = %d, world index %d", tt.rank, c.Rank(), c.WorldGroup().Index())
		}
	}
	if got := group(w.Comm(0), "tp").String(); got != "tp group [0 1]" {
		t.Errorf("String() = %q", got)
	}
	_, err := w.Comm(0).Group("pp")
	if want := `comm: mesh dp=2,tp=2 has no dim "pp"; use one of dp, tp (or world for all ranks)`; err == nil || err.Error() != want {
		t.Errorf("Group(pp) = %v, want %q", err, want)
	}
}

func TestMesh3DGroups(t *testing.T) {
	// Property: a group holds exactly the ranks that share every other coordinate, in coordinate order.
	dims := []Dim{{"dp", 2}, {"pp", 3}, {"tp", 2}}
	w := timedWorld(t, dims...)
	for r := range w.Size() {
		c := w.Comm(r)
		if got := w.Rank(w.Coords(r)); got != r {
			t.Fatalf("Rank(Coords(%d)) = %d", r, got)
		}
		for d, dim := range dims {
			g := group(c, dim.Name)
			if g.Size() != dim.Size || g.Index() != c.Coords()[d] || g.Rank(g.Index()) != r {
				t.Fatalf("rank %d %s: size %d index %d", r, dim.Name, g.Size(), g.Index())
			}
			for k, m := range g.Ranks() {
				want := c.Coords()
				want[d] = k
				if !slices.Equal(w.Coords(m), want) {
					t.Fatalf("rank %d %s group member %d is rank %d at %v, want %v", r, dim.Name, k, m, w.Coords(m), want)
				}
			}
		}
	}
}

func TestAllReduce(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("p=%d/n=%d", p, n), func(t *testing.T) {
				w := timedWorld(t, Dim{"tp", p})
				in := make([][]float32, p)
				out := make([][]float32, p)
				for r := range p {
					in[r] = randData(r, n)
					out[r] = slices.Clone(in[r])
				}
				run(t, w, func(c *Comm) error { return group(c, "tp").AllReduce(out[c.Rank()]) })
				want := serialSum(in)
				for r := range p {
					checkClose(t, fmt.Sprintf("rank %d", r), out[r], want)
					if !slices.Equal(out[r], out[0]) {
						t.Errorf("rank %d result differs from rank 0's in its bits", r)
					}
					// Ring: rank r sends every chunk but r in the reduce-scatter and every chunk but
					// r+1 in the all-gather.
					wantBytes := 4 * int64(2*n-chunkLen(n, p, r)-chunkLen(n, p, r+1))
					checkStats(t, w.Comm(r), KindAllReduce, "tp", p, 2*(p-1), wantBytes)
				}
			})
		}
	}
}

// checkStats checks one rank's Stats after one call: a single row, or none for p = 1.
func checkStats(t *testing.T, c *Comm, kind Kind, dim string, p, msgs int, bytes int64) {
	t.Helper()
	s := c.Stats()
	if p == 1 {
		if len(s) != 0 {
			t.Errorf("rank %d: Stats() = %v, want no rows for a group of 1", c.Rank(), s)
		}
		return
	}
	want := Stats{{kind, dim}: {Calls: 1, Messages: int64(msgs), Bytes: bytes}}
	if len(s) != 1 || s[Key{kind, dim}] != want[Key{kind, dim}] {
		t.Errorf("rank %d: Stats() = %v, want %v", c.Rank(), s, want)
	}
}

func TestReduceScatter(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("p=%d/n=%d", p, n), func(t *testing.T) {
				w := timedWorld(t, Dim{"tp", p})
				in := make([][]float32, p)
				out := make([][]float32, p)
				for r := range p {
					in[r] = randData(r, n)
					out[r] = make([]float32, chunkLen(n, p, r))
				}
				src := make([][]float32, p)
				for r := range p {
					src[r] = slices.Clone(in[r])
				}
				run(t, w, func(c *Comm) error {
					r := c.Rank()
					return group(c, "tp").ReduceScatter(out[r], src[r])
				})
				want := serialSum(in)
				for r := range p {
					lo, hi := ChunkBounds(n, p, r)
					checkClose(t, fmt.Sprintf("rank %d", r), out[r], want[lo:hi])
					if !slices.Equal(src[r], in[r]) {
						t.Errorf("rank %d: src was modified", r)
					}
					checkStats(t, w.Comm(r), KindReduceScatter, "tp", p, p-1, 4*int64(n-chunkLen(n, p, r)))
				}
			})
		}
	}
}

// TestReduceScatterOverlap runs ReduceScatter with dst inside src: exactly the member's own chunk
// (summed straight into place), the first chunk (overlapping a chunk another member reads while
// this one writes) and shifted by one element, and checks the result against a serial sum. It
// also checks that every member's result has the bits of the all-reduce's chunk.
func TestReduceScatterOverlap(t *testing.T) {
	for _, p := range []int{2, 3, 4} {
		const n = 1000
		for _, where := range []string{"own", "first", "shifted"} {
			t.Run(fmt.Sprintf("p=%d/%s", p, where), func(t *testing.T) {
				w := timedWorld(t, Dim{"tp", p})
				in := make([][]float32, p)
				src := make([][]float32, p)
				out := make([][]float32, p)
				ar := make([][]float32, p)
				for r := range p {
					in[r] = randData(r, n)
					src[r] = slices.Clone(in[r])
					ar[r] = slices.Clone(in[r])
				}
				run(t, w, func(c *Comm) error {
					r := c.Rank()
					lo, hi := ChunkBounds(n, p, r)
					switch where {
					case "own":
						out[r] = src[r][lo:hi]
					case "first":
						out[r] = src[r][:hi-lo]
					default:
						out[r] = src[r][1 : 1+hi-lo]
					}
					g := group(c, "tp")
					if err := g.ReduceScatter(out[r], src[r]); err != nil {
						return err
					}
					out[r] = slices.Clone(out[r])
					return g.AllReduce(ar[r])
				})
				want := serialSum(in)
				for r := range p {
					lo, hi := ChunkBounds(n, p, r)
					checkClose(t, fmt.Sprintf("rank %d", r), out[r], want[lo:hi])
					if !slices.Equal(out[r], ar[r][lo:hi]) {
						t.Errorf("rank %d: reduce-scatter chunk differs in bits from the all-reduce's", r)
					}
				}
			})
		}
	}
}

func TestAllGather(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("p=%d/n=%d", p, n), func(t *testing.T) {
				w := timedWorld(t, Dim{"tp", p})
				full := randData(99, n) // the tensor whose chunks the ranks hold
				out := make([][]float32, p)
				for r := range p {
					out[r] = make([]float32, n)
				}
				run(t, w, func(c *Comm) error {
					r := c.Rank()
					lo, hi := ChunkBounds(n, p, r)
					return group(c, "tp").AllGather(out[r], slices.Clone(full[lo:hi]))
				})
				for r := range p {
					if !slices.Equal(out[r], full) {
						t.Errorf("rank %d: got %v, want %v", r, out[r], full)
					}
					checkStats(t, w.Comm(r), KindAllGather, "tp", p, p-1, 4*int64(n-chunkLen(n, p, r+1)))
				}
			})
		}
	}
}

func TestAllGatherInPlace(t *testing.T) {
	// src is the rank's own chunk of dst, as FSDP all-gathers into a flat buffer.
	const p, n = 3, 7
	w := timedWorld(t, Dim{"dp", p})
	full := randData(5, n)
	out := make([][]float32, p)
	run(t, w, func(c *Comm) error {
		r := c.Rank()
		buf := make([]float32, n)
		lo, hi := ChunkBounds(n, p, r)
		copy(buf[lo:hi], full[lo:hi])
		out[r] = buf
		return group(c, "dp").AllGather(buf, buf[lo:hi])
	})
	for r := range p {
		if !slices.Equal(out[r], full) {
			t.Errorf("rank %d: got %v, want %v", r, out[r], full)
		}
	}
}

func TestBroadcast(t *testing.T) {
	for p := 1; p <= 8; p++ {
		ns := sizes
		if p <= 3 {
			ns = append(ns, 2*broadcastSegment+3) // three pipeline segments
		}
		for _, n := range ns {
			for root := range p {
				w := timedWorld(t, Dim{"pp", p})
				want := randData(root, n)
				out := make([][]float32, p)
				run(t, w, func(c *Comm) error {
					r := c.Rank()
					out[r] = make([]float32, n)
					if r == root {
						copy(out[r], want)
					}
					return group(c, "pp").Broadcast(out[r], root)
				})
				segs := max(1, (n+broadcastSegment-1)/broadcastSegment)
				for r := range p {
					if !slices.Equal(out[r], want) {
						t.Fatalf("p=%d n=%d root=%d: rank %d got a different buffer", p, n, root, r)
					}
					// Chain root, root+1, ..., root-1: all but the last send the whole buffer.
					msgs, bytes := segs, 4*int64(n)
					if mod(r-root, p) == p-1 {
						msgs, bytes = 0, 0
					}
					checkStats(t, w.Comm(r), KindBroadcast, "pp", p, msgs, bytes)
				}
			}
		}
	}
}

func TestAllToAll(t *testing.T) {
	for p := 1; p <= 8; p++ {
		for _, k := range []int{0, 1, 3, 125} {
			n := p * k
			w := timedWorld(t, Dim{"ep", p})
			in := make([][]float32, p)
			out := make([][]float32, p)
			for r := range p {
				in[r] = randData(r, n)
				out[r] = make([]float32, n)
			}
			run(t, w, func(c *Comm) error {
				r := c.Rank()
				return group(c, "ep").AllToAll(out[r], in[r])
			})
			for r := range p {
				for i := range p {
					// Chunk i of rank r's dst is chunk r of rank i's src.
					if !slices.Equal(out[r][i*k:(i+1)*k], in[i][r*k:(r+1)*k]) {
						t.Fatalf("p=%d k=%d: rank %d chunk %d wrong", p, k, r, i)
					}
				}
				checkStats(t, w.Comm(r), KindAllToAll, "ep", p, p-1, 4*int64((p-1)*k))
			}
		}
	}
}

func TestAllToAllInPlace(t *testing.T) {
	const p, k = 4, 5
	w := timedWorld(t, Dim{"ep", p})
	in := make([][]float32, p)
	buf := make([][]float32, p)
	for r := range p {
		in[r] = randData(r, p*k)
		buf[r] = slices.Clone(in[r])
	}
	run(t, w, func(c *Comm) error { return group(c, "ep").AllToAll(buf[c.Rank()], buf[c.Rank()]) })
	for r := range p {
		for i := range p {
			if !slices.Equal(buf[r][i*k:(i+1)*k], in[i][r*k:(r+1)*k]) {
				t.Fatalf("rank %d chunk %d wrong", r, i)
			}
		}
	}
}

func TestBytesFormulas(t *testing.T) {
	// Expected bytes per rank from docs/architecture.md's bytes-per-rank table, n*4 bytes of float32.
	tests := []struct {
		name  string
		kind  Kind
		p, n  int
		bytes []int64 // per rank
	}{
		// Linear(100,1000) weight gradient, 2(p-1)/p * 111010*4 with p = 2: 444040.
		{"all_reduce 111010 over 2", KindAllReduce, 2, 111010, []int64{444040, 444040}},
		// A 10x10 activation, 2(1)/2 * 400.
		{"all_reduce 100 over 2", KindAllReduce, 2, 100, []int64{400, 400}},
		// 4 MiB over 4: 2*3/4 * 4194304.
		{"all_reduce 4MiB over 4", KindAllReduce, 4, 1 << 20, []int64{6291456, 6291456, 6291456, 6291456}},
		// 7 over 3 = chunks 3,2,2: rank r sends 14 - |c_r| - |c_r+1| elements: 9, 10, 9.
		{"all_reduce 7 over 3", KindAllReduce, 3, 7, []int64{36, 40, 36}},
		// (p-1)/p * 4000 = 3000.
		{"reduce_scatter 1000 over 4", KindReduceScatter, 4, 1000, []int64{3000, 3000, 3000, 3000}},
		// 7 over 3: rank r sends 7 - |c_r| elements: 4, 5, 5.
		{"reduce_scatter 7 over 3", KindReduceScatter, 3, 7, []int64{16, 20, 20}},
		// (p-1)/p * 4000 with p = 8 = 3500.
		{"all_gather 1000 over 8", KindAllGather, 8, 1000, []int64{3500, 3500, 3500, 3500, 3500, 3500, 3500, 3500}},
		// 7 over 3: rank r sends 7 - |c_r+1| elements: 5, 5, 4.
		{"all_gather 7 over 3", KindAllGather, 3, 7, []int64{20, 20, 16}},
		{"all_to_all 1000 over 4", KindAllToAll, 4, 1000, []int64{3000, 3000, 3000, 3000}},
		// Chain 0 -> 1 -> 2 -> 3: the last rank sends nothing.
		{"broadcast 1000 over 4", KindBroadcast, 4, 1000, []int64{4000, 4000, 4000, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := timedWorld(t, Dim{"tp", tt.p})
			run(t, w, func(c *Comm) error {
				g := group(c, "tp")
				lo, hi := ChunkBounds(tt.n, tt.p, g.Index())
				switch tt.kind {
				case KindAllReduce:
					return g.AllReduce(make([]float32, tt.n))
				case KindReduceScatter:
					return g.ReduceScatter(make([]float32, hi-lo), make([]float32, tt.n))
				case KindAllGather:
					return g.AllGather(make([]float32, tt.n), make([]float32, hi-lo))
				case KindAllToAll:
					return g.AllToAll(make([]float32, tt.n), make([]float32, tt.n))
				default:
					return g.Broadcast(make([]float32, tt.n), 0)
				}
			})
			var sum, wantSum int64
			for r := range tt.p {
				got := w.Comm(r).Stats().Bytes(tt.kind, "tp")
				sum += got
				wantSum += tt.bytes[r]
				if got != tt.bytes[r] {
					t.Errorf("rank %d sent %d bytes, want %d", r, got, tt.bytes[r])
				}
			}
			if sum != wantSum {
				t.Errorf("group sent %d bytes, want %d", sum, wantSum)
			}
		})
	}
}

func TestMesh2DCollectives(t *testing.T) {
	// Tensor-parallel all-reduce then data-parallel all-reduce is a sum over all four ranks.
	w := timedWorld(t, Dim{"dp", 2}, Dim{"tp", 2})
	const n = 10
	in := make([][]float32, 4)
	out := make([][]float32, 4)
	for r := range 4 {
		in[r] = randData(r, n)
		out[r] = slices.Clone(in[r])
	}
	run(t, w, func(c *Comm) error {
		buf := out[c.Rank()]
		if err := group(c, "tp").AllReduce(buf); err != nil {
			return err
		}
		return group(c, "dp").AllReduce(buf)
	})
	want := serialSum(in)
	for r := range 4 {
		checkClose(t, fmt.Sprintf("rank %d", r), out[r], want)
		s := w.Comm(r).Stats()
		// 2(p-1)/p * 40 bytes with p = 2, once per dim.
		if s.Bytes(KindAllReduce, "tp") != 40 || s.Bytes(KindAllReduce, "dp") != 40 || s.Total().Bytes != 80 || s.Total().Calls != 2 {
			t.Errorf("rank %d: Stats() = %v", r, s)
		}
	}
	if got, want := w.Comm(0).Stats().String(), "dp all_reduce: 1 calls, 2 messages, 40 B\ntp all_reduce: 1 calls, 2 messages, 40 B\n"; got != want {
		t.Errorf("Stats().String() = %q, want %q", got, want)
	}
	w.Comm(0).ResetStats()
	if s := w.Comm(0).Stats(); len(s) != 0 {
		t.Errorf("after ResetStats: %v", s)
	}
}

func TestSendRecv(t *testing.T) {
	// A ring shift by global rank, then a shift inside each tp group by index.
	w := timedWorld(t, Dim{"pp", 2}, Dim{"tp", 3})
	const n = 13
	got := make([][]float32, 6)
	got2 := make([][]float32, 6)
	run(t, w, func(c *Comm) error {
		r, p := c.Rank(), c.World().Size()
		got[r] = make([]float32, n)
		if err := c.Send(mod(r+1, p), randData(r, n)); err != nil {
			return err
		}
		if err := c.Recv(mod(r-1, p), got[r]); err != nil {
			return err
		}
		g := group(c, "tp")
		got2[r] = make([]float32, 1)
		if err := g.Send(mod(g.Index()+1, g.Size()), []float32{float32(r)}); err != nil {
			return err
		}
		return g.Recv(mod(g.Index()-1, g.Size()), got2[r])
	})
	for r := range 6 {
		if !slices.Equal(got[r], randData(mod(r-1, 6), n)) {
			t.Errorf("rank %d received the wrong buffer", r)
		}
		g := group(w.Comm(r), "tp")
		if want := float32(g.Rank(mod(g.Index()-1, 3))); got2[r][0] != want {
			t.Errorf("rank %d received %v from its tp group, want %v", r, got2[r][0], want)
		}
		s := w.Comm(r).Stats()
		if s[Key{KindSend, WorldDim}] != (Count{1, 1, 4 * n}) || s[Key{KindSend, "tp"}] != (Count{1, 1, 4}) || len(s) != 2 {
			t.Errorf("rank %d: Stats() = %v", r, s)
		}
	}
}

func TestSendCopiesPayload(t *testing.T) {
	// The sender reuses its buffer before the receiver reads: the message must hold a copy.
	w := timedWorld(t, Dim{"pp", 2})
	var got [3]float32
	run(t, w, func(c *Comm) error {
		if c.Rank() == 0 {
			buf := []float32{1}
			for i := range 3 {
				buf[0] = float32(i + 1)
				if err := c.Send(1, buf); err != nil {
					return err
				}
			}
			buf[0] = -1
			return nil
		}
		for i := range got {
			if err := c.Recv(0, got[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	})
	if got != [3]float32{1, 2, 3} {
		t.Errorf("received %v, want [1 2 3]", got)
	}
}

func TestSendThenCollective(t *testing.T) {
	// A queued Send is not taken by a collective that the receiver calls before its Recv.
	w := timedWorld(t, Dim{"pp", 2})
	got := make([]float32, 1)
	sums := make([][]float32, 2)
	run(t, w, func(c *Comm) error {
		g := group(c, "pp")
		sums[c.Rank()] = []float32{float32(c.Rank() + 1)}
		if c.Rank() == 0 {
			if err := g.Send(1, []float32{42}); err != nil {
				return err
			}
			return g.AllReduce(sums[0])
		}
		if err := g.AllReduce(sums[1]); err != nil {
			return err
		}
		return g.Recv(0, got)
	})
	if got[0] != 42 || sums[0][0] != 3 || sums[1][0] != 3 {
		t.Errorf("got %v, sums %v", got, sums)
	}
}

func TestManyRounds(t *testing.T) {
	// Ranks run ahead of each other through many collectives on two dims; results stay exact
	// because the inputs are small integers.
	w := timedWorld(t, Dim{"dp", 2}, Dim{"tp", 4})
	const rounds, n = 50, 37
	run(t, w, func(c *Comm) error {
		tp, dp := group(c, "tp"), group(c, "dp")
		buf := make([]float32, n)
		shard := make([]float32, chunkLen(n, 4, tp.Index()))
		for i := range rounds {
			for j := range buf {
				buf[j] = float32(c.Rank() + i + j%3)
			}
			if err := tp.ReduceScatter(shard, buf); err != nil {
				return err
			}
			if err := dp.AllReduce(shard); err != nil {
				return err
			}
			if err := tp.AllGather(buf, shard); err != nil {
				return err
			}
			for j, x := range buf {
				// Sum over 8 ranks of rank + i + j%3 = 28 + 8i + 8(j%3).
				if want := float32(28 + 8*i + 8*(j%3)); x != want {
					return fmt.Errorf("round %d: buf[%d] = %v, want %v", i, j, x, want)
				}
			}
			if err := tp.Broadcast(buf, i%4); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestTracer(t *testing.T) {
	var mu sync.Mutex
	var events []Event
	tr := TracerFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})
	w, err := NewWorld([]Dim{{"tp", 2}}, WithTracer(tr))
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, func(c *Comm) error {
		if err := group(c, "tp").AllReduce(make([]float32, 100)); err != nil {
			return err
		}
		if c.Rank() == 0 {
			return c.Send(1, make([]float32, 3))
		}
		return c.Recv(0, make([]float32, 3))
	})
	if len(events) != 4 {
		t.Fatalf("%d events, want 4: %v", len(events), events)
	}
	for _, e := range events {
		if e.End.Before(e.Start) || e.Err != nil {
			t.Errorf("event %+v", e)
		}
		switch e.Kind {
		case KindAllReduce:
			if e.Dim != "tp" || e.Bytes != 400 || e.Messages != 2 || e.Peer != -1 || e.Elems != 100 || !slices.Equal(e.Group, []int{0, 1}) {
				t.Errorf("event %+v", e)
			}
		case KindSend:
			if e.Rank != 0 || e.Peer != 1 || e.Bytes != 12 || e.Dim != WorldDim {
				t.Errorf("event %+v", e)
			}
		case KindRecv:
			if e.Rank != 1 || e.Peer != 0 || e.Bytes != 0 {
				t.Errorf("event %+v", e)
			}
		default:
			t.Errorf("event %+v", e)
		}
	}
}

func TestRunTwice(t *testing.T) {
	// A World runs again after a run; counters add up until ResetStats.
	w := timedWorld(t, Dim{"tp", 2})
	for range 2 {
		run(t, w, func(c *Comm) error { return group(c, "tp").AllReduce(make([]float32, 100)) })
	}
	if got := w.Comm(1).Stats()[Key{KindAllReduce, "tp"}]; got != (Count{2, 4, 800}) {
		t.Errorf("Stats = %+v, want 2 calls, 4 messages, 800 B", got)
	}
}

func TestShapePanics(t *testing.T) {
	w := timedWorld(t, Dim{"tp", 2})
	err := w.Run(context.Background(), func(c *Comm) error {
		if c.Rank() == 0 {
			return group(c, "tp").ReduceScatter(make([]float32, 3), make([]float32, 7))
		}
		return nil
	})
	want := "rank 0 panicked: comm: reduce_scatter on tp group [0 1]: dst has 3 elements; chunk 0 of 7 elements over 2 ranks has 4"
	if err == nil || err.Error() != want {
		t.Errorf("Run() = %v, want %q", err, want)
	}
}

func TestWithoutRun(t *testing.T) {
	// Comms also work from goroutines the caller starts, and Stats may be read meanwhile.
	w := timedWorld(t, Dim{"tp", 3})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for r := range 3 {
		wg.Go(func() {
			c := w.Comm(r)
			for range 20 {
				if err := group(c, "tp").AllReduce(make([]float32, 30)); err != nil {
					errs[r] = err
					return
				}
			}
		})
	}
	for range 10 {
		_ = w.Comm(0).Stats().Total()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	// 20 calls of 2(p-1)/p * 120 bytes = 160 bytes with p = 3, in 2(p-1) = 4 messages.
	if got := w.Comm(2).Stats()[Key{KindAllReduce, "tp"}]; got != (Count{20, 80, 3200}) {
		t.Errorf("Stats = %+v", got)
	}
}
