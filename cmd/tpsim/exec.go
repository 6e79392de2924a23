package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/exec"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

const execHelp = `Usage: tpsim exec [flags]

Really train the model, sharded over a local mesh of goroutine ranks with real collectives, and
check it against single-device training on the same global batch. Prints the losses, the bytes
each rank sent per collective and mesh dimension, memory per category, the step time (slowest
rank, median after a warm-up step) and max_rel_diff_vs_single.

Examples (the tensor-parallel tutorial's MLP, then a transformer):
  tpsim exec --model seed-mlp --mesh tp=2 --plan "0=colwise,2=rowwise"
  tpsim exec --model seed-mlp --mesh tp=2 --plan "0=rowwise,1=noparallel,2=colwise"
  tpsim exec --model seed-mlp --mesh dp=2
  tpsim exec --model gpt-tiny --mesh dp=2,tp=2 --plan megatron --optimizer adam --trace trace.json
  tpsim exec --model gpt-tiny --strategy pp=2,dp=2,zero=1,recompute=full,mbs=1 --trace trace.json
  tpsim exec --model gpt-tiny --strategy pp=2,schedule=gpipe,mbs=2
  tpsim exec --model gpt-tiny --strategy dp=2,tp=2,zero=3,sp=on

--strategy takes the strategy string of 'tpsim predict' and 'tpsim sim' (their defaults too:
mbs=1, optimizer=adam); --mesh is its mesh alone, with one microbatch per dp rank and SGD.
--optimizer, --attn, --batch, --mbs and --plan, when given, override the strategy's.

PLAN is a style name (colwise, rowwise, sequence, noparallel, ...), "megatron", an inline map
("0=colwise,2=rowwise") or a JSON file of pattern -> style. exec runs, in fp32: single device,
data, tensor and pipeline parallel and their dp x pp x tp hybrids; pipeline schedules gpipe,
1f1b and interleaved (vpp); zero=0-3; recompute=none, selective or full; sp=on; eager or flash
attention (flash keeps the softmax's log-sum-exp and recomputes the probabilities in backward).
Context parallel (cp), precision=mixed and overlap=on are priced by 'tpsim predict' but not
executed (every collective here blocks its rank), and are refused.

It fails (exit 1) when training diverges (a non-finite loss), when the run does not match
single-device training (max_rel_diff_vs_single above 1e-4), or when the memory the ranks held
differs from what the Program declares. Ctrl-C prints the losses of the finished steps and
exits 130.
`

// execOptions are the flags of tpsim exec.
type execOptions struct {
	Model     string
	Strategy  string // strategies.Parse form; "" = --mesh
	Mesh      string
	Plan      string
	Steps     int
	Batch     int // global batch; 0 = the model's
	MBS       int // microbatch per dp rank; 0 = batch/dp (one microbatch)
	Seed      uint64
	Optimizer string
	Attn      string
	LR        float64
	JSON      bool
	Trace     string
	// set names the flags given on the command line (nil when built in code).
	set map[string]bool
	// onStep, when set, is called after each finished step (tests interrupt a run with it).
	onStep func(step int)
}

func runExec(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseExec(args)
	if err == nil {
		err = o.run(stdout, stderr)
	}
	return finish("exec", fs, execHelp, err, stdout, stderr)
}

