package exec

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/tpsim/tpsim/exec/comm"
	"github.com/tpsim/tpsim/exec/kernels"
	"github.com/tpsim/tpsim/exec/kernels/gemm"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/strategies"
)

// Config is one execution.
type Config struct {
	Model    *model.Model
	Strategy strategies.Strategy // run in fp32 whatever its precision says
	// Steps is the number of optimizer steps; Warmup of them are left out of the step time.
	Steps, Warmup int
	Seed          uint64
	// LR is the learning rate; 0 means 0.01 for SGD and 1e-3 for Adam.
	LR float64
	// Timeout bounds how long a rank waits for another in one collective or pipeline send or
	// receive (0: DefaultTimeout).
	Timeout time.Duration
	// Reference marks a single-device run that others are checked against (Single sets it): it
	// records each parameter's gradient magnitudes (Result.Grads) for the check's rounding floor.
	Reference bool
	// OnStep, when set, is called by global rank 0 after each step it finishes (progress).
	OnStep func(step int)
}

// OpEvent is one executed op of one rank.
type OpEvent struct {
	Step int
	// Stage is the virtual pipeline stage and Micro the microbatch the op ran for (Micro is
	// meaningless for optimizer ops).
	Stage, Micro int
	Phase        string
	Kind         string
	Module       string
	Comm         bool
	Start        time.Duration // since the run started
	End          time.Duration
}

// RankResult is what one rank measured.
type RankResult struct {
	Rank   int            `json:"rank"`
	Coords map[string]int `json:"coords"`
	// PeakBytes per category is the most live bytes of that category at once; "peak" is the
	// most live bytes in all categories at once.
	PeakBytes map[string]int64 `json:"memory_bytes"`
	// CommBytes is bytes sent per step on each mesh dimension; CommByKind per "kind/dim", and
	// CommCalls the collective calls per step per "kind/dim" (groups of more than one rank).
	CommBytes  map[string]int64 `json:"comm_bytes"`
	CommByKind map[string]int64 `json:"comm_bytes_by_kind"`
	CommCalls  map[string]int64 `json:"comm_calls_by_kind"`
	// MemoryErrors are the differences between the memory this rank held and what the Program
	// declares (rank.memoryErrors).
	MemoryErrors []string        `json:"memory_errors,omitempty"`
	StepTimes    []time.Duration `json:"-"`
	Events       []OpEvent       `json:"-"`
}

// Result is a whole run.
type Result struct {
	Losses []float64
	// Partial is true when the run stopped early: only the losses of the steps every rank
	// finished are set.
	Partial bool
	// StepTimes is, per step, the slowest rank's step time; StepTime the median after warm-up.
	StepTimes []time.Duration
	StepTime  time.Duration
	Ranks     []RankResult
	// Params are the full parameters after the last step, assembled from the shards, and
	// Initial the full parameters before the first step (the same for every mesh).
	Params, Initial map[string][]float32
	// Optimizer and LR are the optimizer and learning rate the run used.
	Optimizer strategies.Optimizer
	LR        float64
	// Grads are the gradient magnitudes of a reference run (Config.Reference) on one rank; nil
	// otherwise.
	Grads *GradStats
	// GoHeapBytes is the Go heap in use after the run (runtime.MemStats.HeapAlloc), and
	// GoTotalAllocBytes everything the run allocated on it.
	GoHeapBytes, GoTotalAllocBytes uint64
	// TrackedBytes is what the ranks' allocators hold when the run ends (live and pooled buffers,
	// counted from the slices), and GoHeapLiveBytes the Go runtime's live heap measured then
	// (runtime/metrics /gc/heap/live:bytes after a collection), which must be at least as large.
	TrackedBytes, GoHeapLiveBytes uint64
	// UntrackedAllocBytesPerStep is what the Go heap allocated per step from the warm-up to the
	// last step, not counting the result built after it (runtime/metrics /gc/heap/allocs:bytes),
	// when the allocators only recycle: the bytes that bypass them (message copies, the
	// timeline, any kernel buffer of its own); 0 with fewer than two steps after the warm-up.
	UntrackedAllocBytesPerStep uint64
	// MemoryErrors are the places where the memory the ranks really held differs from what the
	// Program declares (a lowering that forgets a saved tensor or frees one late); empty when
	// they agree.
	MemoryErrors []string
	Program      *program.Program
	// BubbleFraction is the pipeline bubble measured on the median step: the time each pipeline
	// rank (of dp and tp coordinate 0) waited in its pipeline receives, over that rank's step
	// time, averaged over the pipeline ranks; 0 without a pipeline.
	BubbleFraction float64
	// DeviceBubbleFraction is the bubble on the ranks' device clocks (deviceClock), over the
	// steps after the warm-up: the time each waited for a pipeline input that its sender had not
	// yet sent, which leaves out waits for a core when ranks outnumber the cores (the wall clock's
	// BubbleFraction counts those); DeviceClock names what timed each op:
	// "wall", or "thread-cpu" when a pipeline (pp only) has more ranks than cores.
	DeviceBubbleFraction float64
	DeviceClock          string
	// Breakdown splits StepTime as measured on the slowest rank of the median step.
	Breakdown Breakdown
}

