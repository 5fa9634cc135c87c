"""Where a bench workload spends its device time: the harness's encoding pass or its retriever
training step at the bench's shapes (random weights, token ids uniform, lengths 150-512), timed
unprofiled first, then one window under torch.profiler.

    python -m benchmarks.profile_bench encode --arch qwen3-0.6b
    python -m benchmarks.profile_bench train --arch qwen3-8b --checkpoint on

Prints and writes (benchmarks/results/bench-profile-<workload>-<arch>-<card>.json, or --out): the
wall seconds and work rate unprofiled; in the window, the device's busy seconds against the wall
(the rest it waits for the host), the host's kernel launches, the busy seconds per kernel family
(matrix products, attention, elementwise and norms, copies and gathers, optimizer, other) and the
top kernels; on a GPU, the allocator's peak. The training step is the one `aa-harness bench
train retriever` times (the fused decoder with LoRA inside, packed, 16 authors x 2 documents,
Adam), compiled and checkpointed as training decides unless told; its TFLOP/s count the work as
run (`train_flops`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from benchmarks.profiler_rows import profile_figures


def _window(run, cuda: bool) -> tuple[object, float]:
    """(the profiler's events, wall seconds) of one call of `run`."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        run()
        if cuda:
            torch.cuda.synchronize()
        wall = time.perf_counter() - start
    return prof.key_averages(), wall


def _timed(run, device) -> float:
    from aa_harness_bench.timing import timed

    return timed(run, device)[1]


def _share(tflops: float, device) -> dict:
    from harness.foundation.hardware import share_of_dense_peak

    share = share_of_dense_peak(tflops, torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    return {"share_of_peak": round(share, 3)} if share else {}


def profile_encode(model, device, *, docs: int, max_tokens: int, path: str, seed: int):
    """The encoding pass over `docs` rows: (unprofiled figures, settings, the pass)."""
    from aa_harness_bench.encode import harness_encoder
    from aa_harness_bench.workload import Shape, random_rows
    from harness.neural.encoder import embed_features

    enc = harness_encoder(model, path)
    rows = random_rows(docs, 150, 512, model.config.vocab_size, seed)
    by_length = sorted(rows, key=len)
    warm = [by_length[int(i)] for i in np.linspace(0, len(rows) - 1, min(64, len(rows)))]
    embed_features(enc, warm, device, max_tokens=max_tokens, amp=False)  # compile over the length range

    def run():
        embed_features(enc, rows, device, max_tokens=max_tokens, amp=False)

    seconds = _timed(run, device)
    tokens = sum(len(r) for r in rows)
    tflops = Shape.of(model).rows_flops(rows) / seconds / 1e12
    figures = {
        "seconds": round(seconds, 4),
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "tflops": round(tflops, 2),
        **_share(tflops, device),
    }
    return figures, {"path": enc.path, "documents": docs, "max_tokens": max_tokens}, run


def profile_train(model, device, *, authors: int, checkpoint: bool, compile: bool | None, seed: int):
    """The retriever's training step at the bench's batch: (unprofiled figures, settings, one step)."""
    from aa_harness_bench.reference import with_lora
    from aa_harness_bench.train import train_flops
    from aa_harness_bench.workload import Shape, random_rows
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss, training_compile

    peft = with_lora(model)
    peft.train()
    hidden = model.config.hidden_size
    proj = torch.nn.Linear(hidden, hidden // 2).to(device)
    compiled = training_compile(peft, compile, False) if compile is None else compile
    decoder = LoraFusedDecoder(peft, compile=compiled, checkpoint=checkpoint)
    params = [q for q in peft.parameters() if q.requires_grad] + list(proj.parameters())
    opt = torch.optim.Adam(params, lr=1e-5, fused=device.type == "cuda")
    batches = [random_rows(2 * authors, 150, 512, model.config.vocab_size, seed + i) for i in range(8)]
    state = {"i": 0}

    def run():
        rows = batches[state["i"] % len(batches)]
        state["i"] += 1
        loss = retriever_loss(decoder, lambda x: proj(x.float()), rows[:authors], rows[authors:], device, tau=0.01)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):  # compile, warm up
        run()
    seconds = float(np.median([_timed(run, device) for _ in range(3)]))
    rows = batches[state["i"] % len(batches)]
    flops = train_flops(Shape.of(model), [(len(r), 0) for r in rows], recompute=checkpoint)
    tokens = sum(len(r) for r in rows)
    tflops = flops["work"] / seconds / 1e12
    figures = {
        "seconds_per_step": round(seconds, 4),
        "tokens_per_step": tokens,
        "tokens_per_s": round(tokens / seconds, 1),
        "tflops": round(tflops, 2),
        **_share(tflops, device),
    }
    return figures, {"authors": authors, "checkpointing": checkpoint, "compiled": bool(compiled)}, run


def main(argv=None) -> int:
    from aa_harness_bench.archs import build_model, parameter_count
    from aa_harness_bench.results import write_result
    from aa_harness_bench.timing import device_facts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=["encode", "train"])
    ap.add_argument("--arch", default="qwen3-0.6b", help="an architecture of `aa-harness bench` (random weights)")
    ap.add_argument("--docs", type=int, default=1024, help="encode: documents in the pass (default 1024)")
    ap.add_argument("--max-tokens", type=int, default=65536, help="encode: tokens a batch (default 65536)")
    ap.add_argument("--path", default="packed", help="encode: the fast path to prefer (default packed)")
    ap.add_argument("--authors", type=int, default=16, help="train: authors a batch, 2 documents each (default 16)")
    ap.add_argument(
        "--checkpoint", choices=["auto", "on", "off"], default="auto", help="train: recompute layers (auto: above 2B)"
    )
    ap.add_argument("--no-compile", action="store_true", help="train: uncompiled layers (default: as training decides)")
    ap.add_argument("--top", type=int, default=20, help="kernels listed (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="the result file (default benchmarks/results/bench-profile-...)")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = build_model(args.arch, device, dtype)
    if args.workload == "encode":
        figures, settings, run = profile_encode(
            model, device, docs=args.docs, max_tokens=args.max_tokens, path=args.path, seed=args.seed
        )
    else:
        checkpoint = parameter_count(args.arch) > 2e9 if args.checkpoint == "auto" else args.checkpoint == "on"
        figures, settings, run = profile_train(
            model,
            device,
            authors=args.authors,
            checkpoint=checkpoint,
            compile=False if args.no_compile else None,
            seed=args.seed,
        )
    events, wall = _window(run, device.type == "cuda")
    window = profile_figures(events, wall, device.type == "cuda", args.top)
    if device.type == "cuda":  # what the allocator held at its peak, warm-up and compilation included
        figures["peak_memory_gib"] = round(torch.cuda.max_memory_reserved(device) / 2**30, 2)
    name = f"{args.workload}-{args.arch}"
    out = write_result(
        "bench-profile",
        name,
        device_facts(device),
        {**vars(args), **settings},
        {"unprofiled": figures, "window": window},
        out=args.out,
    )
    busy = window["device_busy_share"]
    print(
        f"{name} ({settings}): {figures} unprofiled; window {window['wall_seconds']} s, device busy "
        f"{'—' if busy is None else f'{100 * busy:.0f}%'}, {window['launches']} launches"
    )
    for family, seconds in window["seconds_by_class"].items():
        print(f"  {seconds:>9.4f} s  {family}")
    for k in window["kernels"]:
        print(f"  {k['seconds']:>9.4f} s  {k['calls']:>6}  {k['class']:<22} {k['name']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
