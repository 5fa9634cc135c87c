"""LoRA training through the fused, packed layers: the retriever's step (and the layers the
reranker's shared-prefix step runs on).

A PEFT model (LoRA on q/k/v/o/gate/up/down, base weights frozen) trains here on the
FusedDecoder's layout: q/k/v and gate/up are one product each against the frozen base
weights (views into fused matrices, as for inference), and LoRA adds its low-rank update on
the side of each fused product: the A matrices of q, k and v (or gate and up) are read
as one [sum r, in] product and the B matrices as one block-diagonal product, so a layer adds
three small products, not seven pairs. Sequences are packed end to end (no padding) and
attention is variable-length flash attention on CUDA (one SDPA call per sequence on the
CPU, which the tests use). Layers can be checkpointed (recomputed in the backward pass): the
recomputation must save exactly the tensors the forward saved, so nothing in a layer may
record autograd work only on a first call (the varlen kernel's one-time GQA probe runs without
autograd; tests run checkpointed steps on that path, emulated on the CPU).

The parameters trained are the PEFT model's own LoRA tensors, read in place: the optimiser,
checkpoints and `save_pretrained` see nothing new, and a trainer hook can swap its step
for `embed_for_training` + its loss. LoRA dropout draws one mask per target, as PEFT does.
Tests compare the loss and every LoRA gradient with PEFT's forward in fp32.

With fp8 (`fused_embed_batch(fp8=True)`), the frozen base is quantized first
(`fp8_linear.quantize_frozen_base`) and its products are FP8 ones, differentiable in their
input; LoRA's side products stay in the autocast dtype.
"""

from __future__ import annotations

import logging
from typing import Callable, NamedTuple, Sequence

import torch
import torch.nn.functional as F

from harness.neural.fast import fp8_linear
from harness.neural.fast.fused_decoder import (
    Attend,
    FusedDecoder,
    Packed,
    _heads_rope,
    _rms,
    _varlen_attention,
    compiled,
    product_weights,
)
from harness.neural.fast.graphed_train import TrainGraphs

_ADAPTER = "default"


_log = logging.getLogger(__name__)


class _Lora(NamedTuple):
    """The LoRA of one fused product: As [r_i, in] and Bs [out_i, r_i] per target, scaling per target.
    A tuple of tuples, so torch.compile reads it as plain inputs (no per-layer guards)."""

    a: tuple[torch.Tensor, ...]
    b: tuple[torch.Tensor, ...]
    scaling: tuple[float, ...]
    dropout: float


def _lora_of(modules) -> _Lora | None:
    a, b, s, p = [], [], [], 0.0
    for m in modules:
        if not hasattr(m, "lora_A") or _ADAPTER not in m.lora_A:
            return None
        a.append(m.lora_A[_ADAPTER].weight)
        b.append(m.lora_B[_ADAPTER].weight)
        s.append(float(m.scaling[_ADAPTER]))
        drop = m.lora_dropout[_ADAPTER]
        p = getattr(drop, "p", 0.0)
    return _Lora(tuple(a), tuple(b), tuple(s), p)


def _lora_delta(x: torch.Tensor, lora: _Lora | None, training: bool) -> torch.Tensor | None:
    """sum_i scaling_i * B_i A_i dropout_i(x), the targets side by side in the output ([T, sum out_i])."""
    if lora is None:
        return None
    dt = x.dtype
    if training and lora.dropout > 0:
        u = torch.cat([F.linear(F.dropout(x, lora.dropout), a.to(dt)) for a in lora.a], dim=-1)
    else:
        u = F.linear(x, torch.cat([a.to(dt) for a in lora.a]))
    bs = [b.to(dt) * s for b, s in zip(lora.b, lora.scaling)]
    return F.linear(u, bs[0] if len(bs) == 1 else torch.block_diag(*bs))


def _plus(y: torch.Tensor, delta: torch.Tensor | None) -> torch.Tensor:
    return y if delta is None else y + delta


def _qk_rope(qkv, delta, q_norm_w, k_norm_w, cos, sin, eps, heads, kv_heads, head_dim):
    """q, k, v of the fused product plus its LoRA update: q/k norms (Qwen3) and rotary."""
    return _heads_rope(_plus(qkv, delta), q_norm_w, k_norm_w, cos, sin, eps, heads, kv_heads, head_dim)