// Breakdown is where a rank's step went: compute ops, communication (every collective blocks the
// rank here, so all of it is exposed) and the optimizer update.
type Breakdown struct {
	Step, Compute, Comm, Optimizer time.Duration
	// Bubble is the part of Comm spent waiting in pipeline receives (the pipeline's idle time).
	Bubble time.Duration
	// Rank and StepIndex say which rank and step were measured; Ops are that step's ops.
	Rank, StepIndex int
	Ops             []OpEvent
}

// Lowered returns the Program exec runs for cfg: the strategy at fp32 (exec's precision).
func Lowered(cfg Config) (*program.Program, error) {
	st := cfg.Strategy
	st.Precision = strategies.PrecisionFP32
	p, err := program.Lower(cfg.Model, st)
	if err != nil {
		return nil, err
	}
	return p, check(p)
}

// check refuses what exec cannot run, saying what to do instead.
func check(p *program.Program) error {
	st := p.Strategy
	tied := p.Model.Transformer != nil && p.Model.Transformer.Tied
	switch {
	case st.Mesh.CP > 1:
		return fmt.Errorf("exec: cp=%d: context parallel is priced by `tpsim predict` and `tpsim sim`, not executed; exec runs pp, dp and tp meshes (with zero, recompute and sp), use cp=1", st.Mesh.CP)
	case p.Model.Transformer != nil && p.Model.Transformer.Dropout > 0:
		return fmt.Errorf("exec: model %q has dropout %g; exec runs models without dropout, so that every strategy can be checked against single-device training exactly", p.Model.Name, p.Model.Transformer.Dropout)
	case tied && st.Mesh.PP > 1 && st.ZeRO > 0:
		return fmt.Errorf("exec: zero=%d with pp=%d on %q, whose output head is tied to the embedding: exec does not shard the tied embedding's gradient over dp before its all-reduce over pp; use zero=0 with pp>1 on this model, or an untied model", st.ZeRO, st.Mesh.PP, p.Model.Name)
	}
	// exec trains small models on this machine: refuse what would not fit before allocating it.
	// Per rank: parameters, gradients and Adam state (4 + 4 + 8 bytes each) and every value of
	// one microbatch at once (an upper bound of what is live); the batch itself is shared.
	var params, values int64
	for _, s := range p.Stages {
		for i := range s.Params {
			params += s.Params[i].Elems()
		}
		for i := range s.Values {
			values += s.Values[i].Elems() * 4
		}
	}
	need := int64(st.Mesh.DP*st.Mesh.TP) * (16*params + int64(p.Microbatches)*values)
	if need > MaxBytes {
		return fmt.Errorf("exec: %s on %s would hold about %.3g GiB (parameters, gradients, optimizer state and one microbatch's tensors on %d ranks); exec runs models that train on this machine, up to %d GiB: use a smaller model or batch, or price this one with `tpsim predict`",
			p.Model.Name, st.Mesh, float64(need)/(1<<30), st.Mesh.Devices(), MaxBytes>>30)
	}
	return nil
}

