package search

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/sim"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Prediction is one strategy priced by the cost model, with the inputs it was computed from
// (tpsim predict and sim).
type Prediction struct {
	Model   *model.Model
	HW      *hardware.Hardware
	Program *program.Program
	Coster  *costmodel.Coster
	Peak    units.FLOPsPerSecond
	Result  *costmodel.Result
}

// Predict lowers the model with st and prices the Program on hw.
func Predict(m *model.Model, hw *hardware.Hardware, st strategies.Strategy) (*Prediction, error) {
	prog, err := program.Lower(m, st)
	if err != nil {
		return nil, err
	}
	c, err := costmodel.NewCoster(prog, hw)
	if err != nil {
		return nil, err
	}
	res, err := costmodel.Predict(prog, hw)
	if err != nil {
		return nil, err
	}
	return &Prediction{Model: m, HW: hw, Program: prog, Coster: c, Peak: c.Peak(), Result: res}, nil
}

// Simulated is the JSON of tpsim sim: a prediction with the simulated time, and what only the
// simulator knows.
type Simulated struct {
	*costmodel.Result
	ClosedFormTime costmodel.Time `json:"closed_form_time_s"`
	Utilization    []float64      `json:"utilization"`
	CriticalRank   int            `json:"critical_rank"`
	CriticalPath   []PathOp       `json:"critical_path"`
	Events         int            `json:"events"`
}

// PathOp is one op of the critical path.
type PathOp struct {
	Rank   int     `json:"rank"`
	Stage  int     `json:"stage"`
	Micro  int     `json:"micro"`
	Phase  string  `json:"phase"`
	Kind   string  `json:"kind"`
	Module string  `json:"module"`
	Start  float64 `json:"start_s"`
	End    float64 `json:"end_s"`
}

// MaxSimEvents bounds a simulation: beyond it `tpsim predict` gives the answer at once.
const MaxSimEvents = 20_000_000

// Simulate lays the prediction's step out with the simulator (with every span when spans is
// set): the Result's time becomes the simulated one, the closed form's kept beside it. p.Result
// is changed.
func (p *Prediction) Simulate(spans bool) (*Simulated, *sim.Result, error) {
	// Every op of a stage runs once per microbatch; replicas are simulated once.
	var events int64
	for _, s := range p.Program.Stages {
		events += int64(p.Program.Microbatches)*int64(len(s.Forward)+len(s.Backward)) + int64(len(s.Optimizer))
	}
	if events > MaxSimEvents {
		return nil, nil, fmt.Errorf("the step has about %d ops to simulate (%d microbatches per pipeline), more than the %d sim lays out; use a larger microbatch (mbs) or `tpsim predict`, which prices it in closed form",
			events, p.Program.Microbatches, MaxSimEvents)
	}
	res, err := sim.Simulate(p.Program, p.Coster, sim.Options{Spans: spans})
	if err != nil {
		return nil, nil, err
	}
	rep := &Simulated{Result: p.Result, ClosedFormTime: p.Result.Time, Utilization: res.Utilization, CriticalRank: res.CriticalRank, Events: res.Events}
	rep.Result.SetTime(costmodel.Time{Step: res.Step, Compute: res.Compute, CommExposed: res.CommExposed, Bubble: res.Bubble, Optimizer: res.Optimizer},
		p.Peak, p.Program.Tokens)
	for _, s := range res.CriticalPath {
		rep.CriticalPath = append(rep.CriticalPath, PathOp{Rank: s.Rank, Stage: s.Stage, Micro: s.Micro, Phase: s.Phase.String(), Kind: string(s.Kind),
			Module: s.Module, Start: float64(s.Start), End: float64(s.End)})
	}
	return rep, res, nil
}

