"""Training throughput: the harness's LoRA training steps against the naive Hugging Face + PEFT step.

naive (the paper's setup): the model with PEFT LoRA (r 16, alpha 32, dropout 0.05 on q/k/v/o/
gate/up/down), gradient checkpointing, bf16 weights with fp32 LoRA under bf16 autocast (fp32 on
the CPU), the recipe's batch padded to its longest row with an attention mask, Adam.
- retriever: 16 authors x 2 documents, mean pooling, a projection to hidden / 2, Eq. 2 (tau 0.01).
- reranker: 1 query x (1 + 12) candidates as concatenated pairs, last token, a 1 x hidden head,
  Eq. 2 (tau 1) over the candidates.
harness: `LoraFusedDecoder` (fused layers, LoRA inside, packed, varlen attention; layers
checkpointed or not), the retriever's documents in one pack; for the reranker the shared-prefix
step as the reranker's trainer runs it with `fast_training` (the `shared_prefix_score_groups`
hook under the trainer's autocast, then `candidates_loss`; the trainer runs it uncompiled, so
`--no-compile` times exactly what trains). Both paths train the same LoRA tensors on the same
batches; the first step's loss and LoRA gradients are compared before any optimiser step.

FLOPs: a forward costs 2 x non-embedding parameters per token plus causal attention
(`Shape.causal_flops`); with frozen base weights the backward computes input gradients only
(1 x the matrix products) and attention's backward about 2 x its forward; a checkpointed
layer runs its forward twice. `tflops` counts that work for the path as run; `tflops_3f`
is 3 x the forward, the convention of the issue's naive figures, for comparison.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from harness.neural.batching import right_padded
from harness.neural.fast.bench.timing import sync
from harness.neural.fast.bench.workload import Shape
from harness.neural.pooling import last_token_pool, mean_pool

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PAPER = {"retriever_documents": 395_118, "reranker_queries": 19_756, "retriever_12b_hours_4xA6000": 15,
         "reranker_hours_4xA6000": 60}


def with_lora(model, *, r: int = 16, alpha: int = 32, dropout: float = 0.05):
    """The paper's LoRA on every projection (PEFT, FEATURE_EXTRACTION); the base is frozen."""
    from peft import LoraConfig, TaskType, get_peft_model

    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS), bias="none",
                     task_type=TaskType.FEATURE_EXTRACTION)
    peft = get_peft_model(model, cfg)
    for name, p in peft.named_parameters():
        if "lora_" in name:
            p.data = p.data.float()  # fp32 master weights, as the harness's training keeps them
            if "lora_B" in name:  # PEFT starts B at zero; a random B makes the gradient check see every path
                torch.nn.init.normal_(p, std=0.02)
    return peft


def _autocast(device):
    from harness.neural.device import autocast

    return autocast(device, device.type == "cuda")


def naive_retriever_loss(peft, finish, rows_a, rows_b, device, *, tau: float, pad_id: int = 0) -> torch.Tensor:
    from harness.neural.losses import supcon_loss

    ids, mask = right_padded([*rows_a, *rows_b], pad_id)
    ids, mask = ids.to(device), mask.to(device)
    with _autocast(device):
        hidden = peft(input_ids=ids, attention_mask=mask).last_hidden_state
        emb = finish(mean_pool(hidden, mask))
    n = len(rows_a)
    return supcon_loss(emb[:n], emb[n:], tau, cosine=False)


def naive_reranker_loss(peft, head, groups, device, *, tau: float = 1.0, pad_id: int = 0) -> torch.Tensor:
    from harness.neural.losses import candidates_loss

    scores = []
    for prefix, cands in groups:
        ids, mask = right_padded([list(prefix) + list(c) for c in cands], pad_id)
        ids, mask = ids.to(device), mask.to(device)
        with _autocast(device):
            scores.append(head(last_token_pool(peft(input_ids=ids, attention_mask=mask).last_hidden_state, mask))[:, 0])
    return candidates_loss(scores, tau) / len(groups)


