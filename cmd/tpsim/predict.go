package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/costmodel"
	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
)

// Defaults of tpsim predict: Llama-2-7B on one DGX A100 node, fully sharded data parallel
// (ZeRO-3/FSDP), the usual way to train a 7B model on 8 GPUs; plain dp=8 does not fit in 80 GB.
const (
	defaultModel    = "llama2-7b"
	defaultHardware = "a100-80g"
	defaultStrategy = "dp=8,zero=3"
)

const predictHelp = `Usage: tpsim predict [flags]

Price one strategy with the analytical cost model: memory per device by category, bytes sent per
mesh dimension, step time split into compute, exposed communication, pipeline bubble and optimizer,
FLOPs, MFU/HFU and tokens/s, and whether it fits in device memory.

Examples:
  tpsim predict --model gpt3-175b --hardware a100-80g \
      --strategy dp=16,tp=8,pp=12,mbs=1,gbs=1536,recompute=full
  tpsim predict --model llama2-7b --strategy dp=64,zero=3 --json
  tpsim predict --model path/to/config.json --hardware my-cluster.json --strategy dp=2,tp=4

Strategy keys: mesh dimensions pp, dp, cp, tp (their product is the device count) and options
mbs, gbs, seq, zero (0-3), recompute (none|selective|full|op), sp (on|off),
schedule (gpipe|1f1b|interleaved), vpp, precision (mixed|fp32), optimizer (adam|sgd),
attn (eager|flash|flash1), overlap (on|off), bucket_mb. Keys left out take their defaults; --json shows them resolved.
`

// predictOptions are the flags of tpsim predict.
type predictOptions struct {
	target
	Strategy  string // strategies.Parse form
	Seq       int    // sequence length; 0 keeps the strategy's (or the model's)
	Precision string // mixed or fp32; "" keeps the strategy's
	Plan      string // strategies.ParsePlan form; "" keeps the strategy's (Megatron when tp > 1)
	JSON      bool
}

func runPredict(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parsePredict(args)
	if err == nil {
		err = o.run(stdout)
	}
	return finish("predict", fs, predictHelp, err, stdout, stderr)
}

// parsePredict reads the flags of tpsim predict.
func parsePredict(args []string) (*predictOptions, *pflag.FlagSet, error) {
	o := &predictOptions{}
	fs := newFlagSet("predict")
	o.register(fs)
	fs.BoolVar(&o.JSON, "json", false, "print the prediction as JSON")
	if err := parseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	return o, fs, o.check(fs)
}

// target is what predict, sim and plan price: a model on a hardware profile.
type target struct {
	Model    string // preset name or config.json path
	Hardware string // preset name or hardware JSON path
}

// registerTarget adds the --model and --hardware flags.
func (t *target) registerTarget(fs *pflag.FlagSet) {
	fs.StringVar(&t.Model, "model", defaultModel, "model: a preset name (see 'tpsim models') or a Hugging Face config.json")
	fs.StringVar(&t.Hardware, "hardware", defaultHardware, "hardware: a preset name (see 'tpsim hardware') or a hardware JSON file")
}

// load reads the model and the hardware profile.
func (t *target) load() (*model.Model, *hardware.Hardware, error) {
	m, err := model.Load(t.Model)
	if err != nil {
		return nil, nil, err
	}
	hw, err := hardware.Load(t.Hardware)
	if err != nil {
		return nil, nil, err
	}
	return m, hw, nil
}

// register adds the flags that describe what to price (shared by predict and sim).
func (o *predictOptions) register(fs *pflag.FlagSet) {
	o.registerTarget(fs)
	fs.StringVar(&o.Strategy, "strategy", defaultStrategy, `strategy, e.g. "dp=24,tp=8,pp=8,mbs=1,gbs=2304,recompute=full,sp=off,zero=0"`)
	fs.IntVar(&o.Seq, "seq", 0, "sequence length in tokens; overrides the strategy's seq and the model's default")
	fs.StringVar(&o.Precision, "precision", "", "mixed (bf16 with fp32 Adam state) or fp32; overrides the strategy's precision")
	fs.StringVar(&o.Plan, "plan", "", `tensor-parallel plan: a style ("colwise"), "megatron", a map ("0=colwise,2=rowwise") or a JSON file`)
}

// check validates the registered flags' values.
func (o *predictOptions) check(fs *pflag.FlagSet) error {
	if fs.Changed("seq") && o.Seq <= 0 {
		return usagef("--seq=%d must be a positive number of tokens", o.Seq)
	}
	if fs.Changed("precision") {
		o.Precision = strings.ToLower(strings.TrimSpace(o.Precision))
		if o.Precision != strategies.PrecisionMixed && o.Precision != strategies.PrecisionFP32 {
			return usagef("--precision=%q is not valid; use %s or %s", o.Precision, strategies.PrecisionMixed, strategies.PrecisionFP32)
		}
	}
	return nil
}