// WriteText prints the human-readable breakdown of a prediction (tpsim predict).
func (p *Prediction) WriteText(w io.Writer) error {
	r := p.Result
	st := p.Program.Strategy
	ew := &reports.ErrWriter{W: w}
	ew.Printf("%s (%s parameters) on %d x %s (%s)\n", r.Model, reports.ShortCount(p.Model.Params()), r.Devices, r.Hardware, p.HW.Device.Name)
	ew.Printf("strategy  %s\n", r.Strategy)
	ew.Printf("plan      %s\n", r.Plan)
	devMem := p.HW.Device.Memory
	if r.Feasible {
		ew.Printf("feasible  yes: peak %.2f GiB of %.2f GiB per device (%s)\n", r.Memory.Peak.GiB(), devMem.GiB(), reports.Percent(float64(r.Memory.Peak), float64(devMem)))
	} else {
		ew.Printf("feasible  NO: %s\n", r.Reason)
	}

	ew.Printf("\nMemory per device (most loaded pipeline rank)\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	mem := []struct {
		name string
		b    units.Bytes
	}{
		{"params", r.Memory.Params}, {"grads", r.Memory.Grads}, {"optimizer", r.Memory.Optimizer},
		{"activations", r.Memory.Activations}, {"workspace", r.Memory.Workspace}, {"comm", r.Memory.Comm},
	}
	for _, x := range mem {
		fmt.Fprintf(tw, "  %s\t%8.2f GiB\n", x.name, x.b.GiB())
	}
	fmt.Fprintf(tw, "  peak\t%8.2f GiB  (%s of %.2f GiB)\n", r.Memory.Peak.GiB(), reports.Percent(float64(r.Memory.Peak), float64(devMem)), devMem.GiB())
	tw.Flush()

	ew.Printf("\nCommunication per device per step\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  dim\tgroup\tbytes sent\ttime (exposed or hidden)\n")
	rows := 0
	for _, d := range strategies.DimOrder {
		size := st.Mesh.Size(d)
		if size == 1 && r.CommBytes[d] == 0 {
			continue
		}
		rows++
		fmt.Fprintf(tw, "  %s\t%d\t%v\t%v\n", d, size, r.CommBytes[d], r.CommTime[d])
	}
	if rows == 0 {
		fmt.Fprintf(tw, "  none (one device)\n")
	}
	tw.Flush()

	ew.Printf("\nTime per step: %v\n", r.Time.Step)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	times := []struct {
		name string
		s    units.Seconds
	}{
		{"compute", r.Time.Compute}, {"comm exposed", r.Time.CommExposed}, {"bubble", r.Time.Bubble}, {"optimizer", r.Time.Optimizer},
	}
	for _, x := range times {
		fmt.Fprintf(tw, "  %s\t%9s\t%6s\n", x.name, x.s, reports.Percent(float64(x.s), float64(r.Time.Step)))
	}
	tw.Flush()

	ew.Printf("\nThroughput\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  model FLOPs\t%v per step (all devices, recompute not counted)\n", r.FLOPs.Model)
	fmt.Fprintf(tw, "  hardware FLOPs\t%v per step (recompute and replicated work counted)\n", r.FLOPs.Hardware)
	fmt.Fprintf(tw, "  MFU / HFU\t%.1f%% / %.1f%% of %v\n", 100*r.MFU, 100*r.HFU, p.Peak)
	fmt.Fprintf(tw, "  TFLOP/s per GPU\t%.1f model, %.1f hardware\n", r.ModelTFLOPsPerGPU, r.HardwareTFLOPsPerGPU)
	fmt.Fprintf(tw, "  tokens/s\t%s (%s tokens per step)\n", reports.Commas(int64(r.TokensPerS+0.5)), reports.Commas(p.Program.Tokens))
	tw.Flush()

	if line := r.CommBound(st); line != "" {
		ew.Printf("\n%s\n", line)
	}

	if len(r.Assumptions) > 0 {
		ew.Printf("\nAssumptions\n")
		for _, a := range r.Assumptions {
			ew.Printf("  - %s\n", a)
		}
	}
	return ew.Err
}

// WriteText prints the simulated step against the closed form, each pipeline rank's utilisation
// and the last n ops of the critical path (tpsim sim).
func (r *Simulated) WriteText(w io.Writer, n int) error {
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
