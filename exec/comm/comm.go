package comm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind names a collective or point-to-point operation, as recorded in Stats, Events and errors.
type Kind string

// The kinds of operation. Stats only ever holds the kinds that send data; KindRecv appears in
// Events and errors.
const (
	KindAllReduce     Kind = "all_reduce"
	KindAllGather     Kind = "all_gather"
	KindReduceScatter Kind = "reduce_scatter"
	KindBroadcast     Kind = "broadcast"
	KindAllToAll      Kind = "all_to_all"
	KindSend          Kind = "send"
	KindRecv          Kind = "recv"
)

// Key identifies a row of Stats: an operation kind on a mesh dim (WorldDim for the world group).
type Key struct {
	Kind Kind
	Dim  string
}

// Count is what one rank did for one Key.
type Count struct {
	Calls    int64 // calls on a group of size > 1
	Messages int64 // messages this rank sent
	Bytes    int64 // payload bytes this rank sent: 4 per float32 element
}

// Stats are the counters of one rank, by operation kind and mesh dim. Calls on a group of size 1
// are no-ops and leave no row.
type Stats map[Key]Count

// Bytes returns the bytes sent for kind on dim.
func (s Stats) Bytes(kind Kind, dim string) int64 { return s[Key{kind, dim}].Bytes }

// Messages returns the messages sent for kind on dim.
func (s Stats) Messages(kind Kind, dim string) int64 { return s[Key{kind, dim}].Messages }

// Total sums every row.
func (s Stats) Total() Count {
	var t Count
	for _, c := range s {
		t.Calls += c.Calls
		t.Messages += c.Messages
		t.Bytes += c.Bytes
	}
	return t
}

// String lists the rows sorted by dim then kind, one a line: "tp all_reduce: 2 calls, 4 messages, 800 B".
func (s Stats) String() string {
	keys := make([]Key, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Dim != keys[j].Dim {
			return keys[i].Dim < keys[j].Dim
		}
		return keys[i].Kind < keys[j].Kind
	})
	var b strings.Builder
	for _, k := range keys {
		c := s[k]
		fmt.Fprintf(&b, "%s %s: %d calls, %d messages, %d B\n", k.Dim, k.Kind, c.Calls, c.Messages, c.Bytes)
	}
	return b.String()
}

// Event is one call of one rank, for a trace.
type Event struct {
	Rank     int    // global rank of the caller
	Kind     Kind   // KindSend and KindRecv for point-to-point calls
	Dim      string // mesh dim of the group, or WorldDim
	Group    []int  // global ranks of the group; shared, do not modify
	Peer     int    // global rank of the other side of a send or recv; -1 for collectives
	Elems    int    // float32 elements of the call's buffer (the full length n for collectives)
	Messages int64  // messages this rank sent
	Bytes    int64  // payload bytes this rank sent
	Start    time.Time
	End      time.Time
	Err      error // nil on success
}

// Tracer receives an Event after each call on a group of size > 1. Trace is called from the rank
// goroutines, concurrently: it must be safe for concurrent use, and should be quick.
type Tracer interface {
	Trace(Event)
}

// TracerFunc adapts a function to a Tracer.
type TracerFunc func(Event)

// Trace calls f(e).
func (f TracerFunc) Trace(e Event) { f(e) }

// Comm is the communicator of one rank. A Comm is used by its rank's goroutine only, except Stats
// and ResetStats, which are safe to call from any goroutine.
type Comm struct {
	w      *World
	rank   int
	coords []int
	groups map[string]*Group // by dim name, and WorldDim

	mu    sync.Mutex
	stats Stats
}

// Rank returns this rank's global rank.
func (c *Comm) Rank() int { return c.rank }

// Coords returns this rank's mesh coordinates.
func (c *Comm) Coords() []int { return slices.Clone(c.coords) }

// World returns the World this Comm belongs to.
func (c *Comm) World() *World { return c.w }

// Context returns the context of the current Run: it is canceled when the world is aborted, so a
// rank that waits on something else can stop. Outside Run it is context.Background().
func (c *Comm) Context() context.Context { return c.w.st.Load().ctx }

// Group returns this rank's process group along the mesh dim named dim: the ranks that share all
// other coordinates with it. Group(WorldDim) is the group of all ranks.
func (c *Comm) Group(dim string) (*Group, error) {
	if g, ok := c.groups[dim]; ok {
		return g, nil
	}
	names := make([]string, len(c.w.dims))
	for i, d := range c.w.dims {
		names[i] = d.Name
	}
	return nil, fmt.Errorf("comm: mesh %s has no dim %q; use one of %s (or %s for all ranks)",
		c.w, dim, strings.Join(names, ", "), WorldDim)
}

// WorldGroup returns the group of all ranks; its index is the global rank.
func (c *Comm) WorldGroup() *Group { return c.groups[WorldDim] }

// Send sends a copy of buf to global rank dst, on the world group. See Group.Send.
func (c *Comm) Send(dst int, buf []float32) error { return c.WorldGroup().Send(dst, buf) }

// Recv receives the next message from global rank src into buf, on the world group. See Group.Recv.
func (c *Comm) Recv(src int, buf []float32) error { return c.WorldGroup().Recv(src, buf) }

// Stats returns a copy of this rank's counters.
func (c *Comm) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(Stats, len(c.stats))
	for k, v := range c.stats {
		s[k] = v
	}
	return s
}

// ResetStats sets this rank's counters to zero.
func (c *Comm) ResetStats() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.stats)
}

func (c *Comm) count(k Key, msgs, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.stats[k]
	v.Calls++
	v.Messages += msgs
	v.Bytes += bytes
	c.stats[k] = v
}

// groupState is the part of a group shared by its members, fixed for the World's life.
type groupState struct {
	id    int
	dim   string
	ranks []int // global ranks, by group index
}

// Group is one rank's handle on a process group: the members of one mesh dim that share all other
// coordinates (or all ranks, for WorldDim). Member i of the group is the rank with coordinate i
// along the dim, so the group's order is the global rank order.
type Group struct {
	c     *Comm
	gs    *groupState
	index int
}

// Size returns the number of ranks in the group.
func (g *Group) Size() int { return len(g.gs.ranks) }

// Index returns this rank's position in the group, its coordinate along the dim.
func (g *Group) Index() int { return g.index }

// Dim returns the mesh dim name of the group (WorldDim for the world group).
func (g *Group) Dim() string { return g.gs.dim }

// Ranks returns the global ranks of the members, by group index.
func (g *Group) Ranks() []int { return slices.Clone(g.gs.ranks) }

// Rank returns the global rank of member i. It panics if i is out of range.
func (g *Group) Rank(i int) int { return g.gs.ranks[i] }

// String returns "tp group [0 1]".
func (g *Group) String() string { return groupString(g.gs) }

func groupString(gs *groupState) string {
	r := gs.ranks
	if len(r) > 16 {
		return fmt.Sprintf("%s group [%s ... %s] (%d ranks)", gs.dim, joinInts(r[:8]), joinInts(r[len(r)-2:]), len(r))
	}
	return fmt.Sprintf("%s group [%s]", gs.dim, joinInts(r))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
