"""Encoding throughput: the harness's bi-encoder path against the naive Hugging Face one.

naive: the model as is (SDPA), batches of 32 in arrival order padded to the longest,
attention mask, mean pooling. harness: `embed_features` over a `TokenEncoder` with its
fast path (a FusedDecoder: fused, compiled layers over "padded" length-sorted rows with
mask-free causal cuDNN attention, or "packed" rows with varlen flash attention; or
"aa_causal": the Hugging Face model with mask-free causal attention), the path the
retrievers run. Both over the same weights (bf16 on GPU, fp32 on CPU) and rows.

fp8 (`--fp8`): last, the model's frozen projections are quantized in place
(harness.neural.fast.fp8_linear) and the harness's packed path is timed again over FP8 products,
with its agreement against the bf16 harness path's vectors: relative error, top-10 neighbour
overlap and the Spearman correlation of each query's scores (cosine) against all rows.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from aa_harness_bench.timing import timed
from aa_harness_bench.workload import Shape
from harness.neural.batching import right_padded
from harness.neural.fast.enable import enable_fast_path
from harness.neural.pooling import mean_pool


@torch.inference_mode()
def naive_encode(
    model, rows: Sequence[Sequence[int]], device: torch.device, *, batch: int = 32, pad_id: int = 0
) -> np.ndarray:
    out = []
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        ids, mask = right_padded(chunk, pad_id)
        ids, mask = ids.to(device), mask.to(device)
        out.append(mean_pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask))
    return torch.cat(out).cpu().numpy()


def harness_encoder(model, path: str = "packed", pad_id: int = 0, *, fp8: bool = False):
    """The retrievers' encoder over `model` (ids in, mean-pooled vectors out) on its fast path; fp8
    quantizes the model's projections in place first (its bf16 weights are gone after)."""
    from harness.neural.encoder import TokenEncoder

    enc = TokenEncoder(model, None, max_length=1 << 20, pad_id=pad_id).eval()
    enc.path = enable_fast_path(enc, prefer=path, fp8=fp8)
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
    return {
        "rel_error_median": float(np.median(rel)),
        "rel_error_max": float(rel.max()),
        f"top{k}_overlap": overlap,
        "top1_agreement": top1,
    }


def score_spearman(fast: np.ndarray, ref: np.ndarray, queries: int = 200) -> dict:
    """Spearman correlation between two encodings' cosine scores of each of the first `queries` rows
    against every other row (how alike the two rank a pool): median and minimum over the queries."""
    from scipy.stats import spearmanr

    def scores(v):
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-30)
        return v[:queries] @ v.T

    a, b = scores(fast), scores(ref)
    rho = []
    for i in range(len(a)):
        keep = np.arange(a.shape[1]) != i
        rho.append(float(spearmanr(a[i, keep], b[i, keep]).statistic))
    return {"spearman_median": float(np.median(rho)), "spearman_min": float(np.min(rho))}


def _figures(rows, seconds: float, shape: Shape, flops: float | None = None) -> dict:
    tokens = sum(len(r) for r in rows)
    flops = shape.rows_flops(rows) if flops is None else flops
    return {
        "seconds": round(seconds, 4),
        "documents": len(rows),
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "documents_per_s": round(len(rows) / seconds, 2),
        "tflops": round(flops / seconds / 1e12, 2),
    }


def time_harness(model, rows, device, *, path: str, max_tokens: int, warmup_rows: int, fp8: bool = False):
    """(vectors, seconds, path taken) of the harness path, after a warm-up over the length range."""
    from harness.neural.encoder import embed_features

    enc = harness_encoder(model, path, fp8=fp8)
    by_length = sorted(rows, key=len)
    warm = [by_length[int(i)] for i in np.linspace(0, len(rows) - 1, min(warmup_rows, len(rows)))]
    embed_features(enc, warm, device, max_tokens=max_tokens, amp=False)
    vecs, seconds = timed(lambda: embed_features(enc, rows, device, max_tokens=max_tokens, amp=False), device)
    return vecs, seconds, enc.path