func parseExec(args []string) (*execOptions, *pflag.FlagSet, error) {
	o := &execOptions{}
	fs := newFlagSet("exec")
	fs.StringVar(&o.Model, "model", "seed-mlp", "model: a preset name or a config.json (transformers without dropout)")
	fs.StringVar(&o.Strategy, "strategy", "", `strategy as for predict and sim, e.g. "pp=2,dp=2,tp=2,zero=1,recompute=full,sp=on" (instead of --mesh)`)
	fs.StringVar(&o.Mesh, "mesh", "tp=2", `mesh, e.g. "dp=2,tp=2"`)
	fs.StringVar(&o.Plan, "plan", "megatron", `tensor-parallel plan: a style, "megatron", a map ("0=colwise,2=rowwise") or a JSON file`)
	fs.IntVar(&o.Steps, "steps", 10, "optimizer steps (the first is a warm-up, left out of the step time)")
	fs.IntVar(&o.Batch, "batch", 0, "global batch in samples (0: the model's batch)")
	fs.IntVar(&o.MBS, "mbs", 0, "microbatch per data-parallel rank (0: the whole local batch at once)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the weights and the batch")
	fs.StringVar(&o.Optimizer, "optimizer", "sgd", "sgd or adam")
	fs.StringVar(&o.Attn, "attn", "eager", "attention kernel: eager, or flash/flash1 (FlashAttention-2/-1: one fused kernel here, they differ only in GPU speed)")
	fs.Float64Var(&o.LR, "lr", 0, "learning rate (0: 0.01 for sgd, 0.001 for adam)")
	fs.BoolVar(&o.JSON, "json", false, "print the measurement as JSON (keys of 'tpsim predict --json' where they mean the same)")
	fs.StringVar(&o.Trace, "trace", "", "write the measured timeline as a Chrome trace (opens in Perfetto)")
	if err := parseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { o.set[f.Name] = true })
	switch {
	case o.Strategy != "" && o.set["mesh"]:
		return o, fs, usagef("--strategy %q and --mesh %q both give the mesh; put the mesh in --strategy", o.Strategy, o.Mesh)
	case math.IsNaN(o.LR) || math.IsInf(o.LR, 0):
		return o, fs, usagef("--lr=%g; give a finite learning rate, e.g. --lr 0.01", o.LR)
	case o.Steps <= 0:
		return o, fs, usagef("--steps=%d; run at least one step", o.Steps)
	case o.Batch < 0:
		return o, fs, usagef("--batch=%d; it must be positive (or 0 for the model's batch)", o.Batch)
	case o.MBS < 0:
		return o, fs, usagef("--mbs=%d; it must be positive (or 0 for the whole local batch)", o.MBS)
	case o.LR < 0:
		return o, fs, usagef("--lr=%g; it must be positive", o.LR)
	}
	return o, fs, nil
}

// config builds the exec configuration the options describe.
func (o *execOptions) config() (exec.Config, error) {
	m, err := model.Load(o.Model)
	if err != nil {
		return exec.Config{}, err
	}
	if o.Strategy != "" {
		return o.configStrategy(m)
	}
	mesh, err := strategies.ParseMesh(o.Mesh)
	if err != nil {
		return exec.Config{}, err
	}
	return o.configFor(m, mesh)
}

// configFor is config with the model loaded and the mesh parsed.
func (o *execOptions) configFor(m *model.Model, mesh strategies.Mesh) (exec.Config, error) {
	var err error
	st := strategies.Default(mesh)
	st.Precision = strategies.PrecisionFP32
	if st.Optimizer, err = parseOptimizer(o.Optimizer); err != nil {
		return exec.Config{}, err
	}
	switch a := strings.ToLower(o.Attn); a {
	case "": // callers that build options in code (compare) leave it unset: the flag's default
		st.Attention = strategies.AttentionEager
	case strategies.AttentionEager, strategies.AttentionFlash, strategies.AttentionFlash1:
		st.Attention = a
	default:
		return exec.Config{}, usagef("--attn=%q is not valid; use eager, flash or flash1", o.Attn)
	}
	if mesh.TP > 1 {
		if st.Plan, err = strategies.ParsePlan(o.Plan); err != nil {
			return exec.Config{}, err
		}
	}
	st.GBS = o.Batch
	st = st.Resolve(m)
	if st.GBS%mesh.DP != 0 {
		return exec.Config{}, fmt.Errorf("the batch of %d samples does not split over dp=%d ranks; use --batch a multiple of %d or dp among the divisors of %d", st.GBS, mesh.DP, mesh.DP, st.GBS)
	}
	st.MBS = st.GBS / mesh.DP
	if o.MBS > 0 {
		st.MBS = o.MBS
	}
	return exec.Config{Model: m, Strategy: st, Steps: o.Steps, Seed: o.Seed, LR: o.LR}, nil
}