def harness_reranker_loss(score_groups, scorer, groups, device, *, tau: float = 1.0) -> torch.Tensor:
    """The reranker trainer's step with `fast_training` (its task's `QueryNegatives.step`), on
    token ids: `score_groups` (a `shared_prefix_score_groups` hook) under the trainer's autocast,
    then Eq. 2 summed over the groups (`candidates_loss`), here divided by their number.
    scorer: what the hook reads of the reranker's model, `backbone` (PEFT) and `finish` (the head)."""
    from harness.neural.losses import candidates_loss

    with _autocast(device):
        scores = score_groups(scorer.backbone, scorer, groups, device)
    return candidates_loss(scores, tau) / len(groups)


def lora_gradients(peft, extra: Sequence[torch.nn.Parameter] = ()) -> dict[str, torch.Tensor]:
    out = {n: p.grad.detach().float().clone() for n, p in peft.named_parameters() if p.requires_grad and p.grad is not None}
    for i, p in enumerate(extra):
        out[f"extra.{i}"] = p.grad.detach().float().clone()
    return out


def gradient_agreement(got: dict, want: dict) -> dict:
    """Relative error of the whole LoRA gradient and the worst tensor's, cosine of the two."""
    missing = sorted(set(want) ^ set(got))
    g = torch.cat([got[k].flatten() for k in sorted(want)])
    w = torch.cat([want[k].flatten() for k in sorted(want)])
    per = [float(torch.linalg.norm(got[k] - want[k]) / torch.linalg.norm(want[k]).clamp(min=1e-30)) for k in want]
    return {"rel_error": float(torch.linalg.norm(g - w) / torch.linalg.norm(w).clamp(min=1e-30)),
            "rel_error_worst_tensor": max(per), "cosine": float(F.cosine_similarity(g, w, dim=0)),
            "tensors": len(want), "mismatched_names": missing}


def _dropout_off(peft):
    """Eval mode for the check (no LoRA dropout in either path); returns a function that restores."""
    was = peft.training
    peft.eval()
    return lambda: peft.train(was)


def first_step_check(peft, naive: Callable[[], torch.Tensor], fast: Callable[[], torch.Tensor],
                     extra: Sequence[torch.nn.Parameter] = ()) -> dict:
    """Loss and LoRA-gradient agreement of the two paths on one batch (dropout off, no optimiser step)."""
    def clear():
        peft.zero_grad(set_to_none=True)
        for p in extra:
            p.grad = None

    restore = _dropout_off(peft)
    try:
        clear()
        ref = naive()
        ref.backward()
        want = lora_gradients(peft, extra)
        clear()
        got_loss = fast()
        got_loss.backward()
        got = lora_gradients(peft, extra)
        clear()
    finally:
        restore()
    a, b = float(ref.detach()), float(got_loss.detach())
    return {"naive_loss": a, "harness_loss": b, "loss_rel_error": abs(a - b) / max(abs(a), 1e-30),
            "gradients": gradient_agreement(got, want)}


def time_steps(step: Callable[[], torch.Tensor], optimizer, device, *, warmup: int, steps: int) -> dict:
    """Seconds per optimiser step (forward, backward, Adam) after warm-up, and peak memory."""
    for _ in range(warmup):
        step().backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    losses = []
    for _ in range(steps):
        loss = step()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    sync(device)
    seconds = (time.perf_counter() - start) / steps
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 30 if device.type == "cuda" else None
    return {"seconds_per_step": round(seconds, 4), "peak_memory_gib": None if peak is None else round(peak, 2),
            "losses": [round(float(x), 5) for x in losses]}


def train_flops(shape: Shape, seqs: Sequence[tuple[int, int]], *, recompute: bool) -> dict:
    """Work of one step over sequences given as (new tokens, cached keys before them)."""
    linear = sum(2.0 * shape.params * n for n, _ in seqs)
    attention = sum(shape.causal_flops(n, off) - 2.0 * shape.params * n for n, off in seqs)
    forward = linear + attention
    work = forward + linear + 2 * attention + (forward if recompute else 0.0)
    return {"forward": forward, "work": work, "three_forward": 3 * forward}


