"""Llama-family decoders (Llama, Mistral, Qwen2, Qwen3) with fused, compiled layers.

The Hugging Face forward runs many small elementwise kernels per layer around separate
q/k/v and gate/up products. Here the q/k/v and gate/up projections are one matrix product
each, the elementwise work around them (norms, rotary embeddings, SiLU, residuals) is
compiled by torch.compile, and all tokens of a batch go through the products as one
[tokens, hidden] matrix. Two layouts feed attention:
- Packed: sequences end to end with no padding; variable-length flash attention, each
  sequence attending causally to itself only.
- Padded: length-sorted rows padded on the right to the longest; causal SDPA (cuDNN's
  kernel where available) with no mask, exact because no real token sees the padding
  after it. The packers sort rows by length, so little is padded.
The weights are the model's own: its q/k/v and gate/up parameters become views into the
fused matrices, so nothing is held twice. The function is the model's: tests compare it with
the Hugging Face forward. A base quantized by `fp8_linear.quantize_frozen_base` (fp8=true) is
read the same way: its products are FP8 ones, over row views of one FP8 matrix per product.

A shared prefix (a reranker's query) is run once; its per-layer keys and values are then
gathered in front of every continuation's keys, and the continuations attend to them
bottom-right aligned, which is the concatenated pair's causal attention.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from harness.neural.fast.fp8_linear import Fp8Weight, fused_group, linear

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")


def to_device(values: np.ndarray, device: torch.device) -> torch.Tensor:
    """Host array to the device without stalling it: a copy from pageable memory waits for the
    device's queued work, one from pinned memory does not, so the host can lay out the next batch."""
    t = torch.from_numpy(np.ascontiguousarray(values))
    return (t.pin_memory() if device.type == "cuda" else t).to(device, non_blocking=True)


@dataclass
class Packed:
    """Sequences laid end to end: ids [T], positions [T], cu_seqlens [n + 1] (int32) on the device;
    the lengths and the longest on the host, so no step has to read the device."""

    ids: torch.Tensor
    positions: torch.Tensor
    cu_seqlens: torch.Tensor
    lengths: list[int]
    longest: int

    @classmethod
    def of(cls, rows: Sequence[Sequence[int]], device: torch.device, *, offset: int = 0) -> Packed:
        """Pack rows; positions start at `offset` (the length of a prefix they continue)."""
        lengths = [len(r) for r in rows]
        total = sum(lengths)
        flat = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=total)
        positions = np.concatenate([np.arange(offset, offset + n, dtype=np.int64) for n in lengths])
        cu = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(lengths, out=cu[1:])
        return cls(to_device(flat, device), to_device(positions, device), to_device(cu, device), lengths, max(lengths))


@dataclass
class Attend:
    """How a layer's packed queries meet their keys: the cu_seqlens of queries and keys, the longest
    of each, and (for shared prefixes) the index gathering each sequence's keys from the layer's."""

    cu_q: torch.Tensor
    cu_k: torch.Tensor
    max_q: int
    max_k: int
    gather: torch.Tensor | None = None

    @classmethod
    def of(cls, packed: Packed) -> Attend:
        return cls(packed.cu_seqlens, packed.cu_seqlens, packed.longest, packed.longest)


@dataclass
class Padded:
    """Rows padded on the right to the longest: ids and positions [n, W] on the device, lengths on the host."""

    ids: torch.Tensor
    positions: torch.Tensor
    lengths: list[int]

    @classmethod
    def of(cls, rows: Sequence[Sequence[int]], device: torch.device, *, pad_id: int = 0) -> Padded:
        lengths = [len(r) for r in rows]
        width = max(lengths)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
        positions = np.broadcast_to(np.arange(width, dtype=np.int64), ids.shape)
        return cls(to_device(ids, device), to_device(positions, device), lengths)


def compiled(fns: Sequence[Callable], device: torch.device, compile: bool | None) -> list[Callable]:
    """The elementwise functions, torch.compile'd on CUDA unless `compile` says otherwise."""
    if device.type == "cuda" if compile is None else compile:
        return [torch.compile(fn, dynamic=True) for fn in fns]
    return list(fns)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # normalised in fp32, weighted in the input's dtype (as the HF layers); F.rms_norm is one
    # kernel uncompiled where the pow/mean/rsqrt chain is four
    return weight * F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def _pre_attention(
    x, norm_w, eps, w_qkv, b_qkv, q_norm_w, k_norm_w, cos, sin, heads: int, kv_heads: int, head_dim: int
):
    h = _rms(x, norm_w, eps)
    return _heads_rope(linear(h, w_qkv, b_qkv), q_norm_w, k_norm_w, cos, sin, eps, heads, kv_heads, head_dim)