// DefaultTimeout is how long a rank waits for another in one collective or pipeline transfer when
// Config.Timeout is 0: generous, so that a slow rank on a loaded machine is never taken for a hang.
// exec's tests set it to 30 s (timeout_test.go), so that a hang fails within a minute.
var DefaultTimeout = 2 * time.Minute

// MaxBytes bounds the memory exec lets a run take, so that a model too big for this machine is an
// error and not an out-of-memory crash.
const MaxBytes = 8 << 30

// Run executes cfg and returns its measurements. When the run stops early (ctx canceled, a rank
// failed) it returns the error and, when at least one step finished on every rank, a Result with
// the losses of those steps only (Partial set, nothing else filled in).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Steps <= 0 {
		return nil, fmt.Errorf("exec: steps = %d; run at least one step", cfg.Steps)
	}
	if cfg.Warmup < 0 || cfg.Warmup >= cfg.Steps {
		cfg.Warmup = min(1, cfg.Steps-1)
	}
	p, err := Lowered(cfg)
	if err != nil {
		return nil, err
	}
	return runProgram(ctx, cfg, p)
}

// runProgram executes Program p, lowered from cfg (tests pass one altered on purpose).
func runProgram(ctx context.Context, cfg Config, p *program.Program) (*Result, error) {
	st := p.Strategy
	dims := []comm.Dim{{Name: string(strategies.DimPP), Size: st.Mesh.PP}, {Name: string(strategies.DimDP), Size: st.Mesh.DP}, {Name: string(strategies.DimTP), Size: st.Mesh.TP}}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	world, err := comm.NewWorld(dims, comm.WithTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("exec: %v", err)
	}
	lr := LearningRate(cfg.LR, st.Optimizer)
	batch := makeBatch(p, cfg.Seed)
	n := world.Size()
	// Every rank is a goroutine: a product may use only the cores the ranks leave free (with a
	// rank per core, it runs on its rank's goroutine).
	prev := gemm.SetThreads(max(1, runtime.GOMAXPROCS(0)/n))
	_, cpuClock := threadCPU()
	cpuClock = cpuClock && st.Mesh.PP == n && (n > runtime.GOMAXPROCS(0) || alwaysCPUClock)
	defer gemm.SetThreads(prev)
	ranks := make([]*rank, n)
	returned := make([]bool, n) // under mu: the ranks whose function has returned
	t0 := time.Now()
	var mu sync.Mutex
	mail := &mailbox{timeout: timeout}
	// The Go heap's allocations from the end of the warm-up to the end of the run: after the
	// warm-up every tensor comes from the allocators' pools, so what is allocated then is what
	// does not go through them (messages, the timeline, kernels' own buffers).
	var allocsAt uint64
	onStep := cfg.OnStep
	cfg.OnStep = func(step int) {
		if step == cfg.Warmup {
			allocsAt = heapAllocs()
		}
		if onStep != nil {
			onStep(step)
		}
	}
	err = world.Run(ctx, func(c *comm.Comm) error {
		r := &rank{cfg: cfg, p: p, s: p.Stages[0], c: c, lr: lr, t0: t0, batch: batch, mail: mail, dev: deviceClock{cpu: cpuClock}}
		if cfg.Reference && n == 1 && st.ZeRO == 0 {
			r.gstats = &GradStats{Max: map[string]float64{}, Gain: map[string][]float32{}, Terms: p.Tokens}
		}
		mu.Lock()
		ranks[c.Rank()] = r
		mu.Unlock()
		err := r.run()
		mu.Lock()
		returned[c.Rank()] = true
		mu.Unlock()
		return err
	})
	if err != nil {
		// A rank that has not returned (abandoned after the timeout, stuck outside exec) may
		// still write its losses: the partial result needs every rank returned.
		mu.Lock()
		defer mu.Unlock()
		done := cfg.Steps
		for i, r := range ranks {
			if r == nil || !returned[i] {
				done = 0
				continue
			}
			done = min(done, len(r.losses))
		}
		if done == 0 {
			return nil, err
		}
		return &Result{Program: p, Partial: true, Losses: losses(ranks, st, done)}, err
	}
	allocsEnd := heapAllocs() // before the result's own allocations (assemble copies every parameter)
	res := &Result{Program: p, Params: map[string][]float32{}, Losses: losses(ranks, st, cfg.Steps),
		Initial: initial(p, cfg.Seed), Optimizer: st.Optimizer, LR: lr, Grads: ranks[0].gstats}
	res.StepTimes = worldSteps(ranks, cfg.Steps)
	res.StepTime = Median(res.StepTimes[cfg.Warmup:])
	res.BubbleFraction = bubble(ranks, st, res.StepTimes, cfg.Warmup, res.StepTime)
	res.DeviceBubbleFraction, res.DeviceClock = deviceBubble(ranks, st, cfg.Warmup), "wall"
	if cpuClock {
		res.DeviceClock = "thread-cpu"
	}
	res.Breakdown = breakdown(ranks, res.StepTimes, cfg.Warmup, res.StepTime)
	for _, r := range ranks {
		res.Ranks = append(res.Ranks, r.result())
	}
	assemble(res.Params, p, ranks)
	seen := map[string]bool{}
	for _, rr := range res.Ranks {
		for _, e := range rr.MemoryErrors {
			if !seen[e] {
				seen[e] = true
				res.MemoryErrors = append(res.MemoryErrors, e)
			}
		}
	}
	slices.Sort(res.MemoryErrors)
	// The Go runtime's own count of the live heap, with every rank's buffers still reachable:
	// it must hold at least what the allocators hand out and keep pooled; the rest is what
	// exec does not track (the Program, the batch, the timeline, the communicator's messages).
	for _, r := range ranks {
		res.TrackedBytes += uint64(r.alloc.total + r.alloc.pooled)
	}
	if steps := cfg.Steps - cfg.Warmup - 1; steps > 0 && allocsAt > 0 {
		res.UntrackedAllocBytesPerStep = (allocsEnd - allocsAt) / uint64(steps)
	}
	res.GoHeapLiveBytes = heapLive()
	runtime.KeepAlive(ranks)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.GoHeapBytes, res.GoTotalAllocBytes = ms.HeapAlloc, ms.TotalAlloc
	return res, nil
}

