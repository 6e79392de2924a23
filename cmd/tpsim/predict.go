package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/strategies"
	"github.com/tpsim/tpsim/units"
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
schedule (gpipe|1f1b|interleaved), vpp, precision (mixed|fp32|fp8), optimizer (adam|sgd),
attn (eager|flash|flash1), overlap (on|off), bucket_mb, tpoverlap (on|off|full: the backward's
tensor-parallel collectives under the linears' products, as Megatron-LM runs them; full also
sequence parallel's forward gathers and reduce-scatters, in chunks under the products beside
them, as Transformer Engine's userbuffers and torchtitan's AsyncTP), tensorlists
(on|off: ZeRO-3's collectives over lists of one tensor per rank, a copy per rank and parameter, as
DeepSpeed's ZeRO-3 of 2021 ran them), prefetch (ZeRO-3 units, transformer layers, whose gathers
may run ahead of the one computing; 1, FSDP's default), fusion (on|off: each block's bias, dropout
and residual add as one kernel, Megatron-LM's --bias-dropout-fusion), compile (on|off: each chain
of pointwise ops and norms as one kernel, torch.compile's Inductor), kernels (fused|eager: the
RMSNorm and rotary embedding as one kernel each, or as eager PyTorch ops, torchtitan's "rmsnorm"
and Hugging Face's Llama). Keys left out take their
defaults; --json shows them resolved.
`

// predictOptions are the flags of tpsim predict.
type predictOptions struct {
	cli.Pricing
	JSON bool
}

func runPredict(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parsePredict(args)
	if err == nil {
		err = o.run(stdout)
	}
	return cli.Finish("predict", fs, predictHelp, err, stdout, stderr)
}

// parsePredict reads the flags of tpsim predict.
func parsePredict(args []string) (*predictOptions, *pflag.FlagSet, error) {
	o := &predictOptions{}
	fs := cli.NewFlagSet("predict")
	o.Register(fs)
	fs.BoolVar(&o.JSON, "json", false, "print the prediction as JSON")
	if err := cli.ParseFlags(fs, args, 0); err != nil {
		return o, fs, err
	}
	return o, fs, o.Check(fs)
}

func (o *predictOptions) run(w io.Writer) error {
	p, err := o.Predict()
	if err != nil {
		return err
	}
	if o.JSON {
		return reports.WriteJSON(w, p.Result)
	}
	return writePrediction(w, p)
}

// writePrediction prints the human-readable breakdown of a prediction.
func writePrediction(w io.Writer, p *cli.Prediction) error {
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
