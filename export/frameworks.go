package export

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/strategies"
)

// megatron writes Megatron-LM's pretrain_gpt.py flags, one per line, after a # header. Flag
// names are megatron/training/arguments.py's (testdata/megatron_flags.txt keeps the list).
func (e *exporter) megatron() (string, error) {
	st, t, ms := e.st, e.t, e.st.Mesh
	switch st.ZeRO {
	case 2, 3:
		return "", fmt.Errorf("export: zero=%d is not expressible in Megatron-LM: its distributed optimizer (--use-distributed-optimizer) shards the optimizer states only (ZeRO-1) and Megatron-LM has no sharding of gradients or parameters across data parallel; use zero=1, or export zero=%d with --format pytorch (fully_shard) or deepspeed", st.ZeRO, st.ZeRO)
	}
	if ms.PP > 1 && st.Schedule == strategies.ScheduleGPipe {
		return "", fmt.Errorf("export: schedule=gpipe is not expressible in Megatron-LM, which runs 1F1B or, with virtual stages, interleaved 1F1B; use schedule=1f1b, or export with --format pytorch or torchtitan (ScheduleGPipe)")
	}
	if st.Recompute == strategies.RecomputeOp {
		return "", fmt.Errorf("export: recompute=op (torchtitan's per-op selective checkpointing) is not expressible in Megatron-LM; use recompute=selective (--recompute-granularity selective) or recompute=full")
	}
	var b strings.Builder
	b.WriteString(e.comment("# "))
	fmt.Fprintf(&b, "# Megatron-LM pretrain_gpt.py flags. Run on pp*dp*cp*tp = %d GPUs, e.g.\n", ms.Devices())
	b.WriteString("#   torchrun --nproc-per-node 8 --nnodes N pretrain_gpt.py $(grep -v '^#' THIS_FILE) <data, tokenizer and optimizer flags>\n")
	fmt.Fprintf(&b, "# Megatron-LM derives the data-parallel size %d from the world size: it has no flag.\n", ms.DP)
	flag := func(name string, v ...any) {
		b.WriteString(name)
		for _, x := range v {
			fmt.Fprintf(&b, " %v", x)
		}
		b.WriteString("\n")
	}
	flag("--tensor-model-parallel-size", ms.TP)
	flag("--pipeline-model-parallel-size", ms.PP)
	flag("--context-parallel-size", ms.CP)
	if st.SP {
		flag("--sequence-parallel")
	}
	if st.VPP > 1 {
		flag("--num-layers-per-virtual-pipeline-stage", e.layersPerChunk())
	}
	flag("--micro-batch-size", st.MBS)
	flag("--global-batch-size", st.GBS)
	flag("--seq-length", st.Seq)
	flag("--max-position-embeddings", st.Seq)
	switch st.Recompute {
	case strategies.RecomputeFull:
		// Every layer keeps its input and reruns its forward: uniform over chunks of one layer.
		flag("--recompute-granularity", "full")
		flag("--recompute-method", "uniform")
		flag("--recompute-num-layers", 1)
	case strategies.RecomputeSelective:
		flag("--recompute-granularity", "selective")
	}
	if st.ZeRO == 1 {
		flag("--use-distributed-optimizer")
	}
	switch st.Precision {
	case strategies.PrecisionMixed:
		flag("--bf16")
	case strategies.PrecisionFP8:
		flag("--bf16")
		flag("--fp8-format", "hybrid")
	}
	if st.FusedAttention() {
		flag("--use-flash-attn")
	}
	if st.Optimizer == strategies.OptimizerSGD {
		flag("--optimizer", "sgd")
	}
	flag("--num-layers", t.Layers)
	flag("--hidden-size", t.Hidden)
	flag("--num-attention-heads", t.Heads)
	if t.KVHeads != t.Heads {
		flag("--group-query-attention")
		flag("--num-query-groups", t.KVHeads)
	}
	if t.HeadDim*t.Heads != t.Hidden {
		flag("--kv-channels", t.HeadDim)
	}
	flag("--ffn-hidden-size", t.FFN)
	if t.Gated {
		flag("--swiglu")
	}
	if t.RMSNorm {
		flag("--normalization", "RMSNorm")
	}
	if !t.Learned {
		flag("--position-embedding-type", "rope")
	}
	if !t.Tied {
		flag("--untie-embeddings-and-output-weights")
	}
	if !t.Bias {
		flag("--disable-bias-linear")
	}
	if t.QKVBias {
		flag("--add-qkv-bias")
	}
	return b.String(), nil
}