def _add_rms(x, y, delta, norm_w, eps):
    """The residual x + y (+ LoRA update) and the next layer norm of it."""
    x = x + _plus(y, delta)
    return x, _rms(x, norm_w, eps)


def _swiglu(gu, delta, inter):
    gate, up = _plus(gu, delta).split([inter, inter], dim=-1)
    return F.silu(gate) * up


def _add(x, y, delta):
    return x + _plus(y, delta)


class LoraFusedDecoder:
    """The training forward of a PEFT-wrapped (or bare) Llama-family decoder over packed sequences."""

    def __init__(self, model: torch.nn.Module, *, compile: bool | None = None, checkpoint: bool = False):
        """model: a PeftModel over an AutoModel (or the AutoModel; then nothing trains but what the
        caller adds). compile: torch.compile the elementwise work (default: on CUDA). checkpoint:
        recompute each layer in the backward pass instead of keeping its activations."""
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        if not FusedDecoder.supports(base):
            raise ValueError(f"no fused training path for {type(base).__name__}")
        self.model, self.base = model, base
        c = base.config
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.inter, self.eps, self.scale = c.intermediate_size, c.rms_norm_eps, self.head_dim**-0.5
        self.checkpoint = checkpoint
        self.layers = []
        for layer in base.layers:
            a, m = layer.self_attn, layer.mlp
            w_qkv, b_qkv = product_weights([a.q_proj, a.k_proj, a.v_proj])  # bf16 views, or the FP8 group
            self.layers.append(
                {
                    "in_norm": layer.input_layernorm.weight,
                    "w_qkv": w_qkv,
                    "b_qkv": b_qkv,
                    "q_norm": a.q_norm.weight if hasattr(a, "q_norm") else None,
                    "k_norm": a.k_norm.weight if hasattr(a, "k_norm") else None,
                    "w_o": product_weights([a.o_proj])[0],
                    "post_norm": layer.post_attention_layernorm.weight,
                    "w_gu": product_weights([m.gate_proj, m.up_proj])[0],
                    "w_down": product_weights([m.down_proj])[0],
                    "lora_qkv": _lora_of([a.q_proj, a.k_proj, a.v_proj]),
                    "lora_o": _lora_of([a.o_proj]),
                    "lora_gu": _lora_of([m.gate_proj, m.up_proj]),
                    "lora_down": _lora_of([m.down_proj]),
                }
            )
        partial = [name for name, p in self.layers[0].items() if name.startswith("lora") and p is None]
        if 0 < len(partial) < 4:  # all or none: a target on one of q/k/v only is not fused
            lone = [
                n
                for n, mod in (("q/k/v", [a.q_proj, a.k_proj, a.v_proj]), ("gate/up", [m.gate_proj, m.up_proj]))
                if any(hasattr(x, "lora_A") for x in mod) and _lora_of(mod) is None
            ]
            if lone:
                raise ValueError(f"LoRA on part of {', '.join(lone)}: the fused path needs all of them or none")
        # only the elementwise work between the products is compiled, never the LoRA side
        # products: with LoRA dropout inside, Inductor failed on an H100 (torch 2.11); an FP8
        # product's input quantizer (its amax and scaling passes) is compiled alone
        self.rms, self.qk_rope, self.add_rms, self.swiglu, self.add, self.quantize = compiled(
            (_rms, _qk_rope, _add_rms, _swiglu, _add, fp8_linear.quantize_rows), next(base.parameters()).device, compile
        )

    @property
    def training(self) -> bool:
        return self.model.training

    def _layer(self, i: int, x: torch.Tensor, cos, sin, attend: Attend, keep: list | None) -> torch.Tensor:
        p, training = self.layers[i], self.training
        h = self.rms(x, p["in_norm"], self.eps)
        q, k, v = self.qk_rope(
            self.product(h, p["w_qkv"], p["b_qkv"]),
            _lora_delta(h, p["lora_qkv"], training),
            p["q_norm"],
            p["k_norm"],
            cos,
            sin,
            self.eps,
            self.heads,
            self.kv_heads,
            self.head_dim,
        )
        if keep is not None:
            keep.append((k, v))
        if attend.gather is not None:
            k, v = k.index_select(0, attend.gather), v.index_select(0, attend.gather)
        a = _varlen_attention(q, k, v, attend.cu_q, attend.cu_k, attend.max_q, attend.max_k, self.scale).flatten(1)
        x, h = self.add_rms(
            x, self.product(a, p["w_o"]), _lora_delta(a, p["lora_o"], training), p["post_norm"], self.eps
        )
        m = self.swiglu(self.product(h, p["w_gu"]), _lora_delta(h, p["lora_gu"], training), self.inter)
        return self.add(x, self.product(m, p["w_down"]), _lora_delta(m, p["lora_down"], training))

    def product(self, x: torch.Tensor, weight, bias: torch.Tensor | None = None) -> torch.Tensor:
        """A frozen base product: F.linear, or the FP8 product with the compiled quantizer."""
        return fp8_linear.linear(x, weight, bias, quantize=self.quantize)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, attend: Attend) -> torch.Tensor:
        """Final hidden states [T, hidden] of packed tokens, with autograd to the LoRA weights."""
        from torch.utils.checkpoint import checkpoint

        x = self.base.embed_tokens(ids)
        cos, sin = self.base.rotary_emb(x[None], positions[None])
        cos, sin = cos[0], sin[0]
        for i in range(len(self.layers)):
            if self.checkpoint and torch.is_grad_enabled():
                x = checkpoint(self._layer, i, x, cos, sin, attend, None, use_reentrant=False)
            else:
                x = self._layer(i, x, cos, sin, attend, None)
        return self.rms(x, self.base.norm.weight, self.eps)