// configStrategy builds the configuration of --strategy: the strategy string as predict and sim
// read it, the flags given on the command line over it, and what exec cannot run refused.
func (o *execOptions) configStrategy(m *model.Model) (exec.Config, error) {
	st, err := strategies.Parse(o.Strategy)
	if err != nil {
		return exec.Config{}, err
	}
	for _, part := range strings.Split(o.Strategy, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		switch {
		case k == "precision" && v != strategies.PrecisionFP32:
			return exec.Config{}, fmt.Errorf("--strategy: precision=%s is priced by 'tpsim predict', not executed: exec trains in fp32; use precision=fp32 or leave precision out", v)
		case k == "overlap" && st.Overlap:
			return exec.Config{}, fmt.Errorf("--strategy: overlap=%s is priced by 'tpsim predict', not executed: every collective in exec blocks its rank; use overlap=off or leave overlap out", v)
		}
	}
	st.Precision = strategies.PrecisionFP32
	if o.set["optimizer"] {
		if st.Optimizer, err = parseOptimizer(o.Optimizer); err != nil {
			return exec.Config{}, err
		}
	}
	if o.set["attn"] {
		switch a := strings.ToLower(o.Attn); a {
		case strategies.AttentionEager, strategies.AttentionFlash, strategies.AttentionFlash1:
			st.Attention = a
		default:
			return exec.Config{}, usagef("--attn=%q is not valid; use eager, flash or flash1", o.Attn)
		}
	}
	if o.set["plan"] && st.Mesh.TP > 1 {
		if st.Plan, err = strategies.ParsePlan(o.Plan); err != nil {
			return exec.Config{}, err
		}
	}
	if o.set["batch"] {
		st.GBS = o.Batch
	}
	if o.set["mbs"] {
		st.MBS = o.MBS
	}
	st = st.Resolve(m)
	return exec.Config{Model: m, Strategy: st, Steps: o.Steps, Seed: o.Seed, LR: o.LR}, nil
}

func parseOptimizer(s string) (string, error) {
	switch strings.ToLower(s) {
	case strategies.OptimizerSGD:
		return strategies.OptimizerSGD, nil
	case strategies.OptimizerAdam:
		return strategies.OptimizerAdam, nil
	}
	return "", usagef("--optimizer=%q is not valid; use sgd or adam", s)
}

// execReport is the JSON of tpsim exec.
type execReport struct {
	Model     string `json:"model"`
	Strategy  string `json:"strategy"`
	Plan      string `json:"plan"`
	Devices   int    `json:"devices"`
	Steps     int    `json:"steps"`
	Seed      uint64 `json:"seed"`
	Optimizer string `json:"optimizer"`
	// MemoryBytes is the most loaded rank's peak per category; CommBytes the most bytes any rank
	// sent per step on each dimension.
	MemoryBytes map[string]int64 `json:"memory_bytes"`
	CommBytes   map[string]int64 `json:"comm_bytes"`
	Time        struct {
		Step        float64 `json:"step"`
		Compute     float64 `json:"compute"`
		CommExposed float64 `json:"comm_exposed"`
		Bubble      float64 `json:"bubble"`
		Optimizer   float64 `json:"optimizer"`
	} `json:"time_s"`
	StepTimes  []float64   `json:"step_times_s"`
	TokensPerS float64     `json:"tokens_per_s"`
	Loss       []jsonFloat `json:"loss"`
	MaxRelDiff jsonFloat   `json:"max_rel_diff_vs_single"`
	// OK is false when Failures lists why the run failed (exit status 1).
	OK       bool     `json:"ok"`
	Failures []string `json:"failures"`
	// BubbleFraction is the measured pipeline bubble of the median step (exec.Result).
	BubbleFraction float64 `json:"bubble_fraction"`
	// TrackedBytes and GoHeapLiveBytes are the allocators' bytes and the Go heap's live bytes at
	// the end of the run (exec.Result); MemoryErrors where the ranks held other memory than the
	// Program declares.
	TrackedBytes     uint64             `json:"tracked_bytes"`
	UntrackedPerStep uint64             `json:"untracked_alloc_bytes_per_step"`
	GoHeapLiveBytes  uint64             `json:"go_heap_live_bytes"`
	MemoryErrors     []string           `json:"memory_errors"`
	Ranks            []exec.RankResult  `json:"ranks"`
	GoHeapBytes      uint64             `json:"go_heap_bytes"`
	GoTotalAlloc     uint64             `json:"go_total_alloc_bytes"`
	Collectives      []collectiveRecord `json:"collectives"`
	// Ops are the durations of every op of the slowest rank in the median step.
	Ops           []opRecord  `json:"ops"`
	SingleDevice  []jsonFloat `json:"loss_single_device"`
	MeasuredNotes string      `json:"notes"`
}

