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
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// CellsFile is the name of the resumable record of finished jobs in the output directory.
const CellsFile = "cells.jsonl"

// Job is one cell planned for one objective: one search.Plan call.
type Job struct {
	Cell      int // index into Study.Cells
	Objective string
	Key       string
}

// Record is one finished job, one line of cells.jsonl.
type Record struct {
	Key       string `json:"key"`
	Version   string `json:"version"`
	Model     string `json:"model"`
	Hardware  string `json:"hardware"`
	GPUs      int    `json:"gpus"`
	Objective string `json:"objective"`
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
			jobs = append(jobs, Job{Cell: ci, Objective: o, Key: st.key(c, o, version)})
		}
	}
	return jobs
}

// key hashes everything a job's plan depends on (see the package documentation).
func (st *Study) key(c Cell, objective, version string) string {
	m, v := st.Models[c.Model], st.Variants[c.Variant]
	f := st.File
	measure := f.Measure && v.Base == Host
	s := strings.Join([]string{"tpsim-study-job/1", version, "model=" + m.hash, "hardware=" + v.hash,
		"gpus=" + strconv.Itoa(c.GPUs), "gbs=" + strconv.Itoa(c.GlobalBatch), "seq=" + strconv.Itoa(c.Seq),
		"fix=" + f.Fix, "objective=" + objective, "top=" + strconv.Itoa(f.Top), "sim=" + f.Sim,
		"measure=" + strconv.FormatBool(measure)}, "\n")
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Request is the planner's question for a job: the same one `tpsim plan` asks for the flags of
// PlanArgs.
func (st *Study) Request(j Job) (search.Request, error) {
	c := st.Cells[j.Cell]
	fix, err := strategies.ParseFix(st.File.Fix)
	if err != nil {
		return search.Request{}, err
	}
	return search.Request{GPUs: c.GPUs, GlobalBatch: c.GlobalBatch, Seq: c.Seq, Objective: j.Objective,
		Top: st.File.Top, Fix: fix, Sim: st.File.Sim, Workers: 1}, nil
}

// PlanArgs is the `tpsim plan` command line that asks the job's question; hwArg is what
// --hardware takes for the job's hardware.
func (st *Study) PlanArgs(j Job, hwArg string) []string {
	c := st.Cells[j.Cell]
	args := []string{"plan", "--model", st.Models[c.Model].Arg, "--hardware", hwArg, "--gpus", strconv.Itoa(c.GPUs)}
	if c.GlobalBatch > 0 {
		args = append(args, "--global-batch", strconv.Itoa(c.GlobalBatch))
	}
	if c.Seq > 0 {
		args = append(args, "--seq", strconv.Itoa(c.Seq))
	}
	args = append(args, "--objective", j.Objective, "--top", strconv.Itoa(st.File.Top), "--sim", st.File.Sim)
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
	c := st.Cells[j.Cell]
	return search.Plan(st.Models[c.Model].M, st.Variants[c.Variant].HW, req)
}

// run computes a job's record.
func (st *Study) run(ctx context.Context, j Job, o Options) Record {
	c := st.Cells[j.Cell]
	m, v := st.Models[c.Model], st.Variants[c.Variant]
	r := Record{Key: j.Key, Version: o.Version, Model: m.Name, Hardware: v.Name, GPUs: c.GPUs, Objective: j.Objective}
	pr, err := st.PlanJob(j)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Plan = pr.Out
	if st.File.Measure && v.Base == Host && len(pr.Out.Top) > 0 {
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

// Run plans every job of st that dir/cells.jsonl does not already hold, appending each finished
// job to it, and returns the records of all jobs in the study's order. When ctx ends first it
// waits for the jobs in flight, keeps them, and returns an error wrapping ErrInterrupted.
func Run(ctx context.Context, st *Study, dir string, o Options) ([]Record, error) {
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
	have := make([]bool, len(jobs))
	var pending []int
	for i, j := range jobs {
		if r, ok := cache[j.Key]; ok {
			records[i], have[i] = r, true
		} else {
			pending = append(pending, i)
		}
	}
	done, total := len(jobs)-len(pending), len(jobs)
	if o.Progress != nil {
		o.Progress(done, total)
	}
	if len(pending) > 0 {
		if err := runPending(ctx, st, jobs, pending, path, o, records, have, done, total); err != nil {
			return nil, err
		}
	}
	// Every job is done: rewrite cells.jsonl in the study's order, with this study's jobs only.
	var buf bytes.Buffer
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("study: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := WriteFileAtomic(path, buf.Bytes()); err != nil {
		return nil, err
	}
	// Render from the records as read back, so a resumed run and a fresh one are the same bytes.
	out := make([]Record, len(records))
	for i, r := range records {
		b, _ := json.Marshal(r)
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("study: %w", err)
		}
	}
	return out, nil
}

func runPending(ctx context.Context, st *Study, jobs []Job, pending []int, path string, o Options, records []Record, have []bool, done, total int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	defer f.Close()
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if st.File.Measure {
		workers = 1 // measured step times must not share the cores with planning
	}
	next := make(chan int)
	type result struct {
		i int
		r Record
	}
	results := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results <- result{i, st.run(ctx, jobs[i], o)}
			}
		}()
	}
	go func() {
		defer close(next)
		for _, i := range pending {
			select {
			case <-ctx.Done():
				return
			case next <- i:
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	var werr error
	for res := range results {
		line, err := json.Marshal(res.r)
		if err == nil {
			// One write of a whole line: a crash leaves at most a torn last line, which the
			// next run cuts off.
			_, err = f.Write(append(line, '\n'))
		}
		if err != nil && werr == nil {
			werr = fmt.Errorf("study: writing %s: %w", path, err)
		}
		records[res.i], have[res.i] = res.r, true
		done++
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}
	if werr != nil {
		return werr
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	if done < total {
		return fmt.Errorf("%w: %d of %d plans done and kept in %s; run the same command again to finish", ErrInterrupted, done, total, path)
	}
	return nil
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
		if err := WriteFileAtomic(path, data); err != nil {
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

// WriteFileAtomic writes data to path through a temporary file in the same directory and a
// rename, so that a reader sees the old file or the new one, never part of one.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("study: writing %s: %w", path, err)
	}
	return nil
}
