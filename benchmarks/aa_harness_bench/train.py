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
hook under the trainer's autocast, then `candidates_loss`). Compiled or not as training decides
(`lora_train.training_compile`: on CUDA above 2B parameters) unless `--no-compile`, so the
bench times what trains; the record says which (`compiled`). Both paths train the same LoRA tensors on the same
batches; the first step's loss and LoRA gradients are compared before any optimiser step.

FLOPs: a forward costs 2 x non-embedding parameters per token plus causal attention
(`Shape.causal_flops`); with frozen base weights the backward computes input gradients only
(1 x the matrix products) and attention's backward about 2 x its forward; a checkpointed
layer runs its forward twice. `tflops` counts that work for the path as run; `tflops_3f`
is 3 x the forward, the convention of the issue's naive figures, for comparison.

Memory: the two paths run one after the other, each on its own model, so the peak is one
path's. The naive path builds its model, takes its first step (loss and LoRA gradients kept on
the host by parameter name), times its steps and is deleted with its optimiser, graph and the
allocator's cache; then the harness path builds the model again from the same seed (the same
random weights, checked by a fingerprint of every parameter), takes its first step, which is
compared with the kept one, and times its steps. Re-initialising costs seconds on the GPU; a
host copy of the base weights would cost 24 GB of host memory and two transfers at the 12B
shape. Each path's peak memory is measured from its own start and printed; a path that runs
out of GPU memory is recorded as {"error": "out of memory", "peak_memory_gib": ...} and the
other path still runs and is written.

fp8 (`--fp8`): a third path after those two, the harness's step over an FP8 frozen base
(harness.neural.fast.fp8_linear; the base quantized on its own build, compiled or not as the bf16
harness path), its first step compared with the bf16 harness path's (not with the naive one's:
FP8 computes another function) and its peak memory its own.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from aa_harness_bench.reference import (
    compare_first_steps,
    first_step,
    naive_reranker_loss,
    naive_retriever_loss,
    with_lora,
)
from aa_harness_bench.timing import sync
from aa_harness_bench.workload import Shape

PAPER = {
    "retriever_documents": 395_118,
    "reranker_queries": 19_756,
    "retriever_12b_hours_4xA6000": 15,
    "reranker_hours_4xA6000": 60,
}


def harness_reranker_loss(score_groups, scorer, groups, device, *, tau: float = 1.0) -> torch.Tensor:
    """The reranker trainer's step with `fast_training` (its task's `QueryNegatives.step`), on
    token ids: `score_groups` (a `shared_prefix_score_groups` hook) under the trainer's autocast,
    then Eq. 2 summed over the groups (`candidates_loss`), here divided by their number.
    scorer: what the hook reads of the reranker's model, `backbone` (PEFT) and `finish` (the head)."""
    from harness.neural.device import autocast
    from harness.neural.losses import candidates_loss

    with autocast(device, device.type == "cuda"):
        scores = score_groups(scorer.backbone, scorer, groups, device)
    return candidates_loss(scores, tau) / len(groups)