def _heads_rope(qkv, q_norm_w, k_norm_w, cos, sin, eps, heads: int, kv_heads: int, head_dim: int):
    """q, k, v as heads out of the fused q/k/v product: q/k norms (Qwen3), then rotary on q and k."""
    q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
    q, k, v = q.view(-1, heads, head_dim), k.view(-1, kv_heads, head_dim), v.view(-1, kv_heads, head_dim)
    if q_norm_w is not None:
        q, k = _rms(q, q_norm_w, eps), _rms(k, k_norm_w, eps)
    c, s = cos[:, None, :], sin[:, None, :]
    return _rotate(q, c, s), _rotate(k, c, s), v


def _post_attention(x, attn, w_o, norm_w, eps, w_gu, w_down, inter: int):
    x = x + linear(attn.flatten(1), w_o)
    gate, up = linear(_rms(x, norm_w, eps), w_gu).split([inter, inter], dim=-1)
    return x + linear(F.silu(gate) * up, w_down)


_CUDNN_ATTENTION: str | bool | None = None  # first call decides: "gqa", "repeat" (heads), or False


def _padded_attention(q, k, v, shape, scale):
    """Causal SDPA over [n, W] right-padded rows with no mask; returns [n * W, heads, head_dim].

    On CUDA in half precision cuDNN's kernel is asked for alone (2.5x the flash kernel's rate at
    these shapes on an H200; given a list, SDPA would still prefer flash), first with grouped
    key/value heads as they are, else with the heads repeated; if cuDNN refuses the inputs,
    SDPA chooses as usual from then on."""
    global _CUDNN_ATTENTION
    n, width = shape
    q = q.view(n, width, *q.shape[1:]).transpose(1, 2)
    k = k.view(n, width, *k.shape[1:]).transpose(1, 2)
    v = v.view(n, width, *v.shape[1:]).transpose(1, 2)
    groups = q.shape[1] // k.shape[1]
    out = None
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16) and _CUDNN_ATTENTION is not False:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        for mode in ["gqa", "repeat"] if _CUDNN_ATTENTION is None else [_CUDNN_ATTENTION]:
            try:
                kk, vv = (k, v) if mode == "gqa" else (k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1))
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    out = F.scaled_dot_product_attention(
                        q, kk, vv, is_causal=True, scale=scale, enable_gqa=mode == "gqa" and groups > 1
                    )
                _CUDNN_ATTENTION = mode
                break
            except RuntimeError:
                continue
        if out is None:
            _CUDNN_ATTENTION = False
    if out is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=groups > 1)
    return out.transpose(1, 2).reshape(n * width, *out.shape[1:2], out.shape[-1])


@functools.lru_cache(maxsize=1)
def _varlen_options() -> frozenset[str]:
    """Keyword arguments this torch's varlen_attn takes (they grew across releases)."""
    from torch.nn.attention.varlen import varlen_attn

    return frozenset(inspect.signature(varlen_attn).parameters)


_GQA_NATIVE: bool | None = None


def _native_gqa(q, k, v, cu_q, cu_k, max_q, max_k, kwargs) -> bool:
    """Whether varlen_attn takes fewer key/value heads than query heads as grouped-query attention
    (the flash kernel does; older wrappers do not say so). Decided once, on the first real call,
    by comparing with repeated heads; repeating is the safe fallback.

    The probe runs without autograd: the first call may be inside a checkpointed layer's forward
    (LoraFusedDecoder with checkpoint), whose recomputation must save exactly the tensors the
    forward saved, and the recomputation finds the answer already decided and probes nothing."""
    global _GQA_NATIVE
    if _GQA_NATIVE is None:
        from torch.nn.attention.varlen import varlen_attn

        q, k, v = q.detach(), k.detach(), v.detach()
        groups = q.shape[1] // k.shape[1]
        with torch.no_grad():
            want = varlen_attn(
                q,
                k.repeat_interleave(groups, dim=1),
                v.repeat_interleave(groups, dim=1),
                cu_q,
                cu_k,
                max_q,
                max_k,
                **kwargs,
            )
            try:
                got = varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, **kwargs)
                _GQA_NATIVE = bool(torch.allclose(got.float(), want.float(), atol=1e-3, rtol=1e-3))
            except (RuntimeError, ValueError):
                _GQA_NATIVE = False
    return _GQA_NATIVE


