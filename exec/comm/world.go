package comm

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WorldDim is the name of the group that spans every rank of a World (Comm.WorldGroup). It is the
// dim recorded in Stats and errors for point-to-point traffic addressed by global rank. A mesh dim
// may not use this name.
const WorldDim = "world"

// maxRanks bounds the size of a World: ranks are goroutines on one host.
const maxRanks = 1 << 16

// Dim is one named dimension of a device mesh, such as {"tp", 4}.
type Dim struct {
	Name string
	Size int
}

// Option configures a World.
type Option func(*options)

type options struct {
	timeout time.Duration
	tracer  Tracer
}

// WithTimeout makes every collective and point-to-point call fail when it has not completed d after
// it started (a rank that never arrives because it is stuck outside this package). The failing
// call aborts the world. Run also stops waiting for ranks that have not returned d after the world
// was aborted, and reports them as abandoned. d <= 0 means no timeout, the default.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithTracer records one Event per collective and point-to-point call of every rank.
func WithTracer(t Tracer) Option {
	return func(o *options) { o.tracer = t }
}

// World is a mesh of ranks that exchange data with collectives. Ranks are numbered row-major over
// the dims: the last dim varies fastest.
type World struct {
	dims    []Dim
	size    int
	strides []int
	opts    options
	groups  []*groupState // every group of every dim, then the world group; index = groupState.id
	comms   []*Comm

	mu      sync.Mutex
	running bool
	live    atomic.Int64 // rank goroutines started by Run that have not returned
	st      atomic.Pointer[runState]
}

// NewWorld returns a World for the mesh dims (row-major, last dim fastest). Dim names must be
// non-empty, distinct and not WorldDim; sizes must be at least 1.
func NewWorld(dims []Dim, opts ...Option) (*World, error) {
	if len(dims) == 0 {
		return nil, errors.New("comm: mesh has no dims; give at least one, e.g. [{tp 2}]")
	}
	w := &World{dims: append([]Dim(nil), dims...), size: 1, strides: make([]int, len(dims))}
	seen := map[string]bool{}
	for _, d := range dims {
		switch {
		case d.Name == "":
			return nil, errors.New("comm: mesh dim with an empty name; name every dim, e.g. tp")
		case d.Name == WorldDim:
			return nil, fmt.Errorf("comm: mesh dim may not be named %q (reserved for the group of all ranks); rename it", WorldDim)
		case seen[d.Name]:
			return nil, fmt.Errorf("comm: mesh dim %q appears twice; give each dim once", d.Name)
		case d.Size < 1:
			return nil, fmt.Errorf("comm: mesh dim %s=%d; sizes must be at least 1", d.Name, d.Size)
		}
		seen[d.Name] = true
		if w.size > maxRanks/d.Size {
			return nil, fmt.Errorf("comm: mesh %s has more than %d ranks; goroutine ranks share one host", meshString(dims), maxRanks)
		}
		w.size *= d.Size
	}
	for _, o := range opts {
		o(&w.opts)
	}
	stride := 1
	for i := len(dims) - 1; i >= 0; i-- {
		w.strides[i] = stride
		stride *= dims[i].Size
	}

	w.comms = make([]*Comm, w.size)
	for r := range w.comms {
		w.comms[r] = &Comm{w: w, rank: r, coords: w.Coords(r), groups: map[string]*Group{}, stats: Stats{}}
	}
	for d, dim := range dims {
		for base := range w.size {
			if w.comms[base].coords[d] != 0 {
				continue
			}
			gs := &groupState{id: len(w.groups), dim: dim.Name, ranks: make([]int, dim.Size)}
			for k := range gs.ranks {
				gs.ranks[k] = base + k*w.strides[d]
			}
			w.groups = append(w.groups, gs)
			for k, r := range gs.ranks {
				c := w.comms[r]
				c.groups[dim.Name] = &Group{c: c, gs: gs, index: k}
			}
		}
	}
	all := &groupState{id: len(w.groups), dim: WorldDim, ranks: make([]int, w.size)}
	for r := range all.ranks {
		all.ranks[r] = r
	}
	w.groups = append(w.groups, all)
	for r, c := range w.comms {
		c.groups[WorldDim] = &Group{c: c, gs: all, index: r}
	}
	w.st.Store(w.newRunState(context.Background(), nil))
	return w, nil
}