// prediction is a Result with the inputs it was computed from.
type prediction struct {
	Model   *model.Model
	HW      *hardware.Hardware
	Program *program.Program
	Peak    units.FLOPsPerSecond
	Result  *costmodel.Result
}

// strategy returns the strategy the options describe, flags applied over the --strategy string.
func (o *predictOptions) strategy() (strategies.Strategy, error) {
	st, err := strategies.Parse(o.Strategy)
	if err != nil {
		return st, err
	}
	if o.Seq > 0 {
		st.Seq = o.Seq
	}
	if o.Precision != "" {
		st.Precision = o.Precision
	}
	if o.Plan != "" {
		plan, err := strategies.ParsePlan(o.Plan)
		if err != nil {
			return st, err
		}
		st.Plan = plan
	}
	return st, nil
}

// predict loads the inputs, lowers the model and prices the Program.
func (o *predictOptions) predict() (*prediction, error) {
	m, hw, err := o.load()
	if err != nil {
		return nil, err
	}
	st, err := o.strategy()
	if err != nil {
		return nil, err
	}
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
	return &prediction{Model: m, HW: hw, Program: prog, Peak: c.Peak(), Result: res}, nil
}

func (o *predictOptions) run(w io.Writer) error {
	p, err := o.predict()
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(w, p.Result)
	}
	return writePrediction(w, p)
}

// writePrediction prints the human-readable breakdown of a prediction.
func writePrediction(w io.Writer, p *prediction) error {
	r := p.Result
	st := p.Program.Strategy
	ew := &errWriter{w: w}
	ew.printf("%s (%s parameters) on %d x %s (%s)\n", r.Model, shortCount(p.Model.Params()), r.Devices, r.Hardware, p.HW.Device.Name)
	ew.printf("strategy  %s\n", r.Strategy)
	ew.printf("plan      %s\n", r.Plan)
	devMem := p.HW.Device.Memory
	if r.Feasible {
		ew.printf("feasible  yes: peak %.2f GiB of %.2f GiB per device (%s)\n", r.Memory.Peak.GiB(), devMem.GiB(), percent(float64(r.Memory.Peak), float64(devMem)))
	} else {
		ew.printf("feasible  NO: %s\n", r.Reason)
	}

	ew.printf("\nMemory per device (most loaded pipeline rank)\n")
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
	fmt.Fprintf(tw, "  peak\t%8.2f GiB  (%s of %.2f GiB)\n", r.Memory.Peak.GiB(), percent(float64(r.Memory.Peak), float64(devMem)), devMem.GiB())
	tw.Flush()

	ew.printf("\nCommunication per device per step\n")
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

	ew.printf("\nTime per step: %v\n", r.Time.Step)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	times := []struct {
		name string
		s    units.Seconds
	}{
		{"compute", r.Time.Compute}, {"comm exposed", r.Time.CommExposed}, {"bubble", r.Time.Bubble}, {"optimizer", r.Time.Optimizer},
	}
	for _, x := range times {
		fmt.Fprintf(tw, "  %s\t%9s\t%6s\n", x.name, x.s, percent(float64(x.s), float64(r.Time.Step)))
	}
	tw.Flush()

	ew.printf("\nThroughput\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  model FLOPs\t%v per step (all devices, recompute not counted)\n", r.FLOPs.Model)
	fmt.Fprintf(tw, "  hardware FLOPs\t%v per step (recompute and replicated work counted)\n", r.FLOPs.Hardware)
	fmt.Fprintf(tw, "  MFU / HFU\t%.1f%% / %.1f%% of %v\n", 100*r.MFU, 100*r.HFU, p.Peak)
	fmt.Fprintf(tw, "  TFLOP/s per GPU\t%.1f model, %.1f hardware\n", r.ModelTFLOPsPerGPU, r.HardwareTFLOPsPerGPU)
	fmt.Fprintf(tw, "  tokens/s\t%s (%s tokens per step)\n", reports.Commas(int64(r.TokensPerS+0.5)), reports.Commas(p.Program.Tokens))
	tw.Flush()

	if line := r.CommBound(st); line != "" {
		ew.printf("\n%s\n", line)
	}

	if len(r.Assumptions) > 0 {
		ew.printf("\nAssumptions\n")
		for _, a := range r.Assumptions {
			ew.printf("  - %s\n", a)
		}
	}
	return ew.err
}
