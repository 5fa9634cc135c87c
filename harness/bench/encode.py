"""Encoding throughput: the harness's bi-encoder path against the naive Hugging Face one.

naive: the model as is (SDPA), batches of 32 in arrival order padded to the longest,
attention mask, mean pooling. harness: `embed_features` over a `TokenBiEncoder` (length-sorted
batches under a token budget, right padding, mask-free causal attention), the path the
retrievers run. Both over the same bf16 (GPU) or fp32 (CPU) weights and the same rows.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from harness.bench.timing import timed
from harness.bench.workload import Shape
from harness.neural.pooling import mean_pool


@torch.inference_mode()
def naive_encode(model, rows: Sequence[Sequence[int]], device: torch.device, *, batch: int = 32,
                 pad_id: int = 0) -> np.ndarray:
    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        width = max(len(r) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, r in enumerate(chunk):
            ids[i, :len(r)] = torch.as_tensor(r)
            mask[i, :len(r)] = 1
        ids, mask = ids.to(device), mask.to(device)
        out.append(mean_pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask))
    return torch.cat(out).cpu().numpy()


def harness_encoder(model, max_length: int = 1 << 20, pad_id: int = 0):
    from harness.neural.encoder import TokenBiEncoder

    enc = TokenBiEncoder(model, None, max_length=max_length, pad_id=pad_id).eval()
    enc.fast = enc.use_fast_attention()
    return enc


def agreement(fast: np.ndarray, ref: np.ndarray, k: int = 10, queries: int = 200) -> dict:
    """Per-vector relative error, and how often each vector's k nearest neighbours (cosine) agree."""
    rel = np.linalg.norm(fast - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)

    def neighbours(v):
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-30)
        s = v[:queries] @ v.T
        s[np.arange(min(queries, len(v))), np.arange(min(queries, len(v)))] = -np.inf
        return np.argsort(-s, axis=1)[:, :k]

    a, b = neighbours(fast), neighbours(ref)
    overlap = float(np.mean([len(set(x) & set(y)) / k for x, y in zip(a, b)]))
    top1 = float(np.mean(a[:, 0] == b[:, 0]))
    return {"rel_error_median": float(np.median(rel)), "rel_error_max": float(rel.max()),
            f"top{k}_overlap": overlap, "top1_agreement": top1}


def _figures(rows, seconds: float, shape: Shape, flops: float | None = None) -> dict:
    tokens = sum(len(r) for r in rows)
    flops = shape.rows_flops(rows) if flops is None else flops
    return {"seconds": round(seconds, 4), "documents": len(rows), "tokens": tokens,
            "tokens_per_s": round(tokens / seconds, 1), "documents_per_s": round(len(rows) / seconds, 2),
            "tflops": round(flops / seconds / 1e12, 2)}


def bench_encode(model, rows: Sequence[Sequence[int]], device: torch.device, *, max_tokens: int = 65536,
                 naive_batch: int = 32, warmup_rows: int = 64, variants: Sequence[tuple[int, bool]] = (),
                 log=print) -> dict:
    """variants: extra (max_tokens, torch.compile) settings of the harness path, timed after it."""
    from harness.neural.encoder import embed_features

    shape = Shape.of(model)
    warm = rows[:warmup_rows]
    model.set_attn_implementation("sdpa")
    naive_encode(model, warm, device, batch=naive_batch)
    ref, t_naive = timed(lambda: naive_encode(model, rows, device, batch=naive_batch), device)
    naive = _figures(rows, t_naive, shape)
    log(f"naive:   {naive['tokens_per_s']:>10,.0f} tokens/s  {naive['documents_per_s']:>8,.1f} docs/s  "
        f"{naive['tflops']:>6.1f} TFLOP/s")
    enc = harness_encoder(model)
    embed_features(enc, warm, device, max_tokens=max_tokens)
    fast, t_fast = timed(lambda: embed_features(enc, rows, device, max_tokens=max_tokens), device)
    ours = _figures(rows, t_fast, shape)
    log(f"harness: {ours['tokens_per_s']:>10,.0f} tokens/s  {ours['documents_per_s']:>8,.1f} docs/s  "
        f"{ours['tflops']:>6.1f} TFLOP/s  ({t_naive / t_fast:.2f}x naive)")
    tried = []
    for budget, compiled in variants:
        variant = harness_encoder(torch.compile(model, dynamic=True) if compiled else model)
        embed_features(variant, warm, device, max_tokens=budget)
        if compiled:  # compile for the range of shapes first
            embed_features(variant, rows[:4 * warmup_rows], device, max_tokens=budget)
        _, t = timed(lambda: embed_features(variant, rows, device, max_tokens=budget), device)
        tried.append({**_figures(rows, t, shape), "max_tokens": budget, "compiled": compiled,
                      "speedup": round(t_naive / t, 3)})
        log(f"  variant max_tokens={budget} compiled={compiled}: {tried[-1]['tokens_per_s']:,.0f} tokens/s "
            f"({t_naive / t:.2f}x naive)")
    model.set_attn_implementation("sdpa")
    return {"naive": {**naive, "batch": naive_batch, "order": "arrival", "attention": "sdpa + padding mask"},
            "harness": {**ours, "max_tokens": max_tokens, "order": "length-sorted token budget",
                        "attention": "aa_causal (mask-free causal SDPA)" if enc.fast else "sdpa + padding mask"},
            "speedup": round(t_naive / t_fast, 3), "agreement": agreement(fast, ref), "variants": tried}
