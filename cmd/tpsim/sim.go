package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/units"
)

const simHelp = `Usage: tpsim sim [flags]

Lay one training step out on a timeline with the discrete-event simulator: per pipeline rank a
compute and a communication stream, the pipeline schedule (gpipe, 1f1b, interleaved), data-parallel
gradient buckets overlapping backward (overlap=on), ZeRO-3 prefetch. Prints the keys of
'tpsim predict' with the simulated time, each rank's utilisation and the critical path; --trace
writes a Chrome trace (one process per pipeline rank, threads for compute and communication) that
opens in Perfetto beside 'tpsim exec --trace'.

Data-, tensor- and context-parallel replicas of a pipeline rank do the same work and are
simulated once, so a run of thousands of GPUs costs what one pipeline does.

Examples:
  tpsim sim --model gpt3-175b --hardware a100-80g --strategy dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full
  tpsim sim --model llama3-8b --strategy pp=4,dp=2,gbs=64,schedule=interleaved,vpp=2 --trace step.json
`

// simOptions are the flags of tpsim sim: predict's, and a trace file.
type simOptions struct {
	cli.Pricing
	JSON  bool
	Trace string
	Path  int // critical-path ops to print
}

// simReport is the JSON of tpsim sim: a prediction with the simulated time, and what only the
// simulator knows.
type simReport struct {
	*costmodel.Result
	ClosedFormTime costmodel.Time `json:"closed_form_time_s"`
	Utilization    []float64      `json:"utilization"`
	CriticalRank   int            `json:"critical_rank"`
	CriticalPath   []pathOp       `json:"critical_path"`
	Events         int            `json:"events"`
}

type pathOp struct {
	Rank   int     `json:"rank"`
	Stage  int     `json:"stage"`
	Micro  int     `json:"micro"`
	Phase  string  `json:"phase"`
	Kind   string  `json:"kind"`
	Module string  `json:"module"`
	Start  float64 `json:"start_s"`
	End    float64 `json:"end_s"`
}

func runSim(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseSim(args)
	if err == nil {
		err = o.run(stdout)
	}
	return cli.Finish("sim", fs, simHelp, err, stdout, stderr)
}

func parseSim(args []string) (*simOptions, *pflag.FlagSet, error) {
	o := &simOptions{}
	fs := cli.NewFlagSet("sim")
	o.Register(fs)
	fs.BoolVar(&o.JSON, "json", false, "print the simulated step as JSON")
	fs.StringVar(&o.Trace, "trace", "", "write the simulated timeline as a Chrome trace to this file")
	fs.IntVar(&o.Path, "path", 12, "number of critical-path ops to print (the last ones)")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	if o.Path < 0 {
		return o, fs, cli.Usagef("--path=%d; give the number of critical-path ops to print, 0 or more", o.Path)
	}
	return o, fs, o.Check(fs)
}

// maxSimEvents bounds a simulation: beyond it `tpsim predict` gives the answer at once.
const maxSimEvents = 20_000_000

func (o *simOptions) run(w io.Writer) error {
	p, err := o.Predict()
	if err != nil {
		return err
	}
	// Every op of a stage runs once per microbatch; replicas are simulated once.
	var events int64
	for _, s := range p.Program.Stages {
		events += int64(p.Program.Microbatches)*int64(len(s.Forward)+len(s.Backward)) + int64(len(s.Optimizer))
	}
	if events > maxSimEvents {
		return fmt.Errorf("the step has about %d ops to simulate (%d microbatches per pipeline), more than the %d sim lays out; use a larger microbatch (mbs) or `tpsim predict`, which prices it in closed form",
			events, p.Program.Microbatches, maxSimEvents)
	}
	res, err := sim.Simulate(p.Program, p.Coster, sim.Options{Spans: o.Trace != ""})
	if err != nil {
		return err
	}
	rep := &simReport{Result: p.Result, ClosedFormTime: p.Result.Time, Utilization: res.Utilization, CriticalRank: res.CriticalRank, Events: res.Events}
	rep.Result.SetTime(costmodel.Time{Step: res.Step, Compute: res.Compute, CommExposed: res.CommExposed, Bubble: res.Bubble, Optimizer: res.Optimizer},
		p.Peak, p.Program.Tokens)
	for _, s := range res.CriticalPath {
		rep.CriticalPath = append(rep.CriticalPath, pathOp{Rank: s.Rank, Stage: s.Stage, Micro: s.Micro, Phase: s.Phase.String(), Kind: string(s.Kind),
			Module: s.Module, Start: float64(s.Start), End: float64(s.End)})
	}
	if o.Trace != "" {
		if err := writeSimTrace(o.Trace, res); err != nil {
			return err
		}
	}
	if o.JSON {
		return reports.WriteJSON(w, rep)
	}
	return writeSim(w, rep, o.Path)
}

func writeSimTrace(path string, res *sim.Result) error {
	var spans []reports.Span
	for _, s := range res.Spans {
		thread, cat := "compute", s.Phase.String()
		if s.Stream == "comm" {
			thread, cat = "communication", "communication"
		}
		spans = append(spans, reports.Span{Process: fmt.Sprintf("pipeline rank %d", s.Rank), Thread: thread,
			Name: string(s.Kind) + " " + s.Module, Cat: cat, Start: float64(s.Start), Dur: float64(s.End - s.Start),
			Args: map[string]any{"microbatch": s.Micro, "stage": s.Stage}})
	}
	return writeTraceFile(path, spans)
}

func writeSim(w io.Writer, r *simReport, n int) error {
	ew := &reports.ErrWriter{W: w}
	t, cf := r.Time, r.ClosedFormTime
	ew.Printf("%s on %d x %s, %s\n", r.Model, r.Devices, r.Hardware, r.Strategy)
	ew.Printf("\nSimulated step %v (closed form %v), %d events\n", t.Step, cf.Step, r.Events)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  \tsimulated\tclosed form\n")
	for _, x := range []struct {
		name string
		a, b units.Seconds
	}{{"compute", t.Compute, cf.Compute}, {"comm exposed", t.CommExposed, cf.CommExposed}, {"bubble", t.Bubble, cf.Bubble}, {"optimizer", t.Optimizer, cf.Optimizer}} {
		fmt.Fprintf(tw, "  %s\t%v\t%v\n", x.name, x.a, x.b)
	}
	tw.Flush()
	ew.Printf("  MFU %.1f%%, %.1f hardware TFLOP/s per GPU, %.4g tokens/s\n", 100*r.MFU, r.HardwareTFLOPsPerGPU, r.TokensPerS)
	ew.Printf("\nCompute utilisation per pipeline rank:")
	for i, u := range r.Utilization {
		ew.Printf(" %d:%.0f%%", i, 100*u)
	}
	ew.Printf("\n\nCritical path (rank %d finishes last), last %d ops:\n", r.CriticalRank, min(n, len(r.CriticalPath)))
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  start\tend\trank\tmicro\tphase\top\n")
	for _, s := range r.CriticalPath[max(0, len(r.CriticalPath)-n):] {
		fmt.Fprintf(tw, "  %v\t%v\t%d\t%d\t%s\t%s %s\n", units.Seconds(s.Start), units.Seconds(s.End), s.Rank, s.Micro, s.Phase, s.Kind, s.Module)
	}
	tw.Flush()
	return ew.Err
}