// opRecord is one executed op and how long it took.
type opRecord struct {
	Phase   string  `json:"phase"`
	Kind    string  `json:"kind"`
	Module  string  `json:"module"`
	Seconds float64 `json:"seconds"`
}

// collectiveRecord is one collective the plan inserted, with the bytes a rank sends for it.
type collectiveRecord struct {
	Stage     int    `json:"stage"`
	Phase     string `json:"phase"`
	Kind      string `json:"kind"`
	Dim       string `json:"dim"`
	Module    string `json:"module"`
	Shape     []int  `json:"shape"`
	SentBytes int64  `json:"sent_bytes"`
}

// matchTolerance is the largest max_rel_diff_vs_single exec accepts: float32 rounding in another
// order of summation, amplified by Adam where a gradient is zero in exact arithmetic (measured up
// to 1.1e-4 on gpt-tiny's shape, exec.MaxRelDiff; 1e-5 and below everywhere else).
const matchTolerance = 1e-4

func (o *execOptions) run(stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return o.runCtx(ctx, stdout, stderr)
}

func (o *execOptions) runCtx(ctx context.Context, stdout, stderr io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	// Refuse a trace that cannot be written before training, not after.
	if o.Trace != "" {
		if err := atomicfile.CheckFile(o.Trace); err != nil {
			return fmt.Errorf("cannot write the trace: %v; pass --trace a writable path", err)
		}
	}
	cfg.OnStep = o.onStep
	fmt.Fprintf(stderr, "tpsim exec: %s on %s, %d steps...\n", cfg.Model.Name, cfg.Strategy.Mesh, cfg.Steps)
	res, err := exec.Run(ctx, cfg)
	if ctx.Err() != nil {
		return interrupted(stdout, res)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tpsim exec: single-device reference...\n")
	ref, err := exec.Run(ctx, exec.Single(cfg))
	if ctx.Err() != nil {
		return interrupted(stdout, res)
	}
	if err != nil {
		return err
	}
	rep := report(cfg, res, ref)
	if o.Trace != "" {
		if err := writeTrace(o.Trace, res); err != nil {
			return err
		}
	}
	if o.JSON {
		err = writeJSON(stdout, rep)
	} else {
		err = writeExec(stdout, rep, res)
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return errors.New(strings.Join(rep.Failures, "; "))
	}
	return nil
}

// interrupted prints the losses of the steps that finished before Ctrl-C.
func interrupted(w io.Writer, res *exec.Result) error {
	if res != nil && len(res.Losses) > 0 {
		fmt.Fprintf(w, "loss (%d steps finished)", len(res.Losses))
		for _, l := range res.Losses {
			fmt.Fprintf(w, " %.6g", l)
		}
		fmt.Fprintln(w)
	}
	return errInterrupted
}

// failures lists what makes a run a failure: divergence, a mismatch against single-device
// training, memory the ranks held that the Program does not declare.
func failures(cfg exec.Config, res, ref *exec.Result, d float64) []string {
	var out []string
	for _, r := range []*exec.Result{res, ref} {
		for i, l := range r.Losses {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				lr := cfg.LR
				if lr == 0 {
					lr = map[string]float64{strategies.OptimizerSGD: 0.01, strategies.OptimizerAdam: 1e-3}[cfg.Strategy.Optimizer]
				}
				what := "the run"
				if r == ref {
					what = "single-device training"
				}
				out = append(out, fmt.Sprintf("diverged: %s's loss is %g at step %d (lr %g); lower --lr", what, l, i+1, lr))
				break
			}
		}
	}
	if len(out) == 0 && !(d <= matchTolerance) {
		out = append(out, fmt.Sprintf("the run does not match single-device training: max_rel_diff_vs_single %.3g > %g", d, matchTolerance))
	}
	for _, e := range res.MemoryErrors {
		out = append(out, "memory: "+e)
	}
	return out
}