def embed_for_training(
    decoder: LoraFusedDecoder,
    rows: Sequence[Sequence[int]],
    device: torch.device,
    *,
    pooling: str = "mean",
    finish: Callable[[torch.Tensor], torch.Tensor] | None = None,
    graphs: TrainGraphs | None = None,
) -> torch.Tensor:
    """finish(pooled final states) per row, [len(rows), dim], differentiable: all rows in one pack.

    pooling "mean" is the fp32 mean over each row's tokens; "last" its last token's state.
    graphs: run the layers as CUDA graphs of padded packs where the step allows (graphed_train)."""
    from harness.neural.fast.fused_paths import last_token_packed, mean_pool_packed

    if graphs is not None and TrainGraphs.usable(decoder, device):
        packed, hidden = graphs.hidden(rows)
    else:
        packed = Packed.of(rows, device)
        hidden = decoder.forward(packed.ids, packed.positions, Attend.of(packed))
    pooled = (last_token_packed if pooling == "last" else mean_pool_packed)(hidden, packed, len(rows))
    return finish(pooled) if finish is not None else pooled


def retriever_loss(
    decoder: LoraFusedDecoder,
    finish: Callable[[torch.Tensor], torch.Tensor],
    rows_a: Sequence[Sequence[int]],
    rows_b: Sequence[Sequence[int]],
    device: torch.device,
    *,
    tau: float,
    cosine: bool = False,
    graphs: TrainGraphs | None = None,
) -> torch.Tensor:
    """The retriever's step loss (Eq. 2 over N authors x 2 documents): rows_a[i] and rows_b[i] are
    author i's two documents; both halves run as one pack. Call .backward() on it."""
    from harness.neural.losses import supcon_loss

    emb = embed_for_training(decoder, [*rows_a, *rows_b], device, finish=finish, graphs=graphs)
    n = len(rows_a)
    return supcon_loss(emb[:n], emb[n:], tau, cosine=cosine)


COMPILE_ABOVE = 2e9  # parameters: the bench's compiled step won above it (8B) and lost below (0.6B, host-bound)


def training_compile(model: torch.nn.Module, compile: bool | None, graphed: bool = False) -> bool:
    """Whether a fast training step compiles its elementwise work: as asked, else (None) on CUDA
    for a graphed step at any size, or for backbones above COMPILE_ABOVE parameters. Launched
    one by one, compiled layers cost the small backbones more host time than they save: on an
    H100 (torch 2.11) the compiled step ran the Qwen3-8B shape at 53% of peak bf16, but cost 10%
    at the 0.6B shape. Replayed as CUDA graphs, the launches are gone and compiling wins at the
    0.6B shape too: 92,026 tokens/s compiled against 64,248 eager on an H200
    (benchmarks/results/train-retriever-*)."""
    if compile is not None:
        return compile
    if next(model.parameters()).device.type != "cuda":
        return False
    return graphed or sum(p.numel() for p in model.parameters()) > COMPILE_ABOVE