def _figures(timing: dict, flops: dict, tokens: int, items: int, unit: str, peak_tflops: float | None) -> dict:
    s = timing["seconds_per_step"]
    out = {**timing, "tokens_per_step": tokens, f"{unit}_per_step": items, "tokens_per_s": round(tokens / s, 1),
           f"{unit}_per_s": round(items / s, 2), "tflops": round(flops["work"] / s / 1e12, 2),
           "tflops_3f": round(flops["three_forward"] / s / 1e12, 2)}
    if peak_tflops:
        out["share_of_peak"] = round(flops["work"] / s / 1e12 / peak_tflops, 3)
    return out


def peak_bf16_tflops(device) -> float | None:
    """Dense bf16 peak of the card, for the share-of-peak figure (H100/H200 SXM: ~989; the issue quotes ~790
    as the achievable figure on an H200, which is what `share_of_peak` divides by)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return 790.0 if ("H200" in name or "H100" in name) else None


def projection(kind: str, per_s: float, gpus: Sequence[int] = (1, 4, 8), *, doc_tokens: int | None = None,
               tokens_per_s: float | None = None) -> dict:
    """Hours for one epoch of the paper's data at the measured rate, on N GPUs (data parallel, linear
    scaling assumed: LoRA gradients are small and the retriever gathers only embeddings)."""
    if kind == "retriever":
        n = PAPER["retriever_documents"]
        rate = tokens_per_s / doc_tokens if doc_tokens and tokens_per_s else per_s
        basis = f"{n:,} documents" + (f" of {doc_tokens} tokens at the measured tokens/s" if doc_tokens else
                                      " at the measured documents/s")
    else:
        n = PAPER["reranker_queries"]
        rate = per_s
        basis = f"{n:,} queries x 13 candidates at the measured queries/s"
    one = n / rate / 3600
    return {"basis": basis, "hours": {str(g): round(one / g, 2) for g in gpus}}


def bench_train_retriever(model, rows: Sequence[Sequence[int]], device, *, authors: int = 16, steps: int = 3,
                          warmup: int = 2, checkpoint: bool = True, compile: bool | None = None, tau: float = 0.01,
                          doc_tokens: int = 512, log=print) -> dict:
    """rows: 2 x authors x (warmup + steps) documents or more; batch i is rows[2ai : 2a(i+1)]."""
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    shape = Shape.of(model)
    hidden = model.config.hidden_size
    peft = with_lora(model)
    peft.train()
    torch.manual_seed(0)
    projection_layer = torch.nn.Linear(hidden, hidden // 2, bias=True).to(device)
    finish = lambda pooled: projection_layer(pooled.float())  # noqa: E731
    batch = 2 * authors
    batches = [rows[i:i + batch] for i in range(0, len(rows) - batch + 1, batch)]
    if len(batches) < 2:
        raise ValueError(f"need at least {2 * batch} rows")
    params = [p for p in peft.parameters() if p.requires_grad] + list(projection_layer.parameters())
    tokens = int(np.mean([sum(map(len, b)) for b in batches]))
    seqs = [[(len(r), 0) for r in b] for b in batches]
    cycle = {"naive": 0, "harness": 0}

    def next_batch(path):
        b = batches[cycle[path] % len(batches)]
        cycle[path] += 1
        return b[:authors], b[authors:]

    base = peft.get_base_model()
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    base.config.use_cache = False
    decoder = LoraFusedDecoder(peft, compile=compile, checkpoint=checkpoint)
    check = first_step_check(
        peft, lambda: naive_retriever_loss(peft, finish, batches[0][:authors], batches[0][authors:], device, tau=tau),
        lambda: retriever_loss(decoder, finish, batches[0][:authors], batches[0][authors:], device, tau=tau),
        extra=list(projection_layer.parameters()))
    log(f"first step: loss naive {check['naive_loss']:.6f} harness {check['harness_loss']:.6f}; "
        f"LoRA gradient rel. error {check['gradients']['rel_error']:.2e} (cosine {check['gradients']['cosine']:.6f})")
    optimizer = torch.optim.Adam(params, lr=1e-5)
    naive_t = time_steps(lambda: naive_retriever_loss(peft, finish, *next_batch("naive"), device, tau=tau), optimizer,
                         device, warmup=warmup, steps=steps)
    base.gradient_checkpointing_disable()
    optimizer = torch.optim.Adam(params, lr=1e-5, fused=device.type == "cuda")
    fast_t = time_steps(lambda: retriever_loss(decoder, finish, *next_batch("harness"), device, tau=tau), optimizer,
                        device, warmup=warmup, steps=steps)
    peak = peak_bf16_tflops(device)
    work = [train_flops(shape, s, recompute=True) for s in seqs]
    mean = {k: float(np.mean([w[k] for w in work])) for k in work[0]}
    fast_work = {k: float(np.mean([train_flops(shape, s, recompute=checkpoint)[k] for s in seqs])) for k in work[0]}
    naive = {**_figures(naive_t, mean, tokens, batch, "documents", peak), "checkpointing": True, "batch": "padded",
             "attention": "sdpa + padding mask"}
    ours = {**_figures(fast_t, fast_work, tokens, batch, "documents", peak), "checkpointing": checkpoint,
            "batch": "packed", "path": "fused + LoRA, varlen attention"}
    speedup = round(naive_t["seconds_per_step"] / fast_t["seconds_per_step"], 3)
    log(f"naive:   {naive['tokens_per_s']:>10,.0f} tokens/s  {naive['documents_per_s']:>7,.1f} docs/s  "
        f"{naive['tflops']:>6.1f} TFLOP/s  peak {naive['peak_memory_gib']} GiB")
    log(f"harness: {ours['tokens_per_s']:>10,.0f} tokens/s  {ours['documents_per_s']:>7,.1f} docs/s  "
        f"{ours['tflops']:>6.1f} TFLOP/s  peak {ours['peak_memory_gib']} GiB  ({speedup:.2f}x naive)")
    proj = {"naive": projection("retriever", naive["documents_per_s"], doc_tokens=doc_tokens,
                                tokens_per_s=naive["tokens_per_s"]),
            "harness": projection("retriever", ours["documents_per_s"], doc_tokens=doc_tokens,
                                  tokens_per_s=ours["tokens_per_s"])}
    log(f"one epoch of the paper's retriever data ({proj['harness']['basis']}): harness "
        + ", ".join(f"{g} GPU {h} h" for g, h in proj["harness"]["hours"].items())
        + "; naive " + ", ".join(f"{g} GPU {h} h" for g, h in proj["naive"]["hours"].items())
        + f"; the paper: {PAPER['retriever_12b_hours_4xA6000']} h on 4 RTX A6000 (12B)")
    return {"naive": naive, "harness": ours, "speedup": speedup, "first_step": check, "authors": authors,
            "projection": proj, "paper": PAPER}


def bench_train_reranker(model, groups, device, *, steps: int = 3, warmup: int = 2, checkpoint: bool = True,
                         compile: bool | None = None, tau: float = 1.0, log=print) -> dict:
    """groups: (prefix, candidates) per query, at least 2; one query a step, as in the paper."""
    from types import SimpleNamespace

    from harness.neural.fast.prefix_train import shared_prefix_score_groups

    shape = Shape.of(model)
    peft = with_lora(model)
    peft.train()
    torch.manual_seed(0)
    head_layer = torch.nn.Linear(model.config.hidden_size, 1, bias=False).to(device)
    head = lambda last: head_layer(last.float())  # noqa: E731
    params = [p for p in peft.parameters() if p.requires_grad] + list(head_layer.parameters())
    cycle = {"naive": 0, "harness": 0}

    def next_group(path):
        g = groups[cycle[path] % len(groups)]
        cycle[path] += 1
        return [g]

    base = peft.get_base_model()
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    base.config.use_cache = False
    score_groups = shared_prefix_score_groups(checkpoint=checkpoint, compile=compile)
    scorer = SimpleNamespace(backbone=peft, finish=head)
    check = first_step_check(peft, lambda: naive_reranker_loss(peft, head, groups[:1], device, tau=tau),
                             lambda: harness_reranker_loss(score_groups, scorer, groups[:1], device, tau=tau),
                             extra=list(head_layer.parameters()))
    log(f"first step: loss naive {check['naive_loss']:.6f} harness {check['harness_loss']:.6f}; "
        f"LoRA gradient rel. error {check['gradients']['rel_error']:.2e} (cosine {check['gradients']['cosine']:.6f})")
    optimizer = torch.optim.Adam(params, lr=1e-4)
    naive_t = time_steps(lambda: naive_reranker_loss(peft, head, next_group("naive"), device, tau=tau), optimizer,
                         device, warmup=warmup, steps=steps)
    base.gradient_checkpointing_disable()
    optimizer = torch.optim.Adam(params, lr=1e-4, fused=device.type == "cuda")
    fast_t = time_steps(lambda: harness_reranker_loss(score_groups, scorer, next_group("harness"), device, tau=tau),
                        optimizer, device, warmup=warmup, steps=steps)
    pairs = int(np.mean([len(c) for _, c in groups]))
    concat_seqs = [[(len(p) + len(c), 0) for c in cs] for p, cs in groups]
    shared_seqs = [[(len(p), 0)] + [(len(c), len(p)) for c in cs] for p, cs in groups]
    avg = lambda seqs, rc: {k: float(np.mean([train_flops(shape, s, recompute=rc)[k] for s in seqs]))  # noqa: E731
                            for k in ("forward", "work", "three_forward")}
    peak = peak_bf16_tflops(device)
    concat_tokens = int(np.mean([sum(n for n, _ in s) for s in concat_seqs]))
    shared_tokens = int(np.mean([sum(n for n, _ in s) for s in shared_seqs]))
    naive = {**_figures(naive_t, avg(concat_seqs, True), concat_tokens, pairs, "pairs", peak), "checkpointing": True,
             "batch": "concatenated pairs, padded", "attention": "sdpa + padding mask"}
    ours = {**_figures(fast_t, avg(shared_seqs, checkpoint), shared_tokens, pairs, "pairs", peak),
            "checkpointing": checkpoint, "batch": "shared prefix, packed", "path": "fused + LoRA, varlen attention"}
    speedup = round(naive_t["seconds_per_step"] / fast_t["seconds_per_step"], 3)
    log(f"naive:   {naive['pairs_per_s']:>7,.2f} pairs/s  {naive['tflops']:>6.1f} TFLOP/s  peak {naive['peak_memory_gib']} GiB")
    log(f"harness: {ours['pairs_per_s']:>7,.2f} pairs/s  {ours['tflops']:>6.1f} TFLOP/s (of the shared-prefix work)  "
        f"peak {ours['peak_memory_gib']} GiB  ({speedup:.2f}x naive); tokens {concat_tokens:,} -> {shared_tokens:,}")
    proj = {path: projection("reranker", fig["pairs_per_s"] / pairs) for path, fig in (("naive", naive), ("harness", ours))}
    log(f"one epoch of the paper's reranker data ({proj['harness']['basis']}): harness "
        + ", ".join(f"{g} GPU {h} h" for g, h in proj["harness"]["hours"].items())
        + "; naive " + ", ".join(f"{g} GPU {h} h" for g, h in proj["naive"]["hours"].items())
        + f"; the paper: {PAPER['reranker_hours_4xA6000']} h on 4 RTX A6000")
    return {"naive": naive, "harness": ours, "speedup": speedup, "first_step": check, "candidates": pairs,
            "token_ratio": round(concat_tokens / shared_tokens, 3), "projection": proj, "paper": PAPER}