def bench_encode(
    model,
    rows: Sequence[Sequence[int]],
    device: torch.device,
    *,
    max_tokens: int = 65536,
    naive_batch: int = 32,
    warmup_rows: int = 64,
    variants: Sequence[tuple[int, str]] = (),
    fp8: bool = False,
    log=print,
) -> dict:
    """variants: extra (max_tokens, path) settings of the harness path, timed after it. fp8: then
    the packed path over FP8 products, beside bf16 (the model is quantized in place: last)."""
    shape = Shape.of(model)
    use_cache = model.config.use_cache
    model.set_attn_implementation("sdpa")
    naive_encode(model, rows[:warmup_rows], device, batch=naive_batch)
    ref, t_naive = timed(lambda: naive_encode(model, rows, device, batch=naive_batch), device)
    naive = _figures(rows, t_naive, shape)
    log(
        f"naive:   {naive['tokens_per_s']:>10,.0f} tokens/s  {naive['documents_per_s']:>8,.1f} docs/s  "
        f"{naive['tflops']:>6.1f} TFLOP/s"
    )
    fast, t_fast, path = time_harness(
        model, rows, device, path="packed", max_tokens=max_tokens, warmup_rows=warmup_rows
    )
    ours = _figures(rows, t_fast, shape)
    log(
        f"harness ({path}): {ours['tokens_per_s']:>10,.0f} tokens/s  {ours['documents_per_s']:>8,.1f} docs/s  "
        f"{ours['tflops']:>6.1f} TFLOP/s  ({t_naive / t_fast:.2f}x naive)"
    )
    tried = []
    for budget, variant in variants:
        vecs, t, taken = time_harness(model, rows, device, path=variant, max_tokens=budget, warmup_rows=warmup_rows)
        tried.append(
            {
                **_figures(rows, t, shape),
                "max_tokens": budget,
                "path": taken,
                "speedup": round(t_naive / t, 3),
                "agreement": agreement(vecs, ref),
            }
        )
        log(
            f"  variant {taken} max_tokens={budget}: {tried[-1]['tokens_per_s']:,.0f} tokens/s ({t_naive / t:.2f}x naive)"
        )
    out = {
        "naive": {**naive, "batch": naive_batch, "order": "arrival", "attention": "sdpa + padding mask"},
        "harness": {**ours, "max_tokens": max_tokens, "path": path},
        "speedup": round(t_naive / t_fast, 3),
        "agreement": agreement(fast, ref),
        "variants": tried,
    }
    if fp8:
        vecs, t, taken = time_harness(
            model, rows, device, path="packed", max_tokens=max_tokens, warmup_rows=warmup_rows, fp8=True
        )
        out["fp8"] = {
            **_figures(rows, t, shape),
            "max_tokens": max_tokens,
            "path": taken,
            "weights": "e4m3, a scale per output channel",
            "activations": "e4m3, a scale per token",
            "speedup": round(t_naive / t, 3),
            "speedup_vs_bf16": round(t_fast / t, 3),
            "agreement": agreement(vecs, ref),
            "agreement_vs_bf16": {**agreement(vecs, fast), **score_spearman(vecs, fast)},
        }
        vs = out["fp8"]["agreement_vs_bf16"]
        log(
            f"fp8 ({taken}): {out['fp8']['tokens_per_s']:>10,.0f} tokens/s ({t_fast / t:.2f}x bf16); against bf16: "
            f"rel. error median {vs['rel_error_median']:.1e}, top-10 {vs['top10_overlap']:.3f}, "
            f"Spearman median {vs['spearman_median']:.4f} (min {vs['spearman_min']:.4f})"
        )
    model.set_attn_implementation("sdpa")
    model.config.use_cache = use_cache
    return out