func meshString(dims []Dim) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprintf("%s=%d", d.Name, d.Size)
	}
	return strings.Join(parts, ",")
}

// String returns the mesh as "dp=2,tp=2".
func (w *World) String() string { return meshString(w.dims) }

// Size returns the number of ranks, the product of the dim sizes.
func (w *World) Size() int { return w.size }

// Dims returns a copy of the mesh dims.
func (w *World) Dims() []Dim { return append([]Dim(nil), w.dims...) }

// Coords returns the mesh coordinates of rank, one per dim. It panics if rank is out of range.
func (w *World) Coords(rank int) []int {
	if rank < 0 || rank >= w.size {
		panic(fmt.Sprintf("comm: rank %d out of range [0, %d)", rank, w.size))
	}
	c := make([]int, len(w.dims))
	for i, s := range w.strides {
		c[i] = rank / s % w.dims[i].Size
	}
	return c
}

// Rank returns the rank at mesh coordinates coords. It panics if coords has the wrong length or a
// coordinate is out of range.
func (w *World) Rank(coords []int) int {
	if len(coords) != len(w.dims) {
		panic(fmt.Sprintf("comm: %d coords for a %d-dim mesh %s", len(coords), len(w.dims), w))
	}
	r := 0
	for i, c := range coords {
		if c < 0 || c >= w.dims[i].Size {
			panic(fmt.Sprintf("comm: coord %s=%d out of range [0, %d)", w.dims[i].Name, c, w.dims[i].Size))
		}
		r += c * w.strides[i]
	}
	return r
}

// Comm returns the communicator of rank. It panics if rank is out of range.
func (w *World) Comm(rank int) *Comm {
	if rank < 0 || rank >= w.size {
		panic(fmt.Sprintf("comm: rank %d out of range [0, %d)", rank, w.size))
	}
	return w.comms[rank]
}

// runState is what one Run shares among its ranks: mailboxes, arrival counters and the abort
// signal. A fresh one is made for each Run, so nothing left over by an aborted run leaks into the
// next.
type runState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	abort     chan struct{} // closed once, by abortWith
	once      sync.Once
	cause     error // written before abort is closed
	causeRank int   // rank whose failure aborted the world; -1 for a canceled context

	exited []chan struct{} // exited[r] is closed when rank r's function has returned (Run only)
	errs   []error         // errs[r] is written before exited[r] is closed

	groups []*groupRun // by groupState.id
}

func (w *World) newRunState(ctx context.Context, cancel context.CancelCauseFunc) *runState {
	st := &runState{
		ctx:       ctx,
		cancel:    cancel,
		abort:     make(chan struct{}),
		causeRank: -1,
		exited:    make([]chan struct{}, w.size),
		errs:      make([]error, w.size),
		groups:    make([]*groupRun, len(w.groups)),
	}
	for r := range st.exited {
		st.exited[r] = make(chan struct{})
	}
	for i, gs := range w.groups {
		st.groups[i] = &groupRun{gs: gs, entered: make([]atomic.Int64, len(gs.ranks))}
	}
	return st
}

// abortWith aborts the world; the first call wins. rank is the rank whose failure is the cause,
// or -1.
func (st *runState) abortWith(rank int, err error) {
	st.once.Do(func() {
		st.cause, st.causeRank = err, rank
		close(st.abort)
		if st.cancel != nil {
			st.cancel(err)
		}
	})
}

// finish records that rank's function returned err. A failure aborts the world; a rank that
// returns nil only fails the calls of other ranks that wait for it.
func (st *runState) finish(rank int, err error) {
	st.errs[rank] = err
	close(st.exited[rank]) // before abort, so a rank woken by the abort sees this one as exited
	if err != nil {
		st.abortWith(rank, err)
	}
}

// status reports whether rank has returned and with what error.
func (st *runState) status(rank int) (exited bool, err error) {
	select {
	case <-st.exited[rank]:
		return true, st.errs[rank]
	default:
		return false, nil
	}
}

