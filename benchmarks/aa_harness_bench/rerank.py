"""Reranking throughput: prefix reuse against naive concatenated pairs, at a cross-encoder's shape.

Each query has 100 candidates; a pair is `query + candidate`, scored as W . h of its last
token. naive: the Hugging Face model as is (SDPA), batches of 32 pairs in arrival order,
padded to the longest, attention mask. harness: the query encoded once and its keys and
values reused for its candidates, on the FusedDecoder ("packed": candidates packed without
padding) or on the Hugging Face model ("aa_causal": right-padded length-sorted batches).

fp8 (`--fp8`): last, the model's frozen projections are quantized in place
(harness.neural.fast.fp8_linear) and the packed path is timed again over FP8 products, with its
scores' agreement against the bf16 packed path's (Spearman per query, top-8 overlap).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from aa_harness_bench.timing import timed
from aa_harness_bench.workload import Shape
from harness.neural.batching import right_padded
from harness.neural.pooling import last_token_pool


@torch.inference_mode()
def naive_scores(
    model, head, queries, candidate_lists, device, *, batch: int = 32, pad_id: int = 0
) -> list[np.ndarray]:
    pairs = [(qi, q + c) for qi, (q, cands) in enumerate(zip(queries, candidate_lists)) for c in cands]
    scores = []
    for start in range(0, len(pairs), batch):
        chunk = [p for _, p in pairs[start : start + batch]]
        ids, mask = right_padded(chunk, pad_id)
        ids, mask = ids.to(device), mask.to(device)
        scores.append(head(last_token_pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask))[:, 0])
    flat = torch.cat(scores).float().cpu().numpy()
    out, start = [], 0
    for cands in candidate_lists:
        out.append(flat[start : start + len(cands)])
        start += len(cands)
    return out


def prefix_reuse_scores(
    model, head, queries, candidate_lists, device, *, max_tokens: int = 65536, decoder=None
) -> list[np.ndarray]:
    """With a FusedDecoder: the packed path; else the HF model switched to aa_causal."""
    if decoder is not None:
        from harness.neural.fast.fused_paths import score_fused_continuations

        return [
            score_fused_continuations(decoder, head, q, cands, device, max_tokens=max_tokens)[:, 0]
            for q, cands in zip(queries, candidate_lists)
        ]
    from harness.neural.fast.prefix_scoring import score_continuations

    return [
        score_continuations(model, head, q, cands, device, pad_id=0, max_tokens=max_tokens)[:, 0]
        for q, cands in zip(queries, candidate_lists)
    ]


def score_agreement(fast: Sequence[np.ndarray], ref: Sequence[np.ndarray], k: int = 8) -> dict:
    from scipy.stats import spearmanr

    f, r = np.concatenate(fast), np.concatenate(ref)
    spread = float(np.std(r)) or 1.0
    rho = [float(spearmanr(a, b).statistic) for a, b in zip(fast, ref)]
    topk = [len(set(np.argsort(-a)[:k]) & set(np.argsort(-b)[:k])) / k for a, b in zip(fast, ref)]
    top1 = [int(np.argmax(a) == np.argmax(b)) for a, b in zip(fast, ref)]
    return {
        "max_abs_diff_over_score_sd": float(np.max(np.abs(f - r)) / spread),
        "spearman_min": min(rho),
        f"top{k}_overlap": float(np.mean(topk)),
        "top1_agreement": float(np.mean(top1)),
    }


def bench_rerank(
    model,
    queries,
    candidate_lists,
    device,
    *,
    max_tokens: int = 65536,
    naive_batch: int = 32,
    seed: int = 0,
    also_aa_causal: bool = True,
    fp8: bool = False,
    log=print,
) -> dict:
    """fp8: then the packed path over FP8 products, beside bf16 (the model is quantized in place: last)."""
    from harness.neural.fast import causal_attention
    from harness.neural.fast.fused_decoder import FusedDecoder

    shape = Shape.of(model)
    torch.manual_seed(seed)
    head = torch.nn.Linear(model.config.hidden_size, 1, bias=False).to(device=device, dtype=model.dtype)
    pairs = sum(len(c) for c in candidate_lists)
    new_tokens = sum(len(c) for cands in candidate_lists for c in cands)
    concat_flops = sum(shape.causal_flops(len(q) + len(c)) for q, cands in zip(queries, candidate_lists) for c in cands)
    reuse_flops = sum(
        shape.causal_flops(len(q)) + sum(shape.causal_flops(len(c), len(q)) for c in cands)
        for q, cands in zip(queries, candidate_lists)
    )
    use_cache = model.config.use_cache

    def figures(seconds, flops):
        return {
            "seconds": round(seconds, 4),
            "pairs": pairs,
            "pairs_per_s": round(pairs / seconds, 2),
            "new_tokens_per_s": round(new_tokens / seconds, 1),
            "tflops": round(flops / seconds / 1e12, 2),
        }

    def run_reuse(decoder):
        warm_q, warm_c = queries[:1], [sorted(candidate_lists[0], key=len)[::4]]
        prefix_reuse_scores(model, head, warm_q, warm_c, device, max_tokens=max_tokens, decoder=decoder)
        return timed(
            lambda: prefix_reuse_scores(
                model, head, queries, candidate_lists, device, max_tokens=max_tokens, decoder=decoder
            ),
            device,
        )

    model.set_attn_implementation("sdpa")
    naive_scores(model, head, queries[:1], [candidate_lists[0][:naive_batch]], device, batch=naive_batch)
    ref, t_naive = timed(lambda: naive_scores(model, head, queries, candidate_lists, device, batch=naive_batch), device)
    naive = figures(t_naive, concat_flops)
    log(
        f"naive:   {naive['pairs_per_s']:>8,.1f} pairs/s  {naive['tflops']:>6.1f} TFLOP/s (of the concatenated pairs' work)"
    )
    model.config.use_cache = False
    result = {
        "naive": {
            **naive,
            "batch": naive_batch,
            "order": "arrival",
            "attention": "sdpa + padding mask",
            "work_tflop": round(concat_flops / 1e12, 3),
        },
        "variants": [],
    }
    runs: list = []
    bf16_packed = None
    if FusedDecoder.supports(model):
        runs.append(("packed", FusedDecoder(model, layout="packed")))
    if (also_aa_causal or not runs) and causal_attention.enable(model):
        runs.append(("aa_causal", None))
    for i, (path, decoder) in enumerate(runs):
        scores, seconds = run_reuse(decoder)
        entry = {
            **figures(seconds, reuse_flops),
            "path": path,
            "max_tokens": max_tokens,
            "work_tflop": round(reuse_flops / 1e12, 3),
            "speedup": round(t_naive / seconds, 3),
            "agreement": score_agreement(scores, ref),
        }
        log(
            f"{'harness' if i == 0 else '  variant'} ({path}): {entry['pairs_per_s']:>8,.1f} pairs/s  "
            f"{entry['tflops']:>6.1f} TFLOP/s (of the prefix-reuse work)  ({t_naive / seconds:.2f}x naive)"
        )
        if i == 0:
            result.update(harness=entry, speedup=entry["speedup"], agreement=entry["agreement"])
        else:
            result["variants"].append(entry)
        if path == "packed":
            bf16_packed = (scores, seconds)
        del decoder
    if fp8:
        from harness.neural.fast.fp8_linear import quantize_frozen_base

        if bf16_packed is None:
            raise ValueError(f"fp8: no fused decoder for {type(model).__name__}")
        runs.clear()  # the bf16 decoder's fused weights go before the FP8 copy is made
        model.requires_grad_(False)
        quantize_frozen_base(model)
        scores, seconds = run_reuse(FusedDecoder(model, layout="packed"))
        result["fp8"] = {
            **figures(seconds, reuse_flops),
            "path": "packed",
            "max_tokens": max_tokens,
            "weights": "e4m3, a scale per output channel",
            "activations": "e4m3, a scale per token",
            "speedup": round(t_naive / seconds, 3),
            "speedup_vs_bf16": round(bf16_packed[1] / seconds, 3),
            "agreement": score_agreement(scores, ref),
            "agreement_vs_bf16": score_agreement(scores, bf16_packed[0]),
        }
        vs = result["fp8"]["agreement_vs_bf16"]
        log(
            f"fp8 (packed): {result['fp8']['pairs_per_s']:>8,.1f} pairs/s ({bf16_packed[1] / seconds:.2f}x bf16); "
            f"against bf16: Spearman >= {vs['spearman_min']:.4f}, top-8 {vs['top8_overlap']:.3f}"
        )
    model.set_attn_implementation("sdpa")
    model.config.use_cache = use_cache
    return result