// jsonFloat encodes NaN and infinities as null (JSON has no such numbers), so that a diverged
// run's report still encodes.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func jsonFloats(v []float64) []jsonFloat {
	out := make([]jsonFloat, len(v))
	for i, x := range v {
		out[i] = jsonFloat(x)
	}
	return out
}

func report(cfg exec.Config, res, ref *exec.Result) *execReport {
	p := res.Program
	st := p.Strategy
	rep := &execReport{Model: cfg.Model.Name, Strategy: st.String(), Plan: st.Plan.String(), Devices: st.Mesh.Devices(),
		Steps: cfg.Steps, Seed: cfg.Seed, Optimizer: st.Optimizer, MemoryBytes: map[string]int64{}, CommBytes: map[string]int64{},
		Loss: jsonFloats(res.Losses), SingleDevice: jsonFloats(ref.Losses), Ranks: res.Ranks,
		GoHeapBytes: res.GoHeapBytes, GoTotalAlloc: res.GoTotalAllocBytes, BubbleFraction: res.BubbleFraction,
		TrackedBytes: res.TrackedBytes, UntrackedPerStep: res.UntrackedAllocBytesPerStep, GoHeapLiveBytes: res.GoHeapLiveBytes, MemoryErrors: res.MemoryErrors,
		MeasuredNotes: "memory_bytes counts the slices exec's allocator hands the kernels and collectives (params, grads, optimizer state, gradient buckets and gathered parameters as comm or params, kernel scratch as workspace); a microbatch's tensor is an activation when the rank still holds it at the end of that microbatch's forward, workspace otherwise, whatever the Program declares. The communicator's and pipeline's message copies are not in it; tracked_bytes against go_heap_live_bytes shows what is not"}
	d := exec.MaxRelDiff(res, ref)
	rep.MaxRelDiff = jsonFloat(d)
	rep.Failures = failures(cfg, res, ref, d)
	rep.OK = len(rep.Failures) == 0
	if rep.Failures == nil {
		rep.Failures = []string{}
	}
	if rep.MemoryErrors == nil {
		rep.MemoryErrors = []string{}
	}
	if st.Mesh.TP == 1 {
		rep.Plan = "none"
	}
	for _, r := range res.Ranks {
		for k, v := range r.PeakBytes {
			rep.MemoryBytes[k] = max(rep.MemoryBytes[k], v)
		}
		for k, v := range r.CommBytes {
			rep.CommBytes[k] = max(rep.CommBytes[k], v)
		}
	}
	b := res.Breakdown
	rep.Time.Step = res.StepTime.Seconds()
	rep.Time.Compute, rep.Time.CommExposed, rep.Time.Optimizer = b.Compute.Seconds(), (b.Comm - b.Bubble).Seconds(), b.Optimizer.Seconds()
	rep.Time.Bubble = b.Bubble.Seconds()
	for _, d := range res.StepTimes {
		rep.StepTimes = append(rep.StepTimes, d.Seconds())
	}
	if res.StepTime > 0 {
		rep.TokensPerS = float64(p.Tokens) / res.StepTime.Seconds()
	}
	for _, e := range b.Ops {
		rep.Ops = append(rep.Ops, opRecord{Phase: e.Phase, Kind: e.Kind, Module: e.Module, Seconds: (e.End - e.Start).Seconds()})
	}
	for _, s := range p.Stages {
		for _, list := range [][]program.Op{s.Forward, s.Backward, s.Optimizer} {
			for _, op := range list {
				if !(op.Kind.IsCollective() || op.Kind == program.OpSend) || op.Group <= 1 {
					continue
				}
				var shape []int
				if len(op.In) > 0 {
					shape = s.Value(op.In[0]).Shape
				}
				mod := op.Module
				switch {
				case len(op.Params) > 0 && op.Phase == program.Optimizer:
					mod = fmt.Sprintf("%d gradients", len(op.Params))
					if op.Kind == program.OpAllGather {
						mod = fmt.Sprintf("%d parameters", len(op.Params))
					}
				case op.Kind == program.OpSend:
					mod = fmt.Sprintf("to stage %d", op.Peer)
				}
				rep.Collectives = append(rep.Collectives, collectiveRecord{Stage: s.Index, Phase: op.Phase.String(), Kind: string(op.Kind), Dim: op.Dim,
					Module: mod, Shape: shape, SentBytes: int64(op.SentBytes)})
			}
		}
	}
	return rep
}

