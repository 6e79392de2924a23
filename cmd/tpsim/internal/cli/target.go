package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Defaults of predict, sim and plan: Llama-2-7B on one DGX A100 node, fully sharded data parallel
// (ZeRO-3/FSDP), the usual way to train a 7B model on 8 GPUs; plain dp=8 does not fit in 80 GB.
const (
	DefaultModel    = "llama2-7b"
	DefaultHardware = "a100-80g"
	DefaultStrategy = "dp=8,zero=3"
)

// Target is what predict, sim and plan price: a model on a hardware profile.
type Target struct {
	Model    string // preset name or config.json path
	Hardware string // preset name or hardware JSON path
}

// RegisterTarget adds the --model and --hardware flags.
func (t *Target) RegisterTarget(fs *pflag.FlagSet) {
	fs.StringVar(&t.Model, "model", DefaultModel, "model: a preset name (see 'tpsim models') or a Hugging Face config.json")
	fs.StringVar(&t.Hardware, "hardware", DefaultHardware, "hardware: a preset name (see 'tpsim hardware') or a hardware JSON file")
}

// Load reads the model and the hardware profile, "host" through hosts.
func (t *Target) Load(hosts hardware.Loader) (*model.Model, *hardware.Hardware, error) {
	m, err := model.Load(t.Model)
	if err != nil {
		return nil, nil, err
	}
	hw, err := hosts.Load(t.Hardware)
	if err != nil {
		return nil, nil, err
	}
	return m, hw, nil
}

// Pricing is the flags that describe one strategy to price, shared by predict and sim: the
// target, the strategy string and the flags that override its keys.
type Pricing struct {
	Target
	Strategy  string // strategies.Parse form
	Seq       int    // sequence length; 0 keeps the strategy's (or the model's)
	Precision string // one of strategies.Precisions; "" keeps the strategy's
	Plan      string // strategies.ParsePlan form; "" keeps the strategy's (Megatron when tp > 1)
}

// Register adds the flags of Pricing.
func (o *Pricing) Register(fs *pflag.FlagSet) {
	o.RegisterTarget(fs)
	fs.StringVar(&o.Strategy, "strategy", DefaultStrategy, `strategy, e.g. "dp=24,tp=8,pp=8,mbs=1,gbs=2304,recompute=full,sp=off,zero=0"`)
	fs.IntVar(&o.Seq, "seq", 0, "sequence length in tokens; overrides the strategy's seq and the model's default")
	fs.StringVar(&o.Precision, "precision", "", "mixed (bf16 with fp32 Adam state), fp32 or fp8 (mixed with FP8 linears), as the strategy's precision= key; overrides it")
	fs.StringVar(&o.Plan, "plan", "", `tensor-parallel plan: a style ("colwise"), "megatron", a map ("0=colwise,2=rowwise") or a JSON file`)
}

// Check validates the registered flags' values (usage errors).
func (o *Pricing) Check(fs *pflag.FlagSet) error {
	if fs.Changed("seq") && o.Seq <= 0 {
		return Usagef("--seq=%d must be a positive number of tokens", o.Seq)
	}
	if fs.Changed("precision") {
		p, err := strategies.ParsePrecision("--precision", o.Precision)
		if err != nil {
			return Usagef("%s", strings.TrimPrefix(err.Error(), "strategies: "))
		}
		o.Precision = string(p)
	}
	return nil
}

// StrategyOf returns the strategy the flags describe, flags applied over the --strategy string.
func (o *Pricing) StrategyOf() (strategies.Strategy, error) {
	st, err := strategies.Parse(o.Strategy)
	if err != nil {
		return st, err
	}
	if o.Seq > 0 {
		st.Seq = o.Seq
	}
	if o.Precision != "" {
		st.Precision = strategies.Precision(o.Precision)
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

// ParseOptimizer reads --optimizer: sgd or adam, in any case.
func ParseOptimizer(s string) (strategies.Optimizer, error) {
	switch o := strategies.Optimizer(strings.ToLower(s)); o {
	case strategies.OptimizerSGD, strategies.OptimizerAdam:
		return o, nil
	}
	return "", Usagef("--optimizer=%q is not valid; use sgd or adam", s)
}

// ParseAttn reads --attn, in any case; "" is the flag's default, eager.
func ParseAttn(s string) (strategies.Attention, error) {
	switch a := strategies.Attention(strings.ToLower(s)); a {
	case "":
		return strategies.AttentionEager, nil
	case strategies.AttentionEager, strategies.AttentionFlash, strategies.AttentionFlash1:
		return a, nil
	}
	return "", Usagef("--attn=%q is not valid; use eager, flash or flash1", s)
}
