package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
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

// predict loads the flags' model and hardware and prices their strategy (predict and sim).
func predict(o *cli.Pricing) (*search.Prediction, error) {
	m, hw, err := o.Load(hosts)
	if err != nil {
		return nil, err
	}
	st, err := o.StrategyOf()
	if err != nil {
		return nil, err
	}
	return search.Predict(m, hw, st)
}

// predictOptions are the flags of tpsim predict.
type predictOptions struct {
	cli.Pricing
	JSON bool
}

var runPredict = subcommand("predict", predictHelp, parsePredict)

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

func (o *predictOptions) run(w, _ io.Writer) error {
	p, err := predict(&o.Pricing)
	if err != nil {
		return err
	}
	if o.JSON {
		return reports.WriteJSON(w, p.Result)
	}
	return p.WriteText(w)
}