// heapAllocs is the Go heap's cumulative allocated bytes.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// heapLive is the Go heap's live bytes after a full collection.
func heapLive() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// losses sums, for each of the first steps, the loss of the last pipeline stage's data-parallel
// ranks (tp rank 0 of each: every tp rank computes the same loss).
func losses(ranks []*rank, st strategies.Strategy, steps int) []float64 {
	out := make([]float64, steps)
	for _, r := range ranks {
		if r.tpIdx == 0 && r.ppIdx == st.Mesh.PP-1 {
			for i := range out {
				out[i] += r.losses[i]
			}
		}
	}
	return out
}

// Median is the median of ds (0 for none), the statistic exec reports step times with.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// batchData is the global batch, shared read-only by all ranks.
type batchData struct {
	x, y     []float32 // MLP inputs [B, in] and targets [B, out]
	ids, tgt []int32   // transformer token ids and next-token targets [B, S]
}

func makeBatch(p *program.Program, seed uint64) *batchData {
	m := p.Model
	B := p.Strategy.GBS
	rng := kernels.NewRand(seed ^ 0x9e3779b97f4a7c15)
	if t := m.Transformer; t != nil {
		S := p.Strategy.Seq
		tok := make([]int32, B*(S+1))
		for i := range tok {
			tok[i] = int32(rng.IntN(t.Vocab))
		}
		d := &batchData{ids: make([]int32, B*S), tgt: make([]int32, B*S)}
		for b := 0; b < B; b++ {
			copy(d.ids[b*S:(b+1)*S], tok[b*(S+1):b*(S+1)+S])
			copy(d.tgt[b*S:(b+1)*S], tok[b*(S+1)+1:(b+1)*(S+1)])
		}
		return d
	}
	out := 0
	for _, c := range m.Root.Children {
		if c.Kind == model.KindLinear {
			out = c.Out
		}
	}
	d := &batchData{x: make([]float32, B*m.InDim), y: make([]float32, B*out)}
	kernels.FillNormal(d.x, rng, 1)
	kernels.FillNormal(d.y, rng, 1)
	return d
}

