// Package export renders a strategy for a dense transformer into the configuration of a training
// framework: a runnable PyTorch script (DeviceMesh, parallelize_module, fully_shard,
// torch.distributed.pipelining), Megatron-LM flags, a DeepSpeed JSON config, a torchtitan TOML
// and a Hugging Face base_model_tp_plan. What a format cannot express is an error that names it
// and the fix; what it expresses only approximately is said in a comment of the output.
package export

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Format is an output format.
type Format string

// Formats.
const (
	PyTorch    Format = "pytorch"
	TorchTitan Format = "torchtitan"
	Megatron   Format = "megatron"
	DeepSpeed  Format = "deepspeed"
	HFTPPlan   Format = "hf-tp-plan"
)

// Formats lists every format in the order messages list them.
var Formats = []Format{PyTorch, TorchTitan, Megatron, DeepSpeed, HFTPPlan}

// FormatHelp describes each format, for tpsim export's help.
const FormatHelp = `  pytorch     a torchrun script: init_device_mesh (pp, dp, cp, tp), the Megatron plan through
              parallelize_module in Hugging Face Llama module names, loss_parallel, fully_shard
              (FSDP2) for ZeRO, activation checkpointing, torch.distributed.pipelining schedules
  torchtitan  the [parallelism], [activation_checkpoint] and [training] sections of a job TOML
  megatron    Megatron-LM pretrain_gpt.py flags, one a line
  deepspeed   a DeepSpeed JSON config (data parallel and ZeRO; tp, pp and cp need code)
  hf-tp-plan  a transformers base_model_tp_plan (LlamaConfig's keys)
`

// ParseFormat reads a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == strings.ToLower(strings.TrimSpace(s)) {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("export: unknown format %q; use one of %s", s, strings.Join(names, ", "))
}

// Options says what the header of an output names.
type Options struct {
	// Version is the tpsim version the output came from (as tpsim version prints it, one line).
	Version string
}

// Render writes strategy st for model m in format f. st is resolved against m and validated
// first; the error names what f cannot express and the fix.
func Render(f Format, m *model.Model, st strategies.Strategy, opt Options) ([]byte, error) {
	st = st.Resolve(m)
	if err := st.Validate(m); err != nil {
		return nil, err
	}
	if err := supported(m, st); err != nil {
		return nil, err
	}
	e := &exporter{m: m, t: m.Transformer, st: st, opt: opt, f: f}
	var out string
	var err error
	switch f {
	case PyTorch:
		out, err = e.pytorch()
	case TorchTitan:
		out, err = e.torchtitan()
	case Megatron:
		out, err = e.megatron()
	case DeepSpeed:
		out, err = e.deepspeed()
	case HFTPPlan:
		out, err = e.hfTPPlan()
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// supported refuses what no format here renders: models other than dense transformers and
// tensor-parallel plans other than the family's Megatron plan.
func supported(m *model.Model, st strategies.Strategy) error {
	t := m.Transformer
	if t == nil {
		return fmt.Errorf("export: model %s is not a transformer; export renders dense transformers (the llama and gpt families); use tpsim exec for an MLP", m.Name)
	}
	if t.MoE != nil || t.MLA != nil {
		return fmt.Errorf("export: model %s has mixture-of-experts or latent attention layers, which export does not render; export a dense model (llama, gpt, qwen, mistral families)", m.Name)
	}
	if st.Plan != nil && st.Plan.Name != "megatron" {
		return fmt.Errorf("export: strategy has a custom tensor-parallel plan; export renders the family's Megatron plan only (drop --plan, or write the plan into the exported script's parallelize_module dict by hand)")
	}
	return nil
}

type exporter struct {
	m   *model.Model
	t   *model.Transformer
	st  strategies.Strategy
	opt Options
	f   Format
}

// header is the lines every output starts with, without comment markers.
func (e *exporter) header() []string {
	v := strings.TrimSpace(e.opt.Version)
	if v == "" {
		v = "unknown"
	}
	return []string{
		fmt.Sprintf("Written by tpsim export --format %s (tpsim %s).", e.f, v),
		fmt.Sprintf("Model %s; strategy %s.", e.m.Name, e.st.Short()),
	}
}

func (e *exporter) comment(prefix string) string {
	var b strings.Builder
	for _, l := range e.header() {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// llamaShaped reports whether the model has Hugging Face Llama's modules: a SwiGLU MLP,
// RMSNorm, rotary positions and no biases (Llama, Mistral, and Qwen2 apart from its qkv bias,
// which LlamaConfig's attention_bias covers only as a bias on every projection).
func (e *exporter) llamaShaped() error {
	t := e.t
	if !t.Gated || !t.RMSNorm || t.Learned || t.Bias || t.QKVBias || t.QKNorm || t.PostNorms || t.Sinks || t.Window > 0 {
		return fmt.Errorf("export: --format %s writes Hugging Face Llama module names (LlamaForCausalLM), and model %s (family %s) is not Llama-shaped (it needs SwiGLU, RMSNorm, rotary positions, no biases, no qk-norm, post-norms, sinks or sliding window); export it with --format megatron, torchtitan or deepspeed, which need no module names", e.f, e.m.Name, e.m.Family)
	}
	return nil
}

// megatronSelective and friends name the recompute modes for messages.
func (e *exporter) layersPerChunk() int {
	return e.t.Layers / (e.st.Mesh.PP * e.st.VPP)
}