func writeExec(w io.Writer, rep *execReport, res *exec.Result) error {
	ew := &errWriter{w: w}
	st := res.Program.Strategy
	ew.printf("%s on %s (%d ranks), plan %s, %d steps, batch %d (microbatch %d per dp rank), seed %d, %s\n",
		rep.Model, st.Mesh, rep.Devices, rep.Plan, rep.Steps, st.GBS, st.MBS, rep.Seed, rep.Optimizer)
	ew.printf("\nloss        ")
	for _, l := range rep.Loss {
		ew.printf(" %.6g", l)
	}
	ew.printf("\nsingle dev. ")
	for _, l := range rep.SingleDevice {
		ew.printf(" %.6g", l)
	}
	verdict := "matches"
	if d := float64(rep.MaxRelDiff); !(d <= matchTolerance) {
		verdict = "DOES NOT match"
	}
	ew.printf("\nmax_rel_diff_vs_single %.3g: %s single-device training (tolerance %g)\n", float64(rep.MaxRelDiff), verdict, matchTolerance)

	ew.printf("\nCollectives and pipeline sends the Program inserted (per microbatch; optimizer ones once per step)\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  stage\tphase\tkind\tdim\tmodule\tshape\tbytes sent per rank\n")
	for _, c := range rep.Collectives {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%v\t%s\n", c.Stage, c.Phase, c.Kind, c.Dim, c.Module, c.Shape, commas(c.SentBytes))
	}
	if len(rep.Collectives) == 0 {
		fmt.Fprintf(tw, "  none\n")
	}
	tw.Flush()

	ew.printf("\nMeasured bytes sent per rank per step\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	keys := map[string]bool{}
	for _, r := range rep.Ranks {
		for k := range r.CommByKind {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	fmt.Fprintf(tw, "  rank\tcoords")
	for _, k := range sorted {
		fmt.Fprintf(tw, "\t%s", k)
	}
	fmt.Fprintf(tw, "\ttotal\n")
	for _, r := range rep.Ranks {
		fmt.Fprintf(tw, "  %d\tpp=%d,dp=%d,tp=%d", r.Rank, r.Coords["pp"], r.Coords["dp"], r.Coords["tp"])
		var total int64
		for _, k := range sorted {
			fmt.Fprintf(tw, "\t%s", commas(r.CommByKind[k]))
			total += r.CommByKind[k]
		}
		fmt.Fprintf(tw, "\t%s\n", commas(total))
	}
	tw.Flush()

	ew.printf("\nMemory per rank (peak live bytes by category, counted from the slices exec's allocator hands out)\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  rank")
	cats := append(append([]string{}, exec.Categories...), "peak")
	for _, c := range cats {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Ranks {
		fmt.Fprintf(tw, "  %d", r.Rank)
		for _, c := range cats {
			fmt.Fprintf(tw, "\t%v", units.Bytes(r.PeakBytes[c]))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	ew.printf("  at the end: the allocators hold %v, the Go heap %v live (the rest is the Program, the batch, the timeline, messages); %v allocated in all\n",
		units.Bytes(rep.TrackedBytes), units.Bytes(rep.GoHeapLiveBytes), units.Bytes(rep.GoTotalAlloc))
	ew.printf("  after the warm-up the Go heap allocated %v per step outside the allocators (message copies, the timeline)\n", units.Bytes(rep.UntrackedPerStep))
	for _, e := range rep.MemoryErrors {
		ew.printf("  MEMORY ERROR: %s\n", e)
	}

	ew.printf("\nStep time (slowest rank, median of %d steps after warm-up): %v\n", len(rep.StepTimes)-min(1, len(rep.StepTimes)-1), units.Seconds(rep.Time.Step))
	ew.printf("  compute %v, communication %v, pipeline wait %v, optimizer %v (slowest rank of the median step)\n",
		units.Seconds(rep.Time.Compute), units.Seconds(rep.Time.CommExposed), units.Seconds(rep.Time.Bubble), units.Seconds(rep.Time.Optimizer))
	if pp := st.Mesh.PP; pp > 1 {
		m := res.Program.Microbatches
		ew.printf("  pipeline bubble %.1f%% of the step (each pp rank's waits in its receives, averaged; %s, %d stages, %d microbatches: (p-1)/(m+p-1) = %.1f%% without interleaving)\n",
			100*rep.BubbleFraction, st.Schedule, pp, m, 100*float64(pp-1)/float64(m+pp-1))
	}
	ew.printf("  %.4g samples or tokens per second\n", rep.TokensPerS)
	return ew.err
}

// writeTrace writes the measured timeline: one process per rank, a compute and a communication
// thread each.
func writeTrace(path string, res *exec.Result) error {
	var spans []reports.Span
	for _, r := range res.Ranks {
		proc := fmt.Sprintf("rank %d (pp=%d,dp=%d,tp=%d)", r.Rank, r.Coords["pp"], r.Coords["dp"], r.Coords["tp"])
		for _, e := range r.Events {
			thread := "compute"
			switch {
			case e.Kind == string(program.OpRecv):
				thread = "pipeline wait" // the bubble: waiting for the neighbour stage
			case e.Comm:
				thread = "communication"
			}
			spans = append(spans, reports.Span{Process: proc, Thread: thread, Name: e.Kind + " " + e.Module, Cat: e.Phase,
				Start: e.Start.Seconds(), Dur: (e.End - e.Start).Seconds(), Args: map[string]any{"step": e.Step, "stage": e.Stage, "microbatch": e.Micro}})
		}
	}
	return writeTraceFile(path, spans)
}

// writeTraceFile writes spans as a Chrome trace to path.
func writeTraceFile(path string, spans []reports.Span) error {
	// Atomically (internal/atomicfile): a failed or interrupted write leaves the previous trace
	// or none, never half of one.
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write the trace: %v; pass --trace a writable path", err)
	}
	defer f.Abort()
	if err := reports.WriteChromeTrace(f, spans); err != nil {
		return err
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("cannot write the trace: %v; pass --trace a writable path", err)
	}
	return nil
}