def fast_decoder(
    backbone: torch.nn.Module,
    device: torch.device,
    *,
    checkpoint: bool,
    compile: bool | None,
    fp8: bool = False,
    graphed: bool = False,
) -> LoraFusedDecoder:
    """The hooks' LoraFusedDecoder over a PEFT `backbone`, its frozen base quantized first with fp8
    (on `device`, which must run FP8 products: else a one-line HarnessError). A ValueError where
    the fused step cannot run (a backbone outside its families). graphed: its steps will replay
    as CUDA graphs (which decides compiling, `training_compile`)."""
    compile = training_compile(backbone, compile, graphed)  # counted before fp8 turns the base into non-parameters
    if fp8:
        from harness.neural.fast.fp8_linear import quantize_frozen_base, require_fp8

        base = backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone
        if not FusedDecoder.supports(base):
            raise ValueError(f"no fused training path for {type(base).__name__}")
        require_fp8(device)
        quantize_frozen_base(backbone)
    return LoraFusedDecoder(backbone, compile=compile, checkpoint=checkpoint)


def fast_step(
    backbone: torch.nn.Module, device: torch.device, *, checkpoint: bool, compile: bool | None, fp8: bool, graphs: bool
) -> tuple[LoraFusedDecoder, TrainGraphs | None]:
    """The hooks' decoder (`fast_decoder`) and, where its steps can replay as CUDA graphs (asked
    for, CUDA, no checkpointing, no FP8: its products have not run under a capture), its graphs."""
    graphed = graphs and not fp8 and device.type == "cuda" and not checkpoint
    decoder = fast_decoder(backbone, device, checkpoint=checkpoint, compile=compile, fp8=fp8, graphed=graphed)
    return decoder, TrainGraphs(decoder, device) if graphed else None


def cannot_run(step: str, why: str, fp8: bool) -> str:
    """The one-line error where a fast step cannot run and nothing may stand in for it."""
    if fp8:
        return f"fp8=true: {step} cannot run ({why}), and FP8 products run only there; drop --set fp8=true"
    return f"fast_training: {why}; drop --set fast_training=true"


def fused_embed_batch(
    *, checkpoint: bool = False, compile: bool | None = None, fallback=None, fp8: bool = False, graphs: bool = True
):
    """An `embed_batch` hook for harness.neural.training: a LLM bi-encoder's training forward
    through a LoraFusedDecoder (its rows in one pack, LoRA inside the fused products), pooled
    and finished (projected) as the model does. One process only: the hook calls the model's
    layers directly, bypassing the DDP wrapper whose forward arms the gradient all-reduce.
    compile: see `training_compile` (None: on CUDA above 2B parameters).

    fallback: the plain `embed_batch` to use where the fused step cannot run (under DDP, or a
    backbone the fused decoder does not support), said once in the log; without it, an error.
    fp8: quantize the frozen base at the first call and train over FP8 products
    (harness.neural.fast.fp8_linear); where the fused step cannot run that is an error whatever
    the fallback, never a bf16 step in its place.
    graphs: CUDA graphs of the layers, forward and backward, where the step allows (CUDA, no
    checkpointing, no FP8: graphed_train); false runs them eagerly."""
    from harness.errors import HarnessError

    decoders: dict[int, LoraFusedDecoder | None] = {}
    graphed: dict[int, TrainGraphs | None] = {}

    def embed_batch(wrapped, model, features, device):
        ddp = isinstance(wrapped, torch.nn.parallel.DistributedDataParallel)
        if id(model) not in decoders:
            why = "it bypasses DDP's gradient sync" if ddp else None
            if why is None:
                try:
                    decoders[id(model)], graphed[id(model)] = fast_step(
                        model.backbone, device, checkpoint=checkpoint, compile=compile, fp8=fp8, graphs=graphs
                    )
                except ValueError as e:
                    why = str(e)
            if why is not None:
                if fallback is None or fp8:
                    raise HarnessError(cannot_run("the fused step", why, fp8))
                _log.info(f"training through the plain Hugging Face forward: the fused step cannot run ({why})")
                decoders[id(model)] = None
        decoder = decoders[id(model)]
        if decoder is None:
            return fallback(wrapped, model, features, device)
        return embed_for_training(
            decoder, features, device, pooling=model.pooling, finish=model.finish, graphs=graphed.get(id(model))
        )

    return embed_batch