// deepspeed writes a DeepSpeed JSON config. DeepSpeed's JSON holds data parallelism and ZeRO
// only: tensor, pipeline and sequence parallelism need code, which the errors name.
func (e *exporter) deepspeed() (string, error) {
	st, ms := e.st, e.st.Mesh
	if ms.TP > 1 {
		return "", fmt.Errorf("export: tp=%d is not expressible in a DeepSpeed JSON config: DeepSpeed's tensor parallelism comes from code (Megatron-DeepSpeed's --tensor-model-parallel-size, or AutoTP's deepspeed.tp_model_init); export tp with --format megatron or pytorch, or use tp=1 here", ms.TP)
	}
	if ms.PP > 1 {
		return "", fmt.Errorf("export: pp=%d is not expressible in a DeepSpeed JSON config: DeepSpeed pipelines need the model written as a deepspeed.pipe.PipelineModule; export pp with --format pytorch, torchtitan or megatron, or use pp=1 here", ms.PP)
	}
	if ms.CP > 1 {
		return "", fmt.Errorf("export: cp=%d is not expressible in a DeepSpeed JSON config: DeepSpeed's sequence parallelism (Ulysses, deepspeed.sequence.layer.DistributedAttention) wraps the attention in code; export cp with --format megatron or torchtitan, or use cp=1 here", ms.CP)
	}
	if st.Recompute == strategies.RecomputeSelective || st.Recompute == strategies.RecomputeOp {
		return "", fmt.Errorf("export: recompute=%s is not expressible in a DeepSpeed JSON config, whose activation_checkpointing configures deepspeed.checkpointing.checkpoint around whole blocks; use recompute=full or none", st.Recompute)
	}
	if st.Precision == strategies.PrecisionFP8 {
		return "", fmt.Errorf("export: precision=fp8 is not expressible in a DeepSpeed JSON config (FP8 linears come from Transformer Engine in code); use precision=mixed")
	}
	type obj = map[string]any
	cfg := obj{
		"_comment":                       strings.Join(e.header(), " "),
		"train_batch_size":               st.GBS,
		"train_micro_batch_size_per_gpu": st.MBS,
		// DeepSpeed requires train_batch_size = micro x accumulation x data-parallel size.
		"gradient_accumulation_steps": st.Microbatches(),
		"zero_optimization":           obj{"stage": st.ZeRO},
		"bf16":                        obj{"enabled": st.Precision == strategies.PrecisionMixed},
	}
	if st.Recompute == strategies.RecomputeFull {
		cfg["activation_checkpointing"] = obj{
			"_comment":                        "configures deepspeed.checkpointing.checkpoint, which the model code must call around each transformer block",
			"partition_activations":           false,
			"contiguous_memory_optimization":  false,
			"cpu_checkpointing":               false,
			"synchronize_checkpoint_boundary": false,
		}
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	return string(out) + "\n", nil
}

// torchtitan writes the sections of a torchtitan job TOML that the strategy sets (key names of
// torchtitan/config/job_config.py at 6404b932, 2025-08-03), to merge into the model's train
// config (e.g. torchtitan/models/llama3/train_configs/llama3_8b.toml), which names [model].
func (e *exporter) torchtitan() (string, error) {
	st, ms := e.st, e.st.Mesh
	if ms.TP > 1 && !st.SP {
		return "", fmt.Errorf("export: sp=off with tp=%d is not expressible in torchtitan, whose tensor parallelism (apply_tp) always shards the norms' sequence (SequenceParallel); use sp=on", ms.TP)
	}
	if st.Recompute == strategies.RecomputeSelective {
		return "", fmt.Errorf("export: recompute=selective (Megatron's attention-core recompute) is not expressible in torchtitan, whose selective mode is per layer or per op; use recompute=op (selective_ac_option = \"op\") or recompute=full")
	}
	var b strings.Builder
	b.WriteString(e.comment("# "))
	b.WriteString("# Merge into the model's torchtitan train config, which names [model] (name, flavor).\n")
	shard, replicate := 1, ms.DP
	reshard := ""
	switch st.ZeRO {
	case 3:
		shard, replicate = ms.DP, 1
	case 1, 2:
		shard, replicate = ms.DP, 1
		reshard = "never"
	}
	if st.Precision == strategies.PrecisionFP8 {
		b.WriteString("\n[model]\nconverters = [\"float8\"]\n")
	}
	b.WriteString("\n[parallelism]\n")
	fmt.Fprintf(&b, "data_parallel_shard_degree = %d\n", shard)
	fmt.Fprintf(&b, "data_parallel_replicate_degree = %d\n", replicate)
	if reshard != "" {
		fmt.Fprintf(&b, "# zero=%d: FSDP2 without resharding after forward gathers parameters once per step, as ZeRO-1/2\n", st.ZeRO)
		b.WriteString("# communicate; FSDP2 still keeps parameters sharded at rest, below ZeRO-1/2's memory (an approximation).\n")
		fmt.Fprintf(&b, "fsdp_reshard_after_forward = %q\n", reshard)
	}
	fmt.Fprintf(&b, "tensor_parallel_degree = %d\n", ms.TP)
	fmt.Fprintf(&b, "pipeline_parallel_degree = %d\n", ms.PP)
	fmt.Fprintf(&b, "context_parallel_degree = %d\n", ms.CP)
	if ms.PP > 1 {
		fmt.Fprintf(&b, "pipeline_parallel_schedule = %q\n", scheduleClass(st.Schedule)[len("Schedule"):])
		fmt.Fprintf(&b, "pipeline_parallel_microbatch_size = %d\n", st.MBS)
		fmt.Fprintf(&b, "pipeline_parallel_layers_per_stage = %d\n", e.layersPerChunk())
	}
	b.WriteString("\n[activation_checkpoint]\n")
	switch st.Recompute {
	case strategies.RecomputeNone:
		b.WriteString("mode = \"none\"\n")
	case strategies.RecomputeFull:
		b.WriteString("mode = \"full\"\n")
	case strategies.RecomputeOp:
		b.WriteString("mode = \"selective\"\nselective_ac_option = \"op\"\n")
	}
	b.WriteString("\n[training]\n")
	local := st.MBS
	if ms.PP > 1 {
		// Under pipeline parallel torchtitan splits the local batch into microbatches itself.
		local = st.GBS / ms.DP
	}
	fmt.Fprintf(&b, "local_batch_size = %d\n", local)
	fmt.Fprintf(&b, "global_batch_size = %d\n", st.GBS)
	fmt.Fprintf(&b, "seq_len = %d\n", st.Seq)
	if st.Precision == strategies.PrecisionFP32 {
		b.WriteString("mixed_precision_param = \"float32\"\n")
	} else {
		b.WriteString("mixed_precision_param = \"bfloat16\"\n")
	}
	return b.String(), nil
}

// scheduleClass is torch.distributed.pipelining's schedule class for s.
func scheduleClass(s strategies.Schedule) string {
	switch s {
	case strategies.ScheduleGPipe:
		return "ScheduleGPipe"
	case strategies.ScheduleInterleaved:
		return "ScheduleInterleaved1F1B"
	}
	return "Schedule1F1B"
}

// hfTPPlan writes the base_model_tp_plan of transformers' LlamaConfig
// (src/transformers/models/llama/configuration_llama.py): the Megatron plan in Hugging Face
// module names, relative to LlamaModel.
func (e *exporter) hfTPPlan() (string, error) {
	if err := e.llamaShaped(); err != nil {
		return "", err
	}
	notes := []string{strings.Join(e.header(), " "),
		"base_model_tp_plan shards the tp dimension only (Megatron plan: q/k/v, gate/up colwise; o, down rowwise); mesh, batch, ZeRO and recompute are the trainer's."}
	if e.st.SP {
		notes = append(notes, "sp=on is left out: these plan entries shard the linears only and keep the norms' activations replicated.")
	}
	// Ordered by hand: encoding/json sorts map keys, and this order is LlamaConfig's.
	var b strings.Builder
	c, _ := json.Marshal(strings.Join(notes, " "))
	fmt.Fprintf(&b, "{\n  \"_comment\": %s,\n  \"base_model_tp_plan\": {\n", c)
	entries := [][2]string{
		{"layers.*.self_attn.q_proj", "colwise"}, {"layers.*.self_attn.k_proj", "colwise"},
		{"layers.*.self_attn.v_proj", "colwise"}, {"layers.*.self_attn.o_proj", "rowwise"},
		{"layers.*.mlp.gate_proj", "colwise"}, {"layers.*.mlp.up_proj", "colwise"},
		{"layers.*.mlp.down_proj", "rowwise"},
	}
	for i, kv := range entries {
		sep := ","
		if i == len(entries)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    %q: %q%s\n", kv[0], kv[1], sep)
	}
	b.WriteString("  }\n}\n")
	return b.String(), nil
}