def _use_varlen_kernel(q: torch.Tensor) -> bool:
    """Whether `_varlen_attention` calls torch's flash varlen kernel (CUDA, half precision)."""
    return q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)


def _varlen_attention(q, k, v, cu_q, cu_k, max_q, max_k, scale):
    """Causal attention within each packed sequence (bottom-right aligned when keys are longer)."""
    if _use_varlen_kernel(q):
        from torch.nn.attention.varlen import varlen_attn

        options = _varlen_options()
        # causal, bottom-right aligned: torch >= 2.12 says is_causal; 2.11 a (-1, 0) window
        kwargs: dict[str, Any] = {"is_causal": True} if "is_causal" in options else {"window_size": (-1, 0)}
        if "scale" in options:
            kwargs["scale"] = scale
        elif abs(scale - q.shape[-1] ** -0.5) > 1e-12:
            raise ValueError("this torch's varlen_attn has no scale argument")
        if k.shape[1] != q.shape[1]:
            if "enable_gqa" in options:
                kwargs["enable_gqa"] = True
            elif not _native_gqa(q, k, v, cu_q, cu_k, max_q, max_k, kwargs):
                groups = q.shape[1] // k.shape[1]
                k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        return varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, **kwargs)
    return _per_sequence_attention(q, k, v, cu_q, cu_k, scale)


def _per_sequence_attention(q, k, v, cu_q, cu_k, scale):
    """CPU or fp32 (tests, small runs): one SDPA call per sequence, bottom-right aligned."""
    from torch.nn.attention.bias import causal_lower_right

    out = torch.empty_like(q)
    bounds_q, bounds_k = cu_q.tolist(), cu_k.tolist()
    for i in range(len(bounds_q) - 1):
        qs, ks = slice(bounds_q[i], bounds_q[i + 1]), slice(bounds_k[i], bounds_k[i + 1])
        if qs.stop == qs.start:
            continue
        qi, ki, vi = q[qs].transpose(0, 1)[None], k[ks].transpose(0, 1)[None], v[ks].transpose(0, 1)[None]
        groups = qi.shape[1] // ki.shape[1]
        ki, vi = ki.repeat_interleave(groups, dim=1), vi.repeat_interleave(groups, dim=1)
        mask = causal_lower_right(qi.shape[2], ki.shape[2])
        out[qs] = F.scaled_dot_product_attention(qi, ki, vi, attn_mask=mask, scale=scale)[0].transpose(0, 1)
    return out


def _fuse(linears: Sequence[torch.nn.Linear], name: str = "weight") -> torch.Tensor:
    """One tensor holding the linears' `name` parameters stacked by output row; the modules' own
    parameters become views into it, so fusing costs no extra memory and the Hugging Face
    forward still reads the same values."""
    fused = torch.cat([getattr(lin, name).detach() for lin in linears])
    start = 0
    for lin in linears:
        rows = getattr(lin, name).shape[0]
        setattr(lin, name, torch.nn.Parameter(fused[start : start + rows], requires_grad=False))
        start += rows
    return fused


def product_weights(modules: Sequence[torch.nn.Module]) -> tuple[torch.Tensor | Fp8Weight, torch.Tensor | None]:
    """(weight, bias) of the one product that runs `modules` (PEFT LoRA layers: their base layers)
    side by side: their FP8 group when the base was quantized, else their weights fused by `_fuse`
    (views, no copy; one module's weight as it is)."""
    fp8 = fused_group(modules)
    if fp8 is not None:
        return fp8
    linears = [getattr(m, "base_layer", m) for m in modules]
    if len(linears) == 1:
        return linears[0].weight, linears[0].bias
    return _fuse(linears), (_fuse(linears, "bias") if linears[0].bias is not None else None)


