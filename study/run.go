package study

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// CellsFile is the name of the resumable record of finished jobs in the output directory.
const CellsFile = "cells.jsonl"

// Job is one search.Plan call: a cell planned for one objective, or a probe of the search for
// the smallest GPU count that fits (fit_search).
type Job struct {
	Cell int // index into Study.Cells; -1 for a probe
	// What the plan is asked.
	Model, Variant int // indices into Study.Models and Study.Variants
	GPUs           int
	GlobalBatch    int // 0: the model's
	Seq            int // 0: the model's
	Objective      string
	Top            int
	Sim            string
	SimTop         int
	Probe          bool
	Key            string
}

// Record is one finished job, one line of cells.jsonl.
type Record struct {
	Key       string `json:"key"`
	Version   string `json:"version"`
	Model     string `json:"model"`
	Hardware  string `json:"hardware"`
	GPUs      int    `json:"gpus"`
	Objective string `json:"objective"`
	// Probe marks a plan of the search for the smallest GPU count that fits.
	Probe bool `json:"probe,omitempty"`
	// Error is why the planner refused the question (a batch that no layout can split, attn=flash
	// on hardware without its efficiency); empty when it answered.
	Error string `json:"error,omitempty"`
	// Plan is the planner's answer, as `tpsim plan --json` prints it.
	Plan *search.Output `json:"plan,omitempty"`
	// MeasuredStep is the median measured step time of the winner on this machine (host
	// hardware, measure: true); MeasureNote says why there is none when it was asked for.
	MeasuredStep *float64 `json:"measured_step_s,omitempty"`
	MeasureNote  string   `json:"measure_note,omitempty"`
}

// Measurer measures the step time of strategy for m on this machine (the host hardware hw),
// in seconds.
// plan is the winner's tensor-parallel plan as the planner printed it.
type Measurer func(ctx context.Context, m *model.Model, hw *hardware.Hardware, strategy, plan string) (float64, error)

// Options are how a study runs; none of them changes a number of the report.
type Options struct {
	// Version identifies the tpsim build; it is part of every job's key, so a new build re-prices.
	Version string
	// Workers is how many jobs run at once (0: one per CPU). Each job's planner runs on one
	// goroutine; the results do not depend on it.
	Workers int
	// Progress is called with the jobs done and the total, once with the resumed jobs before any
	// runs and after each job; it may be nil.
	Progress func(done, total int)
	// Measure measures winners on the host hardware when the study asks (measure: true); nil
	// leaves them unmeasured, and the report says so.
	Measure Measurer
	// Log receives warnings (lines of cells.jsonl that were ignored); nil discards them.
	Log io.Writer
}

// ErrInterrupted is returned (wrapped) when the context ends before every job is done; the jobs
// that finished are in cells.jsonl.
var ErrInterrupted = errors.New("study interrupted")