def parameter_fingerprint(named: Sequence[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Per parameter, on the host: its sum (fp32) and 8 values spread over it. Two builds from
    the same seed must give equal fingerprints; the harness path's model is checked against the
    naive one's this way instead of keeping a copy of the weights."""
    out = {}
    for name, p in named:
        flat = p.detach().reshape(-1)
        sample = flat[:: max(1, flat.numel() // 8)][:8].float()
        out[name] = torch.cat([flat.sum(dtype=torch.float32).reshape(1), sample])
    host = torch.cat(list(out.values())).cpu().split([v.numel() for v in out.values()]) if out else []
    return dict(zip(out, host))


def same_fingerprint(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


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
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    # what the allocator holds: for graphed steps their pools too, which replays never allocate from
    reserved = torch.cuda.memory_reserved(device) / 2**30 if device.type == "cuda" else None
    return {
        "seconds_per_step": round(seconds, 4),
        "peak_memory_gib": None if peak is None else round(peak, 2),
        "reserved_memory_gib": None if reserved is None else round(reserved, 2),
        "losses": [round(float(x), 5) for x in losses],
    }


def train_flops(shape: Shape, seqs: Sequence[tuple[int, int]], *, recompute: bool) -> dict:
    """Work of one step over sequences given as (new tokens, cached keys before them)."""
    linear = sum(2.0 * shape.params * n for n, _ in seqs)
    attention = sum(shape.causal_flops(n, off) - 2.0 * shape.params * n for n, off in seqs)
    forward = linear + attention
    work = forward + linear + 2 * attention + (forward if recompute else 0.0)
    return {"forward": forward, "work": work, "three_forward": 3 * forward}


def _figures(timing: dict, flops: dict, tokens: int, items: int, unit: str, peak_tflops: float | None) -> dict:
    s = timing["seconds_per_step"]
    out = {
        **timing,
        "tokens_per_step": tokens,
        f"{unit}_per_step": items,
        "tokens_per_s": round(tokens / s, 1),
        f"{unit}_per_s": round(items / s, 2),
        "tflops": round(flops["work"] / s / 1e12, 2),
        "tflops_3f": round(flops["three_forward"] / s / 1e12, 2),
    }
    if peak_tflops:
        out["share_of_peak"] = round(flops["work"] / s / 1e12 / peak_tflops, 3)
    return out


def dense_peak_tflops(device) -> float | None:
    """The card's dense bf16 peak (harness.foundation.hardware), which `share_of_peak` divides by; None off CUDA."""
    from harness.foundation.hardware import dense_bf16_peak_tflops

    return dense_bf16_peak_tflops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def projection(
    kind: str,
    per_s: float,
    gpus: Sequence[int] = (1, 4, 8),
    *,
    doc_tokens: int | None = None,
    tokens_per_s: float | None = None,
) -> dict:
    """Hours for one epoch of the paper's data at the measured rate, on N GPUs (data parallel, linear
    scaling assumed: LoRA gradients are small and the retriever gathers only embeddings)."""
    if kind == "retriever":
        n = PAPER["retriever_documents"]
        rate = tokens_per_s / doc_tokens if doc_tokens and tokens_per_s else per_s
        basis = f"{n:,} documents" + (
            f" of {doc_tokens} tokens at the measured tokens/s" if doc_tokens else " at the measured documents/s"
        )
    else:
        n = PAPER["reranker_queries"]
        rate = per_s
        basis = f"{n:,} queries x 13 candidates at the measured queries/s"
    one = n / rate / 3600
    return {"basis": basis, "hours": {str(g): round(one / g, 2) for g in gpus}}


@dataclass
class PathSteps:
    """One path set up on its own model: what trains, its first batch's loss, the next batch's
    loss (batches in the same order in both paths) and its optimiser."""

    peft: torch.nn.Module
    extra: list  # trained parameters outside the PEFT model (projection, head)
    first: Callable[[], torch.Tensor]
    step: Callable[[], torch.Tensor]
    optimizer: Callable[[list], torch.optim.Optimizer]
    keep_train: bool = False  # first step in train mode, dropout off (see `_dropout_off`)


def _peak_gib(device) -> float | None:
    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**30, 2) if torch.cuda.is_initialized() else 0.0


def release_memory(device) -> None:
    """Free what a finished path left (reference cycles, the allocator's cached blocks) and start
    the peak-memory count again, so the next path's peak is its own."""
    gc.collect()
    if device.type == "cuda" and torch.cuda.is_initialized():  # before CUDA starts there is nothing to reset
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def run_path(
    label: str,
    build: Callable[[], torch.nn.Module],
    make: Callable[[torch.nn.Module], PathSteps],
    device,
    *,
    warmup: int,
    steps: int,
    log=print,
) -> tuple[dict, dict | None, dict | None]:
    """Build a model, set the path up on it, take its first step, time its steps, then drop it all.

    Returns (the timing, or {"error": "out of memory", "stage", "peak_memory_gib"} when the GPU
    ran out, the first step (`first_step`) or None, the parameters' fingerprint or None). Peak
    memory counts from this path's start: `path_peak_memory_gib` over all of it,
    `first_step_peak_memory_gib` up to the first step, `peak_memory_gib` over the timed steps."""
    release_memory(device)
    done: dict = {"stage": "build"}
    try:
        record = _take_path(build, make, device, warmup=warmup, steps=steps, done=done)
    except torch.cuda.OutOfMemoryError:  # the traceback, and with it the path's frames, goes at the end of this block
        record = {"error": "out of memory", "stage": done["stage"], "peak_memory_gib": _peak_gib(device)}
    release_memory(device)
    first, fingerprint = done.get("first"), done.get("fingerprint")
    if "error" in record:
        log(
            f"{label}: out of memory in the {record['stage']} (peak {record['peak_memory_gib']} GiB since the "
            f"path started)"
        )
    elif record["path_peak_memory_gib"] is None:
        log(f"{label}: first-step loss {first['loss']:.6f}; peak memory not measured on {device.type}")
    else:
        log(
            f"{label}: first-step loss {first['loss']:.6f}; peak memory {record['path_peak_memory_gib']} GiB "
            f"(first step {record['first_step_peak_memory_gib']}, timed steps {record['peak_memory_gib']})"
        )
    return record, first, fingerprint


def _take_path(build, make, device, *, warmup: int, steps: int, done: dict) -> dict:
    """run_path's work; its model lives in this frame only. `done` gets the stage reached, the
    fingerprint and the first step as they complete."""
    path = make(build())
    done["stage"] = "first step"
    done["fingerprint"] = parameter_fingerprint(
        [*path.peft.named_parameters(), *((f"extra.{i}", q) for i, q in enumerate(path.extra))]
    )
    done["first"] = first_step(path.peft, path.first, path.extra, keep_train=path.keep_train)
    first_peak = _peak_gib(device)
    done["stage"] = "timed steps"
    params = [q for q in path.peft.parameters() if q.requires_grad] + list(path.extra)
    return {
        **time_steps(path.step, path.optimizer(params), device, warmup=warmup, steps=steps),
        "first_step_peak_memory_gib": first_peak,
        "path_peak_memory_gib": _peak_gib(device),
    }


def one_at_a_time(
    build,
    naive: Callable[[torch.nn.Module], PathSteps],
    harness: Callable[[torch.nn.Module], PathSteps],
    device,
    *,
    warmup: int,
    steps: int,
    log=print,
    kept: dict | None = None,
) -> tuple[dict, dict, dict]:
    """The naive path, then the harness path, each on its own build (never both models at once),
    and the harness's first step compared with the naive one's: (naive timing, harness timing,
    first-step agreement; "compared": false when a path failed before its first step).
    kept: gets the harness's first step ("harness_first"), for a later path to be compared with."""
    naive_t, naive_first, naive_fp = run_path("naive", build, naive, device, warmup=warmup, steps=steps, log=log)
    fast_t, fast_first, fast_fp = run_path("harness", build, harness, device, warmup=warmup, steps=steps, log=log)
    if kept is not None:
        kept["harness_first"] = fast_first
    if naive_first is None or fast_first is None:
        check = {
            "compared": False,
            "naive_loss": naive_first and naive_first["loss"],
            "harness_loss": fast_first and fast_first["loss"],
        }
        log("first step: not compared (a path failed before its first step)")
        return naive_t, fast_t, check
    check = {**compare_first_steps(naive_first, fast_first), "same_weights": same_fingerprint(naive_fp, fast_fp)}
    log(
        f"first step: loss naive {check['naive_loss']:.6f} harness {check['harness_loss']:.6f}; "
        f"LoRA gradient rel. error {check['gradients']['rel_error']:.2e} (cosine {check['gradients']['cosine']:.6f})"
    )
    if not check["same_weights"]:
        log(
            "warning: the two builds' weights differ (build is not deterministic): the first-step check compares "
            "different models"
        )
    return naive_t, fast_t, check


def fp8_path(build, make, kept: dict, described: dict, figures, fast_t: dict, naive_t: dict, device, **run) -> dict:
    """The harness's step over an FP8 frozen base, on its own build after the other paths: its
    figures, its speed against bf16's and naive's, and its first step against the bf16 harness's."""
    fp8_t, fp8_first, _ = run_path("harness fp8", build, make, device, **run)
    bf16_first = kept.get("harness_first")
    if fp8_first is None or bf16_first is None:
        check: dict = {"compared": False}
    else:
        check = compare_first_steps(bf16_first, fp8_first)
        run.get("log", print)(
            f"fp8 first step against bf16: loss {check['loss_rel_error']:.2e}; LoRA gradient rel. error "
            f"{check['gradients']['rel_error']:.2e} (cosine {check['gradients']['cosine']:.6f})"
        )
    return {
        **_path_figures(fp8_t, {**described, "fp8": "e4m3 frozen base"}, figures),
        "speedup": _speedup(naive_t, fp8_t),
        "speedup_vs_bf16": _speedup(fast_t, fp8_t),
        "first_step_vs_bf16": check,
    }


def _cycle(items):
    i = 0

    def take():
        nonlocal i
        item = items[i % len(items)]
        i += 1
        return item

    return take


def _figures_of(
    shapes: list, seqs, recompute: bool, tokens: int, items: int, unit: str, peak: float | None
) -> Callable[[dict], dict]:
    """A path's figures from its timing, by the work of `seqs` on the model the path built
    (`shapes[0]`); the timing alone when no path got as far as building one."""

    def of(timing: dict) -> dict:
        if not shapes:
            return timing
        work = {
            k: float(np.mean([train_flops(shapes[0], s, recompute=recompute)[k] for s in seqs]))
            for k in ("forward", "work", "three_forward")
        }
        return _figures(timing, work, tokens, items, unit, peak)

    return of


def _path_figures(timing: dict, described: dict, figures: Callable[[dict], dict]) -> dict:
    """A path's result: its figures, or its error record, with what the path is."""
    return {**(timing if "error" in timing else figures(timing)), **described}


def _speedup(naive_t: dict, fast_t: dict) -> float | None:
    if "error" in naive_t or "error" in fast_t:
        return None
    return round(naive_t["seconds_per_step"] / fast_t["seconds_per_step"], 3)


def _log_path(log, label: str, fig: dict, line: Callable[[dict], str]) -> None:
    if "error" in fig:
        log(f"{label + ':':<9}{fig['error']} in the {fig['stage']} (peak {fig['peak_memory_gib']} GiB)")
    else:
        log(f"{label + ':':<9}{line(fig)}")


def _log_projection(log, what: str, proj: dict, paper: str) -> None:
    parts = [
        f"{path} " + ", ".join(f"{g} GPU {h} h" for g, h in p["hours"].items())
        for path, p in sorted(proj.items(), key=lambda kv: kv[0] != "harness")
    ]
    if parts:
        basis = next(iter(proj.values()))["basis"]
        log(f"one epoch of the paper's {what} data ({basis}): " + "; ".join(parts) + f"; the paper: {paper}")


def bench_train_retriever(
    build: Callable[[], torch.nn.Module],
    rows: Sequence[Sequence[int]],
    device,
    *,
    authors: int = 16,
    steps: int = 3,
    warmup: int = 2,
    checkpoint: bool = True,
    compile: bool | None = None,
    tau: float = 0.01,
    doc_tokens: int = 512,
    fp8: bool = False,
    graphs: bool = True,
    log=print,
) -> dict:
    """rows: 2 x authors x (warmup + steps) documents or more; batch i is rows[2ai : 2a(i+1)].
    build: returns the bare decoder with random weights; called once a path, it must give the
    same weights each time (a seeded `archs.build_model`; checked). fp8: a third path over an FP8
    frozen base (see the module docstring). graphs: the harness's layers as CUDA graphs where
    training runs them so (CUDA, no checkpointing)."""
    from harness.neural.fast.graphed_train import TrainGraphs
    from harness.neural.fast.lora_train import LoraFusedDecoder, fast_decoder, retriever_loss, training_compile

    batch = 2 * authors
    batches = [
        (b[:authors], b[authors:]) for b in (rows[i : i + batch] for i in range(0, len(rows) - batch + 1, batch))
    ]
    if len(batches) < 2:
        raise ValueError(f"need at least {2 * batch} rows")
    tokens = int(np.mean([sum(map(len, a)) + sum(map(len, b)) for a, b in batches]))
    seqs = [[(len(r), 0) for r in (*a, *b)] for a, b in batches]
    shapes, compiled = [], []
    graphed = graphs and device.type == "cuda" and not checkpoint
    graph_sets: list = []  # the harness paths' TrainGraphs (bf16, then FP8), for their captures

    def setup(model):
        shapes.append(Shape.of(model))
        hidden = model.config.hidden_size
        peft = with_lora(model)
        peft.train()
        torch.manual_seed(0)
        layer = torch.nn.Linear(hidden, hidden // 2, bias=True).to(device)
        return peft, layer, (lambda pooled: layer(pooled.float())), _cycle(batches)

    def naive(model):
        peft, layer, finish, take = setup(model)
        base = peft.get_base_model()
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.config.use_cache = False
        loss = lambda ab: naive_retriever_loss(peft, finish, *ab, device, tau=tau)  # noqa: E731
        return PathSteps(
            peft,
            list(layer.parameters()),
            lambda: loss(batches[0]),
            lambda: loss(take()),
            lambda params: torch.optim.Adam(params, lr=1e-5),
            keep_train=True,
        )

    def harness(model, fp8: bool = False):
        peft, layer, finish, take = setup(model)
        if fp8:
            decoder = fast_decoder(peft, device, checkpoint=checkpoint, compile=compile, fp8=True)
        else:
            compiled.append(training_compile(peft, compile, graphed))
            decoder = LoraFusedDecoder(peft, compile=compiled[-1], checkpoint=checkpoint)
        g = TrainGraphs(decoder, device) if graphed and not fp8 else None  # as training: FP8 is not graphed
        graph_sets.append(g)
        loss = lambda ab: retriever_loss(decoder, finish, *ab, device, tau=tau, graphs=g)  # noqa: E731
        return PathSteps(
            peft,
            list(layer.parameters()),
            lambda: loss(batches[0]),
            lambda: loss(take()),
            lambda params: torch.optim.Adam(params, lr=1e-5, fused=device.type == "cuda"),
        )

    kept: dict = {}
    naive_t, fast_t, check = one_at_a_time(
        build, naive, harness, device, warmup=warmup, steps=steps, log=log, kept=kept
    )
    peak = dense_peak_tflops(device)

    def figures(recompute):
        return _figures_of(shapes, seqs, recompute, tokens, batch, "documents", peak)

    naive_f = _path_figures(
        naive_t, {"checkpointing": True, "batch": "padded", "attention": "sdpa + padding mask"}, figures(True)
    )
    ours = _path_figures(
        fast_t,
        {
            "checkpointing": checkpoint,
            "batch": "packed",
            "compiled": bool(compiled and compiled[-1]),
            "graphs": graphed,
            "path": "fused + LoRA, varlen attention",
        },
        figures(checkpoint),
    )
    if graphed and graph_sets and graph_sets[0] is not None:
        # graphed calls: the warm-up steps, then the timed ones (the first step runs in eval mode,
        # eagerly); a capture among the timed steps times a capture (three warm-up runs and the
        # capture), not a replay
        g = graph_sets[0]
        late = sum(1 for c in g.captured_at if c > warmup)
        ours["graph_shapes"], ours["graph_captures_in_timed_steps"] = len(g.graphs), late
        if late:
            log(f"graphs: {late} of the {steps} timed steps captured a new pack shape; raise --warmup to time replays")
    if graphed and "error" not in ours:
        # the graphs' memory pools fill at capture (first step, warm-up) and replays allocate
        # nothing: the timed steps' peak would leave them out, so a graphed path reports what
        # the allocator holds after its timed steps
        ours["peak_memory_gib"] = fast_t.get("reserved_memory_gib") or ours["peak_memory_gib"]
    speedup = _speedup(naive_t, fast_t)

    def line(f):
        return (
            f"{f['tokens_per_s']:>10,.0f} tokens/s  {f['documents_per_s']:>7,.1f} docs/s  "
            f"{f['tflops']:>6.1f} TFLOP/s  peak {f['peak_memory_gib']} GiB"
        )

    _log_path(log, "naive", naive_f, line)
    _log_path(log, "harness", ours, lambda f: line(f) + (f"  ({speedup:.2f}x naive)" if speedup else ""))
    paths = [("naive", naive_f), ("harness", ours)]
    extra = {}
    if fp8:
        extra["fp8"] = fp8_path(
            build,
            lambda model: harness(model, fp8=True),
            kept,
            {k: ours[k] for k in ("checkpointing", "batch", "compiled", "path") if k in ours},
            figures(checkpoint),
            fast_t,
            naive_t,
            device,
            warmup=warmup,
            steps=steps,
            log=log,
        )
        _log_path(log, "fp8", extra["fp8"], lambda f: line(f) + f"  ({f['speedup_vs_bf16']}x bf16 harness)")
        paths.append(("fp8", extra["fp8"]))
    proj = {
        path: projection("retriever", f["documents_per_s"], doc_tokens=doc_tokens, tokens_per_s=f["tokens_per_s"])
        for path, f in paths
        if "error" not in f
    }
    _log_projection(log, "retriever", proj, f"{PAPER['retriever_12b_hours_4xA6000']} h on 4 RTX A6000 (12B)")
    return {
        "naive": naive_f,
        "harness": ours,
        "speedup": speedup,
        "first_step": check,
        "authors": authors,
        "projection": proj,
        "paper": PAPER,
        "one_model_at_a_time": True,
        **extra,
    }


def bench_train_reranker(
    build: Callable[[], torch.nn.Module],
    groups,
    device,
    *,
    steps: int = 3,
    warmup: int = 2,
    checkpoint: bool = True,
    compile: bool | None = None,
    tau: float = 1.0,
    fp8: bool = False,
    graphs: bool = True,
    log=print,
) -> dict:
    """groups: (prefix, candidates) per query, at least 2; one query a step, as in the paper.
    build: as for `bench_train_retriever`, called once a path. fp8: a third path over an FP8
    frozen base (see the module docstring). graphs: as for `bench_train_retriever`."""
    from types import SimpleNamespace

    from harness.neural.fast.lora_train import training_compile
    from harness.neural.fast.prefix_train import shared_prefix_score_groups

    shapes, compiled = [], []
    graphed = graphs and device.type == "cuda" and not checkpoint

    def setup(model):
        shapes.append(Shape.of(model))
        peft = with_lora(model)
        peft.train()
        torch.manual_seed(0)
        layer = torch.nn.Linear(model.config.hidden_size, 1, bias=False).to(device)
        take = _cycle(groups)
        return peft, layer, (lambda last: layer(last.float())), lambda: [take()]

    def naive(model):
        peft, layer, head, take = setup(model)
        base = peft.get_base_model()
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.config.use_cache = False
        loss = lambda gs: naive_reranker_loss(peft, head, gs, device, tau=tau)  # noqa: E731
        return PathSteps(
            peft,
            list(layer.parameters()),
            lambda: loss(groups[:1]),
            lambda: loss(take()),
            lambda params: torch.optim.Adam(params, lr=1e-4),
            keep_train=True,
        )

    def harness(model, fp8: bool = False):
        peft, layer, head, take = setup(model)
        if fp8:  # the hook quantizes the base at its first call, compiled or not as the bf16 path
            score_groups = shared_prefix_score_groups(checkpoint=checkpoint, compile=compile, fp8=True)
        else:
            compiled.append(training_compile(peft, compile, graphed))
            score_groups = shared_prefix_score_groups(checkpoint=checkpoint, compile=compiled[-1], graphs=graphed)
        scorer = SimpleNamespace(backbone=peft, finish=head)
        loss = lambda gs: harness_reranker_loss(score_groups, scorer, gs, device, tau=tau)  # noqa: E731
        return PathSteps(
            peft,
            list(layer.parameters()),
            lambda: loss(groups[:1]),
            lambda: loss(take()),
            lambda params: torch.optim.Adam(params, lr=1e-4, fused=device.type == "cuda"),
        )

    kept: dict = {}
    naive_t, fast_t, check = one_at_a_time(
        build, naive, harness, device, warmup=warmup, steps=steps, log=log, kept=kept
    )
    pairs = int(np.mean([len(c) for _, c in groups]))
    concat_seqs = [[(len(p) + len(c), 0) for c in cs] for p, cs in groups]
    shared_seqs = [[(len(p), 0)] + [(len(c), len(p)) for c in cs] for p, cs in groups]
    peak = dense_peak_tflops(device)
    concat_tokens = int(np.mean([sum(n for n, _ in s) for s in concat_seqs]))
    shared_tokens = int(np.mean([sum(n for n, _ in s) for s in shared_seqs]))

    def figures(seqs, recompute, tokens):
        return _figures_of(shapes, seqs, recompute, tokens, pairs, "pairs", peak)

    naive_f = _path_figures(
        naive_t,
        {"checkpointing": True, "batch": "concatenated pairs, padded", "attention": "sdpa + padding mask"},
        figures(concat_seqs, True, concat_tokens),
    )
    ours = _path_figures(
        fast_t,
        {
            "checkpointing": checkpoint,
            "batch": "shared prefix, packed",
            "compiled": bool(compiled and compiled[-1]),
            "graphs": graphed,
            "path": "fused + LoRA, varlen attention",
        },
        figures(shared_seqs, checkpoint, shared_tokens),
    )
    if graphed and "error" not in ours:  # its pools filled at capture: see bench_train_retriever
        ours["peak_memory_gib"] = fast_t.get("reserved_memory_gib") or ours["peak_memory_gib"]
    speedup = _speedup(naive_t, fast_t)
    _log_path(
        log,
        "naive",
        naive_f,
        lambda f: f"{f['pairs_per_s']:>7,.2f} pairs/s  {f['tflops']:>6.1f} TFLOP/s  peak {f['peak_memory_gib']} GiB",
    )
    _log_path(
        log,
        "harness",
        ours,
        lambda f: (
            f"{f['pairs_per_s']:>7,.2f} pairs/s  {f['tflops']:>6.1f} TFLOP/s (of the "
            f"shared-prefix work)  peak {f['peak_memory_gib']} GiB"
            + (f"  ({speedup:.2f}x naive)" if speedup else "")
            + f"; tokens {concat_tokens:,} -> {shared_tokens:,}"
        ),
    )
    paths = [("naive", naive_f), ("harness", ours)]
    extra = {}
    if fp8:
        extra["fp8"] = fp8_path(
            build,
            lambda model: harness(model, fp8=True),
            kept,
            {k: ours[k] for k in ("checkpointing", "batch", "compiled", "path") if k in ours},
            figures(shared_seqs, checkpoint, shared_tokens),
            fast_t,
            naive_t,
            device,
            warmup=warmup,
            steps=steps,
            log=log,
        )
        _log_path(
            log,
            "fp8",
            extra["fp8"],
            lambda f: (
                f"{f['pairs_per_s']:>7,.2f} pairs/s  peak {f['peak_memory_gib']} GiB  "
                f"({f['speedup_vs_bf16']}x bf16 harness)"
            ),
        )
        paths.append(("fp8", extra["fp8"]))
    proj = {path: projection("reranker", f["pairs_per_s"] / pairs) for path, f in paths if "error" not in f}
    _log_projection(log, "reranker", proj, f"{PAPER['reranker_hours_4xA6000']} h on 4 RTX A6000")
    return {
        **extra,
        "naive": naive_f,
        "harness": ours,
        "speedup": speedup,
        "first_step": check,
        "candidates": pairs,
        "token_ratio": round(concat_tokens / shared_tokens, 3),
        "projection": proj,
        "paper": PAPER,
        "one_model_at_a_time": True,
    }
