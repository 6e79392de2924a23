package export

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/strategies"
)

// pytorch writes a runnable torchrun script: the model as transformers' LlamaForCausalLM built
// on the meta device, a 4-D DeviceMesh (pp, dp, cp, tp), the Megatron plan through
// parallelize_module in Hugging Face Llama module names (sequence parallel as torchtitan's
// apply_tp writes it), loss_parallel for the colwise head, activation checkpointing,
// fully_shard (FSDP2) for ZeRO, and torch.distributed.pipelining stages and schedule.
// API names: torch.distributed.tensor.parallel, torch.distributed.fsdp.fully_shard and
// torch.distributed.pipelining as PyTorch 2.6+ documents them.
func (e *exporter) pytorch() (string, error) {
	if err := e.pyRefuse(); err != nil {
		return "", err
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	b.WriteString(e.comment("# "))
	for _, section := range []func(func(string, ...any)){e.pyHead, e.pyTP, e.pyAC, e.pyDP, e.pyMain} {
		section(w)
	}
	return b.String(), nil
}

// pyRefuse is the error for what the PyTorch script does not express, naming the format that does.
func (e *exporter) pyRefuse() error {
	st, ms := e.st, e.st.Mesh
	if err := e.llamaShaped(); err != nil {
		return err
	}
	if ms.CP > 1 {
		return fmt.Errorf("export: cp=%d is not expressed in the PyTorch script: PyTorch's context parallel (torch.distributed.tensor.experimental.context_parallel) is experimental and needs the attention's buffers named; export cp with --format torchtitan or megatron, or use cp=1", ms.CP)
	}
	if st.Recompute == strategies.RecomputeOp {
		return fmt.Errorf("export: recompute=op is not expressed in the PyTorch script; export it with --format torchtitan (selective_ac_option = \"op\"), or use recompute=full or selective")
	}
	if st.Precision == strategies.PrecisionFP8 {
		return fmt.Errorf("export: precision=fp8 is not expressed in the PyTorch script (FP8 linears need torchao's convert_to_float8_training); export it with --format torchtitan or megatron, or use precision=mixed")
	}
	if ms.PP > 1 && st.ZeRO >= 2 {
		return fmt.Errorf("export: zero=%d with pp=%d is not expressed in the PyTorch script; use zero=0 or 1", st.ZeRO, ms.PP)
	}
	return nil
}

// pyHead writes the run line, the imports, the sizes and the model's LlamaConfig.
func (e *exporter) pyHead(w func(format string, a ...any)) {
	st, t, ms := e.st, e.t, e.st.Mesh
	w(`# Run on pp*dp*cp*tp = %d ranks: torchrun --nproc-per-node %d THIS_FILE [--steps N] [--layers L]
# (on CPU over gloo as given; on GPUs with NCCL unchanged). Module names: Hugging Face
# transformers' LlamaForCausalLM (model.layers.*.self_attn.q_proj, ...); tpsim's names map as
# embed -> model.embed_tokens, layers.N.norm1 -> input_layernorm, attn.qkv -> self_attn.{q,k,v}_proj,
# attn.proj -> self_attn.o_proj, norm2 -> post_attention_layernorm, mlp.{gate,up,down} ->
# mlp.{gate,up,down}_proj, norm -> model.norm, head -> lm_head.
`, ms.Devices(), ms.Devices())
	w(`import argparse
import os
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    loss_parallel,
    parallelize_module,
)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
from transformers import LlamaConfig, LlamaForCausalLM

PP, DP, CP, TP = %d, %d, %d, %d
MBS, GBS, SEQ = %d, %d, %d
MICROBATCHES = GBS // (DP * MBS)
LAYERS = %d
VPP = %d
`, ms.PP, ms.DP, ms.CP, ms.TP, st.MBS, st.GBS, st.Seq, t.Layers, st.VPP)
	w(`

def llama_config(layers):
    return LlamaConfig(
        vocab_size=%d,
        hidden_size=%d,
        intermediate_size=%d,
        num_hidden_layers=layers,
        num_attention_heads=%d,
        num_key_value_heads=%d,
        head_dim=%d,
        max_position_embeddings=SEQ,
        tie_word_embeddings=%s,
    )
`, t.Vocab, t.Hidden, t.FFN, t.Heads, t.KVHeads, t.HeadDim, pyBool(t.Tied))

}

// pyTP writes apply_tp: the Megatron plan through parallelize_module, sequence parallel as torchtitan's apply_tp lays it out.
func (e *exporter) pyTP(w func(format string, a ...any)) {
	st, ms := e.st, e.st.Mesh
	w(`

def present(model, plan):
    """The entries of plan whose module model has (a pipeline stage lacks the embedding or the head)."""
    out = {}
    for name, style in plan.items():
        try:
            model.get_submodule(name)
        except AttributeError:
            continue
        out[name] = style
    return out
`)
	w("\n\ndef apply_tp(model, tp_mesh):\n")
	if ms.TP == 1 {
		w("    return  # tp=1: no tensor parallelism\n")
	} else {
		w("    # The Megatron plan in Hugging Face Llama names (torchtitan's apply_tp for the layout of sequence parallel).\n")
		if st.SP {
			w(`    parallelize_module(model, tp_mesh, present(model, {
        "model.embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "model.norm": SequenceParallel(),
        # Colwise head: logits stay sharded over the vocabulary for loss_parallel.
        "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
    }))
    for layer in model.model.layers:
        parallelize_module(layer, tp_mesh, {
            "input_layernorm": SequenceParallel(),
            "self_attn": PrepareModuleInput(
                input_kwarg_layouts={"hidden_states": Shard(1)},
                desired_input_kwarg_layouts={"hidden_states": Replicate()},
            ),
            "self_attn.q_proj": ColwiseParallel(),
            "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(output_layouts=Shard(1)),
            "post_attention_layernorm": SequenceParallel(),
            "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "mlp.gate_proj": ColwiseParallel(),
            "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(output_layouts=Shard(1)),
        })
`)
		} else {
			w(`    parallelize_module(model, tp_mesh, present(model, {
        "model.embed_tokens": RowwiseParallel(input_layouts=Replicate()),
        # Colwise head: logits stay sharded over the vocabulary for loss_parallel.
        "lm_head": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False),
    }))
    for layer in model.model.layers:
        parallelize_module(layer, tp_mesh, {
            "self_attn.q_proj": ColwiseParallel(),
            "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(),
            "mlp.gate_proj": ColwiseParallel(),
            "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(),
        })
`)
		}
	}

}

// pyAC writes apply_ac: full or selective activation checkpointing per decoder layer.
func (e *exporter) pyAC(w func(format string, a ...any)) {
	st := e.st
	w("\n\ndef apply_ac(model):\n")
	switch st.Recompute {
	case strategies.RecomputeNone:
		w("    return  # recompute=none\n")
	case strategies.RecomputeFull:
		w(`    # recompute=full: each decoder layer keeps its input and reruns its forward in backward.
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False)
`)
	case strategies.RecomputeSelective:
		w(`    # recompute=selective (Korthikanti et al. 2022): recompute the attention core only, save every other op.
    core = {
        torch.ops.aten._scaled_dot_product_flash_attention.default,
        torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
        torch.ops.aten._scaled_dot_product_efficient_attention.default,
        torch.ops.aten._scaled_dot_product_cudnn_attention.default,
        torch.ops.aten._softmax.default,
    }

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.PREFER_RECOMPUTE if op in core else CheckpointPolicy.MUST_SAVE

    def context_fn():
        return create_selective_checkpoint_contexts(policy)

    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False, context_fn=context_fn)
`)
	}

}

// pyDP writes apply_dp: DDP (replicate) or FSDP2 (fully_shard) for ZeRO.
func (e *exporter) pyDP(w func(format string, a ...any)) {
	st, ms := e.st, e.st.Mesh
	w("\n\ndef apply_dp(model, dp_mesh):\n")
	mp := "MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)"
	if st.Precision == strategies.PrecisionFP32 {
		mp = "MixedPrecisionPolicy()"
	}
	switch {
	case ms.DP == 1:
		w("    return  # dp=1: no data parallelism\n")
	case st.ZeRO == 0:
		w(`    # zero=0: replicated parameters, gradients all-reduced (DDP); composable replicate as torchtitan's apply_ddp.
    from torch.distributed._composable.replicate import replicate
    replicate(model, device_mesh=dp_mesh, bucket_cap_mb=%d)
`, st.BucketBytes>>20)
	default:
		reshard := "True"
		if st.ZeRO != 3 {
			reshard = "False"
			w(`    # zero=%d approximated by FSDP2 without resharding after forward: parameters are gathered once
    # per step, as ZeRO-1/2 communicate, but stay sharded at rest (memory below ZeRO-1/2's).
`, st.ZeRO)
		} else {
			w("    # zero=3: FSDP2, each decoder layer one all-gather unit, resharded after forward.\n")
		}
		w(`    mp = %s
    for layer in model.model.layers:
        fully_shard(layer, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=%s)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=%s)
`, mp, reshard, reshard)
	}

}

// pyMain writes the pipeline Stage, the loss and main: mesh, model on the meta device, the parallelisms applied, the training loop.
func (e *exporter) pyMain(w func(format string, a ...any)) {
	st := e.st
	w(`

class Stage(nn.Module):
    """Layers [lo, hi) of a LlamaForCausalLM, with the embedding on the first and the norm and head on the last."""

    def __init__(self, model, lo, hi, first, last):
        super().__init__()
        self.model = nn.Module()
        self.model.embed_tokens = model.model.embed_tokens if first else None
        self.model.layers = nn.ModuleList(model.model.layers[lo:hi])
        self.model.rotary_emb = model.model.rotary_emb
        self.model.norm = model.model.norm if last else None
        self.lm_head = model.lm_head if last else None

    def forward(self, x):
        h = self.model.embed_tokens(x) if self.model.embed_tokens is not None else x
        pos = torch.arange(SEQ, device=h.device).unsqueeze(0)
        pe = self.model.rotary_emb(h, pos)
        for layer in self.model.layers:
            h = layer(h, position_ids=pos, position_embeddings=pe)
            h = h[0] if isinstance(h, tuple) else h
        if self.lm_head is not None:
            h = self.lm_head(self.model.norm(h))
        return h


def loss_fn(logits, labels):
    with loss_parallel() if TP > 1 else nullcontext():
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=LAYERS, help="fewer layers for a smoke run")
    args = p.parse_args()
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    if device_type == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    mesh = init_device_mesh(device_type, (PP, DP, CP, TP), mesh_dim_names=("pp", "dp", "cp", "tp"))
    device = torch.device(device_type, torch.cuda.current_device()) if device_type == "cuda" else torch.device("cpu")
    config = llama_config(args.layers)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)

    n_chunks = PP * VPP
    per_chunk = args.layers // n_chunks
    pp_rank = mesh["pp"].get_local_rank()
    # Chunk c of n_chunks runs on pp rank c %% PP (the interleaved schedule's looping placement).
    chunks = [c for c in range(n_chunks) if c %% PP == pp_rank]
    # A Stage, even the whole model's, computes the rotary embedding for the whole sequence: under
    # sequence parallel LlamaModel would take the local sequence shard's length for it.
    parts = [Stage(model, c * per_chunk, (c + 1) * per_chunk, c == 0, c == n_chunks - 1) for c in chunks]
    for part in parts:
        apply_tp(part, mesh["tp"])
        apply_ac(part)
        apply_dp(part, mesh["dp"])
        part.to_empty(device=device)
        with torch.no_grad():
            for prm in part.parameters():
                prm.normal_(0.0, 0.02)
        part.model.rotary_emb.__init__(config=config, device=device)  # its buffers are not parameters
    params = [prm for part in parts for prm in part.parameters()]
    opt = torch.optim.%s(params, lr=1e-4)
    if PP > 1:
        stages = [PipelineStage(part, c, n_chunks, device, group=mesh["pp"].get_group()) for part, c in zip(parts, chunks)]
        schedule = %s(%s, n_microbatches=MICROBATCHES, loss_fn=loss_fn)
`, map[bool]string{true: "SGD", false: "AdamW"}[st.Optimizer == strategies.OptimizerSGD],
		scheduleClass(st.Schedule), map[bool]string{true: "stages", false: "stages[0]"}[st.Schedule == strategies.ScheduleInterleaved])
	autocast := "nullcontext()"
	if st.Precision == strategies.PrecisionMixed && st.ZeRO == 0 {
		autocast = "torch.autocast(device_type, dtype=torch.bfloat16)"
	}
	w(`
    g = torch.Generator().manual_seed(1234 + mesh["dp"].get_local_rank())
    for step in range(args.steps):
        tokens = torch.randint(0, config.vocab_size, (GBS // DP, SEQ + 1), generator=g).to(device)
        x, y = tokens[:, :-1], tokens[:, 1:]
        opt.zero_grad()
        if PP > 1:
            losses = []
            with loss_parallel() if TP > 1 else nullcontext():
                if pp_rank == 0:
                    schedule.step(x, target=y, losses=losses)
                else:
                    schedule.step(target=y, losses=losses)
            losses = [l.full_tensor() if hasattr(l, "full_tensor") else l for l in losses]
            loss = torch.stack(losses).mean() if losses else torch.tensor(0.0)  # the last stage has the losses
        else:
            loss = torch.tensor(0.0, device=device)
            for xm, ym in zip(x.split(MBS), y.split(MBS)):
                with %s:
                    logits = parts[0](xm)
                mloss = loss_fn(logits, ym) / MICROBATCHES
                with loss_parallel() if TP > 1 else nullcontext():
                    mloss.backward()
                loss += mloss.detach().full_tensor() if hasattr(mloss, "full_tensor") else mloss.detach()
        opt.step()
        if pp_rank == PP - 1 and mesh["dp"].get_local_rank() == 0 and mesh["tp"].get_local_rank() == 0:
            print(f"step {step} loss {float(loss):.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
`, autocast)
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}