// Jobs lists the jobs of st in its fixed order: cells in order (models, then hardware variants,
// then GPU counts), objectives in the file's order. Cells over a hardware limit have none.
func (st *Study) Jobs(version string) []Job {
	var jobs []Job
	for ci, c := range st.Cells {
		if c.Limit != "" {
			continue
		}
		for _, o := range st.File.Objectives {
			j := Job{Cell: ci, Model: c.Model, Variant: c.Variant, GPUs: c.GPUs, GlobalBatch: c.GlobalBatch, Seq: c.Seq,
				Objective: o, Top: st.File.Top, Sim: st.File.Sim, SimTop: st.File.SimTop}
			j.Key = st.key(j, version)
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// probe is the job that asks whether g GPUs fit: the cheapest plan (top 1, simulator off); any
// objective finds the same feasible set.
func (st *Study) probe(model, variant, g int, version string) Job {
	m := st.Models[model]
	gbs, seq := st.File.GlobalBatch, st.File.Seq
	if m.Entry.GlobalBatch > 0 {
		gbs = m.Entry.GlobalBatch
	}
	if m.Entry.Seq > 0 {
		seq = m.Entry.Seq
	}
	j := Job{Cell: -1, Model: model, Variant: variant, GPUs: g, GlobalBatch: gbs, Seq: seq, Objective: search.Time, Top: 1, Sim: search.SimOff, SimTop: 1, Probe: true}
	j.Key = st.key(j, version)
	return j
}

// key hashes everything a job's plan depends on (see the package documentation).
func (st *Study) key(j Job, version string) string {
	m, v := st.Models[j.Model], st.Variants[j.Variant]
	f := st.File
	// A GPU's cell under measure: true holds a note that it was not measured, so it differs from
	// the same cell without measure.
	measure := f.Measure && !j.Probe
	s := strings.Join([]string{"tpsim-study-job/1", version, "model=" + m.hash, "hardware=" + v.hash,
		"gpus=" + strconv.Itoa(j.GPUs), "gbs=" + strconv.Itoa(j.GlobalBatch), "seq=" + strconv.Itoa(j.Seq),
		"fix=" + f.Fix, "objective=" + j.Objective, "top=" + strconv.Itoa(j.Top), "sim=" + j.Sim, "sim_top=" + strconv.Itoa(j.SimTop),
		"measure=" + strconv.FormatBool(measure), "probe=" + strconv.FormatBool(j.Probe)}, "\n")
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Request is the planner's question for a job: the same one `tpsim plan` asks for the flags of
// PlanArgs.
func (st *Study) Request(j Job) (search.Request, error) {
	fix, err := strategies.ParseFix(st.File.Fix)
	if err != nil {
		return search.Request{}, err
	}
	return search.Request{GPUs: j.GPUs, GlobalBatch: j.GlobalBatch, Seq: j.Seq, Objective: j.Objective,
		Top: j.Top, Fix: fix, Sim: j.Sim, SimTop: j.SimTop, Workers: 1}, nil
}

// PlanArgs is the `tpsim plan` command line that asks the job's question; hwArg is what
// --hardware takes for the job's hardware.
func (st *Study) PlanArgs(j Job, hwArg string) []string {
	args := []string{"plan", "--model", st.Models[j.Model].Arg, "--hardware", hwArg, "--gpus", strconv.Itoa(j.GPUs)}
	if j.GlobalBatch > 0 {
		args = append(args, "--global-batch", strconv.Itoa(j.GlobalBatch))
	}
	if j.Seq > 0 {
		args = append(args, "--seq", strconv.Itoa(j.Seq))
	}
	args = append(args, "--objective", j.Objective, "--top", strconv.Itoa(j.Top), "--sim", j.Sim, "--sim-top", strconv.Itoa(j.SimTop))
	if st.File.Fix != "" {
		args = append(args, "--fix", st.File.Fix)
	}
	return args
}

// PlanJob asks the planner a job's question.
func (st *Study) PlanJob(j Job) (*search.Planned, error) {
	req, err := st.Request(j)
	if err != nil {
		return nil, err
	}
	return search.Plan(st.Models[j.Model].M, st.Variants[j.Variant].HW, req)
}

// run computes a job's record.
func (st *Study) run(ctx context.Context, j Job, o Options) Record {
	m, v := st.Models[j.Model], st.Variants[j.Variant]
	r := Record{Key: j.Key, Version: o.Version, Model: m.Name, Hardware: v.Name, GPUs: j.GPUs, Objective: j.Objective, Probe: j.Probe}
	pr, err := st.PlanJob(j)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Plan = pr.Out
	if st.File.Measure && v.Base != Host && !j.Probe && len(pr.Out.Top) > 0 {
		// Said beside the cell, not silently skipped: a GPU's cells are predictions only.
		r.MeasureNote = "not measured: only the host hardware is this machine"
	}
	if st.File.Measure && v.Base == Host && !j.Probe && len(pr.Out.Top) > 0 {
		switch {
		case o.Measure == nil:
			r.MeasureNote = "not measured: no measurer"
		default:
			s, err := o.Measure(ctx, m.M, v.HW, pr.Out.Top[0].Strategy, pr.Out.Top[0].Plan)
			if err != nil {
				r.MeasureNote = "not measured: " + err.Error()
			} else {
				r.MeasuredStep = &s
			}
		}
	}
	return r
}

// Results are a finished study: a record per job of Jobs, in its order, and, with fit_search,
// the search for the smallest GPU count that fits of each model on each hardware variant.
type Results struct {
	Records []Record
	Fits    []Fit
}

// Fit is the search for the smallest GPU count at which a model fits on a hardware variant,
// between the largest swept count that does not fit (Lo, 0 when none) and the smallest that does
// (Swept): every count below one node and every whole number of nodes, ascending, up to the first
// that fits.
type Fit struct {
	Model, Variant int
	Swept, Lo      int
	Probes         []Record // the counts tried, ascending; the last fits unless none does
	Smallest       int      // the first probe that fits, else Swept
}

// feasible reports whether a record's plan found a strategy that fits.
func feasible(r Record) bool { return r.Error == "" && r.Plan != nil && r.Plan.Feasible > 0 }

// maxProbes bounds one fit search.
const maxProbes = 64

// fitCounts lists the counts a fit search tries between lo and hi (both excluded).
func fitCounts(lo, hi, node int) []int {
	var out []int
	for g := lo + 1; g < hi && len(out) < maxProbes; g++ {
		if node > 0 && g > node && g%node != 0 {
			continue
		}
		out = append(out, g)
	}
	return out
}

// fits lists the fit searches of a study whose jobs are done: one per model and variant where
// some swept count fits.
func (st *Study) fits(jobs []Job, records []Record) []Fit {
	type pair struct{ m, v int }
	swept := map[pair]int{}
	for i, j := range jobs {
		if feasible(records[i]) {
			p := pair{j.Model, j.Variant}
			if g, ok := swept[p]; !ok || j.GPUs < g {
				swept[p] = j.GPUs
			}
		}
	}
	var out []Fit
	for mi := range st.Models {
		for vi := range st.Variants {
			hi, ok := swept[pair{mi, vi}]
			if !ok {
				continue
			}
			lo := 0
			for _, j := range jobs {
				if j.Model == mi && j.Variant == vi && j.GPUs < hi {
					lo = max(lo, j.GPUs)
				}
			}
			out = append(out, Fit{Model: mi, Variant: vi, Swept: hi, Lo: lo, Smallest: hi})
		}
	}
	return out
}

// sink appends finished records to cells.jsonl, one whole line per write, and counts them.
type sink struct {
	mu          sync.Mutex
	f           *os.File
	path        string
	err         error
	done, total int
	progress    func(done, total int)
}

func (s *sink) add(r Record, count bool) {
	line, err := json.Marshal(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		// One write of a whole line: a crash leaves at most a torn last line, which the next
		// run cuts off.
		_, err = s.f.Write(append(line, '\n'))
	}
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("study: writing %s: %w", s.path, err)
	}
	if count {
		s.done++
		if s.progress != nil {
			s.progress(s.done, s.total)
		}
	}
}

// parallel calls do(i) for i in order on up to workers goroutines, until ctx ends; it returns
// when every call it started has returned.
func parallel(ctx context.Context, n, workers int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
dispatch:
	for i := 0; i < n; i++ {
		select {
		case <-ctx.Done():
			break dispatch
		case next <- i:
		}
	}
	close(next)
	wg.Wait()
}

// Run plans every job of st that dir/cells.jsonl does not already hold, appending each finished
// job to it, then (fit_search) the searches for the smallest GPU count that fits, and returns the
// results in the study's order. When ctx ends first it waits for the jobs in flight, keeps them,
// and returns an error wrapping ErrInterrupted.
func Run(ctx context.Context, st *Study, dir string, o Options) (*Results, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("study: cannot create the output directory: %v; pass --out a writable path", err)
	}
	jobs := st.Jobs(o.Version)
	path := filepath.Join(dir, CellsFile)
	cache, err := readCells(path, o.Log)
	if err != nil {
		return nil, err
	}
	records := make([]Record, len(jobs))
	var pending []int
	for i, j := range jobs {
		if r, ok := cache[j.Key]; ok {
			records[i] = r
		} else {
			pending = append(pending, i)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	defer f.Close()
	out := &sink{f: f, path: path, done: len(jobs) - len(pending), total: len(jobs), progress: o.Progress}
	if o.Progress != nil {
		o.Progress(out.done, out.total)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if st.File.Measure {
		workers = 1 // measured step times must not share the cores with planning
	}
	parallel(ctx, len(pending), workers, func(k int) {
		i := pending[k]
		records[i] = st.run(ctx, jobs[i], o)
		out.add(records[i], true)
	})
	if out.err != nil {
		return nil, out.err
	}
	if out.done < out.total {
		return nil, interrupted(out, path)
	}
	res := &Results{Records: records}
	if st.File.FitSearch {
		// The searches are not in the progress: their probes are small plans (a fraction of a
		// second for the shipped studies), and how many there are is known only as they go.
		res.Fits = st.fits(jobs, records)
		finished := make([]bool, len(res.Fits))
		parallel(ctx, len(res.Fits), workers, func(i int) {
			fit := &res.Fits[i]
			node := st.Variants[fit.Variant].NodeSize
			for _, g := range fitCounts(fit.Lo, fit.Swept, node) {
				if ctx.Err() != nil {
					return
				}
				j := st.probe(fit.Model, fit.Variant, g, o.Version)
				r, ok := cache[j.Key]
				if !ok {
					r = st.run(ctx, j, o)
					out.add(r, false)
				}
				fit.Probes = append(fit.Probes, r)
				if feasible(r) {
					fit.Smallest = g
					break
				}
			}
			finished[i] = true
		})
		if out.err != nil {
			return nil, out.err
		}
		for _, ok := range finished {
			if !ok {
				return nil, fmt.Errorf("%w during the search for the smallest GPU count that fits; the plans done are kept in %s; run the same command again to finish", ErrInterrupted, path)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	// Every job is done: rewrite cells.jsonl in the study's order, with this study's jobs only.
	var buf bytes.Buffer
	all := append([]Record{}, records...)
	for _, fit := range res.Fits {
		all = append(all, fit.Probes...)
	}
	for _, r := range all {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("study: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := writeFile(path, buf.Bytes()); err != nil {
		return nil, err
	}
	// Report from the records as read back, so a resumed run and a fresh one are the same bytes.
	roundTrip := func(rs []Record) error {
		for i := range rs {
			b, _ := json.Marshal(rs[i])
			var r Record
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("study: %w", err)
			}
			rs[i] = r
		}
		return nil
	}
	if err := roundTrip(res.Records); err != nil {
		return nil, err
	}
	for i := range res.Fits {
		if err := roundTrip(res.Fits[i].Probes); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func interrupted(s *sink, path string) error {
	return fmt.Errorf("%w: %d of %d plans done and kept in %s; run the same command again to finish", ErrInterrupted, s.done, s.total, path)
}

// readCells reads the records of cells.jsonl by key (a later line wins). A torn last line (no
// newline at its end: a write cut short) is cut off the file; a line that does not parse is
// ignored with a warning.
func readCells(path string, log io.Writer) (map[string]Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n < len(data) {
		fmt.Fprintf(log, "study: %s: cutting off a torn last line (%d bytes, a write cut short)\n", path, len(data)-n)
		data = data[:n]
		if err := writeFile(path, data); err != nil {
			return nil, err
		}
	}
	out := map[string]Record{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Key == "" {
			fmt.Fprintf(log, "study: %s:%d: ignoring a line that is not a record\n", path, line)
			continue
		}
		out[r.Key] = r
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("study: %s: %w", path, err)
	}
	return out, nil
}

// writeFile writes data to path atomically (internal/atomicfile: a temporary file and a rename),
// so that a reader sees the old file or the new one, never part of one.
func writeFile(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("study: writing %s: %w", path, err)
	}
	return nil
}
