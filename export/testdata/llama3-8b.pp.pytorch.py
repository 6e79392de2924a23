# Written by tpsim export --format pytorch (tpsim test).
# Model llama3-8b; strategy pp=2,dp=2,tp=2,mbs=1,gbs=16,seq=8192,zero=1,recompute=full,schedule=interleaved,vpp=2.
# Run on pp*dp*cp*tp = 8 ranks: torchrun --nproc-per-node 8 THIS_FILE [--steps N] [--layers L]
# (on CPU over gloo as given; on GPUs with NCCL unchanged). Module names: Hugging Face
# transformers' LlamaForCausalLM (model.layers.*.self_attn.q_proj, ...); tpsim's names map as
# embed -> model.embed_tokens, layers.N.norm1 -> input_layernorm, attn.qkv -> self_attn.{q,k,v}_proj,
# attn.proj -> self_attn.o_proj, norm2 -> post_attention_layernorm, mlp.{gate,up,down} ->
# mlp.{gate,up,down}_proj, norm -> model.norm, head -> lm_head.
import argparse
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

PP, DP, CP, TP = 2, 2, 1, 2
MBS, GBS, SEQ = 1, 16, 8192
MICROBATCHES = GBS // (DP * MBS)
LAYERS = 32
VPP = 2


def llama_config(layers):
    return LlamaConfig(
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=layers,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=SEQ,
        tie_word_embeddings=False,
    )


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


def apply_tp(model, tp_mesh):
    # The Megatron plan in Hugging Face Llama names (torchtitan's apply_tp for the layout of sequence parallel).
    parallelize_module(model, tp_mesh, present(model, {
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


def apply_ac(model):
    # recompute=full: each decoder layer keeps its input and reruns its forward in backward.
    layers = model.model.layers
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False)


def apply_dp(model, dp_mesh):
    # zero=1 approximated by FSDP2 without resharding after forward: parameters are gathered once
    # per step, as ZeRO-1/2 communicate, but stay sharded at rest (memory below ZeRO-1/2's).
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=False)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=False)


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
    # Chunk c of n_chunks runs on pp rank c % PP (the interleaved schedule's looping placement).
    chunks = [c for c in range(n_chunks) if c % PP == pp_rank]
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
    opt = torch.optim.AdamW(params, lr=1e-4)
    if PP > 1:
        stages = [PipelineStage(part, c, n_chunks, device, group=mesh["pp"].get_group()) for part, c in zip(parts, chunks)]
        schedule = ScheduleInterleaved1F1B(stages, n_microbatches=MICROBATCHES, loss_fn=loss_fn)

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
                with nullcontext():
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