class FusedDecoder:
    """The forward of a Llama-family `AutoModel` over packed sequences; see the module docstring."""

    def __init__(self, model: torch.nn.Module, *, compile: bool | None = None, layout: str = "packed"):
        """compile: torch.compile the layers (default: on CUDA). layout: what embedding uses,
        "padded" or "packed" (prefix scoring always packs)."""
        if layout not in ("padded", "packed"):
            raise ValueError(f"layout must be 'padded' or 'packed', got {layout!r}")
        self.model = model
        self.layout = layout
        c = model.config
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.inter = c.intermediate_size
        self.eps = c.rms_norm_eps
        self.scale = self.head_dim**-0.5
        self.layers = []
        for layer in model.layers:
            a, m = layer.self_attn, layer.mlp
            w_qkv, b_qkv = product_weights([a.q_proj, a.k_proj, a.v_proj])
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
                }
            )
        self.pre, self.post, self.final = compiled(
            (_pre_attention, _post_attention, _rms), next(model.parameters()).device, compile
        )

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        config = getattr(model, "config", None)
        if config is None or getattr(config, "model_type", None) not in FAMILIES or not hasattr(model, "layers"):
            return False
        if getattr(config, "hidden_act", "silu") != "silu" or getattr(config, "mlp_bias", False):
            return False
        if getattr(config, "attention_bias", False) and config.model_type != "qwen2":
            return False
        window = getattr(config, "sliding_window", None)
        return not (window and getattr(config, "use_sliding_window", True))

    @torch.inference_mode()
    def forward(self, batch: Packed | Padded, prefix: PrefixCache | None = None, capture: bool = False):
        """Final hidden states [T, hidden] (after the last norm; T = all tokens of the layout, padding
        included); with capture, also a PrefixCache. A prefix needs the packed layout."""
        if prefix is not None and not isinstance(batch, Packed):
            raise ValueError("prefix scoring needs the packed layout")
        x = self.model.embed_tokens(batch.ids.reshape(-1))
        cos, sin = self.model.rotary_emb(x[None], batch.positions.reshape(1, -1))
        cos, sin = cos[0], sin[0]
        keys, values = [], []
        if prefix is not None:
            assert isinstance(batch, Packed)  # checked above
            gather, cu_k, max_k = prefix.key_layout(batch)
        for i, p in enumerate(self.layers):
            q, k, v = self.pre(
                x,
                p["in_norm"],
                self.eps,
                p["w_qkv"],
                p["b_qkv"],
                p["q_norm"],
                p["k_norm"],
                cos,
                sin,
                self.heads,
                self.kv_heads,
                self.head_dim,
            )
            if capture:
                keys.append(k)
                values.append(v)
            if isinstance(batch, Padded):
                attn = _padded_attention(q, k, v, batch.ids.shape, self.scale)
            elif prefix is None:
                attn = _varlen_attention(
                    q, k, v, batch.cu_seqlens, batch.cu_seqlens, batch.longest, batch.longest, self.scale
                )
            else:
                k_all = torch.cat([prefix.keys[i], k]).index_select(0, gather)
                v_all = torch.cat([prefix.values[i], v]).index_select(0, gather)
                attn = _varlen_attention(q, k_all, v_all, batch.cu_seqlens, cu_k, batch.longest, max_k, self.scale)
            x = self.post(x, attn, p["w_o"], p["post_norm"], self.eps, p["w_gu"], p["w_down"], self.inter)
        out = self.final(x, self.model.norm.weight, self.eps)
        return (out, PrefixCache(keys, values)) if capture else out


@dataclass
class PrefixCache:
    """Per-layer keys and values [P, kv_heads, head_dim] of one prefix sequence."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]

    @property
    def length(self) -> int:
        return self.keys[0].shape[0]

    def key_layout(self, packed: Packed) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(gather index into cat(prefix, continuation keys), cu_seqlens of the keys, longest key row):
        every continuation's keys are the prefix's followed by its own. Built on the host."""
        p = self.length
        lengths = np.asarray(packed.lengths, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        gather = np.concatenate([np.concatenate([np.arange(p), p + s + np.arange(n)]) for s, n in zip(starts, lengths)])
        cu_k = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(lengths + p, out=cu_k[1:])
        device = packed.ids.device
        return to_device(gather, device), to_device(cu_k, device), int(packed.longest + p)