// initial is every parameter of p in full before the first step, as every mesh starts from it.
func initial(p *program.Program, seed uint64) map[string][]float32 {
	out := map[string][]float32{}
	for _, s := range p.Stages {
		for i := range s.Params {
			q := &s.Params[i]
			if _, ok := out[q.Name]; !ok {
				out[q.Name] = initParam(q, p.Model.Find(q.Module), seed)
			}
		}
	}
	return out
}

// initParam returns the full initial value of parameter q of module kind k.
func initParam(q *program.Param, mod *model.Module, seed uint64) []float32 {
	n := 1
	for _, d := range q.Full {
		n *= d
	}
	w := make([]float32, n)
	h := fnv.New64a()
	h.Write([]byte(q.Name))
	rng := kernels.NewRand(seed ^ h.Sum64())
	switch mod.Kind {
	case model.KindLinear:
		b := kernels.LinearBound(mod.In)
		kernels.FillUniform(w, rng, -b, b)
	case model.KindEmbedding:
		kernels.FillNormal(w, rng, 1)
	case model.KindLayerNorm, model.KindRMSNorm:
		if len(q.Name) < 5 || q.Name[len(q.Name)-5:] != ".bias" {
			for i := range w {
				w[i] = 1
			}
		}
	}
	return w
}

// shard copies rank tpIdx's slice of full along dim sd of shape full into a new slice.
func shard(full []float32, shape []int, sd, tp, tpIdx int) []float32 {
	if sd < 0 || tp == 1 {
		return slices.Clone(full)
	}
	outer, inner := 1, 1
	for i := 0; i < sd; i++ {
		outer *= shape[i]
	}
	for i := sd + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	al := shape[sd] / tp
	out := make([]float32, outer*al*inner)
	for o := 0; o < outer; o++ {
		copy(out[o*al*inner:(o+1)*al*inner], full[(o*shape[sd]+tpIdx*al)*inner:(o*shape[sd]+(tpIdx+1)*al)*inner])
	}
	return out
}

// assemble rebuilds full parameters from the dp-rank-0 replicas' tp shards (from every dp rank's
// chunk under ZeRO-3), on every pipeline stage; a parameter that two stages hold (the tied
// embedding) is taken from the first.
func assemble(dst map[string][]float32, p *program.Program, ranks []*rank) {
	tp := p.Strategy.Mesh.TP
	for _, s := range p.Stages {
		for _, q := range s.Params {
			if _, ok := dst[q.Name]; ok {
				continue
			}
			n := 1
			for _, d := range q.Full {
				n *= d
			}
			full := make([]float32, n)
			for _, r := range ranks {
				if r.ppIdx != s.Rank || (r.dpIdx != 0 && r.z == nil) || (r.z != nil && r.z.stage == 3 && r.dpIdx != 0) {
					continue
				}
				local := localParam(r, ranks, q.Name)
				if q.ShardDim < 0 {
					copy(full, local)
					continue
				}
				outer, inner := 1, 1
				for i := 0; i < q.ShardDim; i++ {
					outer *= q.Full[i]
				}
				for i := q.ShardDim + 1; i < len(q.Full); i++ {
					inner *= q.Full[i]
				}
				al := q.Full[q.ShardDim] / tp
				for o := 0; o < outer; o++ {
					copy(full[(o*q.Full[q.ShardDim]+r.tpIdx*al)*inner:(o*q.Full[q.ShardDim]+(r.tpIdx+1)*al)*inner], local[o*al*inner:(o+1)*al*inner])
				}
			}
			dst[q.Name] = full
		}
	}
}