// PanicError is the error of a rank whose function panicked under Run.
type PanicError struct {
	Rank  int
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("rank %d panicked: %v", e.Rank, e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// RunError is the error of a Run in which some rank failed.
type RunError struct {
	Cause     error   // what aborted the world: the first failure
	CauseRank int     // the rank whose failure is Cause; -1 when the run's context was canceled
	Errs      []error // per rank: its error, nil where it returned nil
}

// Error lists the cause first, then the error of every other failed rank in rank order, one a line.
func (e *RunError) Error() string {
	var lines []string
	if e.CauseRank < 0 || e.Errs[e.CauseRank] == nil {
		lines = append(lines, rankLine(e.CauseRank, e.Cause))
	} else {
		lines = append(lines, rankLine(e.CauseRank, e.Errs[e.CauseRank]))
	}
	for r, err := range e.Errs {
		if err != nil && r != e.CauseRank {
			lines = append(lines, rankLine(r, err))
		}
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the cause and every rank's error.
func (e *RunError) Unwrap() []error {
	errs := []error{e.Cause}
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func rankLine(rank int, err error) string {
	if pe, ok := err.(*PanicError); (ok && pe.Rank == rank) || rank < 0 {
		return err.Error()
	}
	return fmt.Sprintf("rank %d: %v", rank, err)
}

// Run calls fn once per rank, each in its own goroutine, and waits for them. A panic in fn is
// recovered into a *PanicError. When a rank fails (returns an error or panics), or ctx is done, the
// world is aborted: every rank blocked in a collective returns an *Error naming the collective, the
// group and the ranks that did not arrive, and Comm.Context is canceled. A rank that returns nil
// aborts nothing, but a call of another rank that waits for it fails at once.
//
// Run returns nil when every rank returned nil, else a *RunError. Run waits for every rank to return
// unless a timeout is set (WithTimeout): then it waits at most that long after an abort and reports
// the ranks still running as abandoned; a World with abandoned ranks refuses to Run until they
// return. Run calls on one World do not overlap.
func (w *World) Run(ctx context.Context, fn func(c *Comm) error) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return errors.New("comm: World.Run is already running on this world; wait for it to return")
	}
	if n := w.live.Load(); n > 0 {
		w.mu.Unlock()
		return fmt.Errorf("comm: %d rank(s) abandoned by an earlier Run are still running; Run again once they return", n)
	}
	w.running = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
	}()

	// The ranks' context is canceled by the abort only, so that the abort's cause is recorded
	// before any rank can see the cancellation.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	st := w.newRunState(rctx, cancel)
	w.st.Store(st)
	stop := context.AfterFunc(ctx, func() {
		st.abortWith(-1, fmt.Errorf("comm: run canceled: %w", context.Cause(ctx)))
	})
	defer stop()

	var wg sync.WaitGroup
	w.live.Add(int64(w.size))
	for r := range w.size {
		wg.Go(func() {
			err := error(&goexitError{rank: r}) // kept if fn calls runtime.Goexit
			defer func() {
				st.finish(r, err)
				w.live.Add(-1)
			}()
			err = callRank(r, fn, w.comms[r])
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()

	abandoned := false
	select {
	case <-done:
	case <-st.abort:
		if d := w.opts.timeout; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-done:
			case <-t.C:
				abandoned = true
			}
			t.Stop()
		} else {
			<-done
		}
	}

	errs := make([]error, w.size)
	failed := false
	for r := range errs {
		exited, err := st.status(r)
		if !exited {
			err = fmt.Errorf("still running %v after the world was aborted; abandoned", w.opts.timeout)
		}
		errs[r] = err
		failed = failed || err != nil
	}
	if !abandoned {
		w.st.Store(w.newRunState(context.Background(), nil))
	}
	if !failed {
		return nil
	}
	select {
	case <-st.abort:
	default: // cannot happen: a failed rank aborts the world
		st.abortWith(-1, errors.New("comm: run failed"))
	}
	return &RunError{Cause: st.cause, CauseRank: st.causeRank, Errs: errs}
}

func callRank(rank int, fn func(*Comm) error, c *Comm) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Rank: rank, Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(c)
}

type goexitError struct{ rank int }

func (e *goexitError) Error() string {
	return fmt.Sprintf("rank %d exited by runtime.Goexit (t.FailNow or t.Fatal in a rank goroutine?)", e.rank)
}
