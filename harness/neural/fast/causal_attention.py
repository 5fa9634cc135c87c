"""Mask-free causal attention for decoders read with right padding, with an optional shared prefix.

In a causal decoder a token sees only itself and earlier tokens, so padding placed after a
row's last real token is never seen: each row's real outputs equal its unpadded outputs
without any mask, and SDPA can take its flash kernel (`is_causal`) instead of the masked
kernels. The same function attends to a shared prefix's cached keys and values (a
reranker's query) lower-right aligned, so each candidate row sees the prefix and its own
earlier tokens: the same function as the concatenated pair, with the prefix computed once.

Registered with transformers as the attention implementation "aa_causal". Models that
cannot use it (bidirectional encoders, soft-capping) are left as they are; rows longer than
a sliding window are refused.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

NAME = "aa_causal"
_registered = False


def _expand_heads(x: torch.Tensor, groups: int, batch: int) -> torch.Tensor:
    """[b, Hk, L, D] -> [batch, Hk * groups, L, D] (b is 1 or batch), as grouped-query attention reads it."""
    b, hk, length, d = x.shape
    return x[:, :, None].expand(batch, hk, groups, length, d).reshape(batch, hk * groups, length, d)


def attention(
    module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, aa_prefix=None, aa_capture=None, **kwargs
):
    """query [B, Hq, Lq, D], key/value [B, Hk, Lk, D] -> ([B, Lq, Hq, D], None), as transformers expects.

    aa_capture: a dict that receives each layer's (key, value) (the prefix pass);
    aa_prefix: that dict from a batch-1 pass, prepended to every row's keys and values.
    """
    layer = module.layer_idx
    if aa_capture is not None:
        aa_capture[layer] = (key, value)
    batch, heads, lq, _ = query.shape
    groups = heads // key.shape[1]
    window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    seen = key.shape[2] + (aa_prefix[layer][0].shape[2] if aa_prefix is not None else 0)
    if window and seen > window:
        raise ValueError(f"aa_causal attention: {seen} tokens exceed layer {layer}'s sliding window of {window}")
    if aa_prefix is None:
        out = F.scaled_dot_product_attention(query, key, value, is_causal=lq > 1, scale=scaling, enable_gqa=groups > 1)
    else:
        from torch.nn.attention.bias import causal_lower_right

        pk, pv = aa_prefix[layer]
        key = torch.cat([_expand_heads(pk, groups, batch), _expand_heads(key, groups, batch)], dim=2)
        value = torch.cat([_expand_heads(pv, groups, batch), _expand_heads(value, groups, batch)], dim=2)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=causal_lower_right(lq, key.shape[2]), scale=scaling
        )
    return out.transpose(1, 2).contiguous(), None


def _register() -> None:
    global _registered
    if not _registered:
        from transformers import AttentionInterface

        AttentionInterface.register(NAME, attention)
        _registered = True


def supports(model: torch.nn.Module) -> bool:
    """True for causal decoders without soft-capping (a sliding window is checked per call)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    if config is None:
        return False
    layers = [m for m in base.modules() if hasattr(m, "layer_idx") and hasattr(m, "is_causal") and hasattr(m, "o_proj")]
    if not layers or not all(m.is_causal for m in layers):
        return False
    return not getattr(config, "attn_logit_softcapping", None)


def enable(model: torch.nn.Module) -> bool:
    """Switch a supported decoder to "aa_causal"; returns whether it was switched.

    Callers must then feed right-padded rows and pool with their own mask: the model ignores it.
    """
    if not supports(model):
        return False
    _register()
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    base.set_attn_implementation(NAME)
    return True


def is_enabled(model: torch.nn.Module) -> bool:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    return getattr(config, "_attn_implementation", None) == NAME