// localParam is rank r's tp-local parameter name after the run: its own copy, or under ZeRO-3 the
// dp chunks of the ranks sharing its pp and tp coordinates, concatenated.
func localParam(r *rank, ranks []*rank, name string) []float32 {
	if r.z == nil || r.z.stage != 3 {
		return r.params[name]
	}
	var flat []float32
	for d := 0; d < r.p.Strategy.Mesh.DP; d++ {
		for _, o := range ranks {
			if o.ppIdx == r.ppIdx && o.tpIdx == r.tpIdx && o.dpIdx == d {
				flat = append(flat, o.z.z3of[name].shard...)
			}
		}
	}
	u := r.z.z3of[name]
	a, b := u.span(u.index(name))
	return flat[a:b]
}

// Single returns cfg on one device: the same model, global batch, optimizer and seed.
func Single(cfg Config) Config {
	st := cfg.Strategy
	st.Mesh = strategies.Mesh{PP: 1, DP: 1, CP: 1, TP: 1}
	st.MBS = st.GBS
	if st.MBS == 0 {
		st.MBS = cfg.Model.Batch
	}
	st.Plan = nil
	st.ZeRO, st.Recompute, st.SP = 0, strategies.RecomputeNone, false
	st.Schedule, st.VPP = strategies.Schedule1F1B, 1
	cfg.Strategy = st
	cfg.Reference = true
	return cfg
}

// worldSteps is the time of each step of the whole world: from the moment the last rank ended the
// previous step to the moment the last rank ends this one (the first step: its slowest rank's
// time, which leaves out the set-up before it). Ranks that meet once a step at a collective do
// not start and end their steps together: one that left the all-reduce early starts the next step
// while another is still in it, so a rank's own step time swings by a step's worth from one step
// to the next (5, 15, 10 ms for gpt-tiny dp=4 on 2 cores) while the world finishes a step every
// 10 ms. The world's steps sum to the run's time, as throughput (tokens per second) counts it.
func worldSteps(ranks []*rank, steps int) []time.Duration {
	out := make([]time.Duration, steps)
	var prev time.Duration
	for step := range steps {
		var end, slowest time.Duration
		for _, r := range ranks {
			end = max(end, r.stepEnds[step])
			slowest = max(slowest, r.stepTimes[step])
		}
		out[step] = end - prev
		if step == 0 {
			out[step] = slowest
		}
		prev = end
	}
	return out
}

// breakdown measures the step closest to the median on its slowest rank, among the steps after
// the warm-up, which the median is taken over.
func breakdown(ranks []*rank, steps []time.Duration, warmup int, med time.Duration) Breakdown {
	best, bestRank := medianStep(steps, warmup, med), 0
	for i, r := range ranks {
		if r.stepTimes[best] > ranks[bestRank].stepTimes[best] {
			bestRank = i
		}
	}
	b := Breakdown{Step: ranks[bestRank].stepTimes[best], Rank: bestRank, StepIndex: best}
	for _, e := range ranks[bestRank].events {
		if e.Step != best {
			continue
		}
		b.Ops = append(b.Ops, e)
		d := e.End - e.Start
		switch {
		case e.Comm:
			b.Comm += d
			if e.Kind == string(program.OpRecv) {
				b.Bubble += d
			}
		case e.Phase == program.Optimizer.String():
			b.Optimizer += d
		default:
			b.Compute += d
		}
	}
	return b
}

// medianStep is the step after the warm-up whose time is closest to the median med.
func medianStep(steps []time.Duration, warmup int, med time.Duration) int {
	best := -1
	for i := warmup; i < len(steps); i++ {
		if best < 0 || absDur(steps[i]-med) < absDur(steps[best]-med) {
			best = i
		}
	}
	return best
}

// bubble measures the pipeline bubble of the median step (Result.BubbleFraction).
func bubble(ranks []*rank, st strategies.Strategy, steps []time.Duration, warmup int, med time.Duration) float64 {
	if st.Mesh.PP == 1 {
		return 0
	}
	k := medianStep(steps, warmup, med)
	var sum float64
	for _, r := range ranks {
		if r.dpIdx != 0 || r.tpIdx != 0 {
			continue
		}
		var wait time.Duration
		for _, e := range r.events {
			if e.Step == k && e.Kind == string(program.OpRecv) {
				wait += e.End - e.Start
			}
		}
		sum += wait.Seconds() / r.stepTimes[k].Seconds()
	}
	return sum / float64(st.Mesh.PP)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
