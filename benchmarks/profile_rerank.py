"""Where reranking spends its time, on real texts and a real first stage: the queries of a saved
first-stage ranking rescored by a reranker as `aa-harness rerank` builds it, timed whole and under
torch.profiler.

    python -m benchmarks.profile_rerank --collection blogs-xtopic-all \\
        --first-stage leaderboards/runs/blogs-xtopic-all/<run>/seed-0.json \\
        --set model=<reranker folder> --queries 200

Prints, for the same queries: the pairs and tokens scored and their rate; the host's tokenizing
alone (the texts cold); the device's busy time against the wall time (the rest is time the device
waits for the host); the kernels by device time; and, on a GPU, the host's ops by their own CPU
time. On a CPU the "device" is the CPU's own ops,
so only the shape of the figures means anything there.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.profiler_rows import busy_seconds, device_rows, host_rows


def _workload(collection: str, first_stage: Path, queries: int, depth: int, data_dir: str | None):
    """(queries, candidate lists) as `aa-harness rerank` hands them to a reranker: the first stage's
    first `queries` ranked queries and each one's top `depth`."""
    from harness.plugins import load_registry
    from harness.runs.job import open_collection
    from harness.runs.results import read_rankings

    docs = open_collection(load_registry(), collection, data_dir=data_dir).documents
    ranked = list(read_rankings(first_stage).items())[:queries]
    return [docs[q] for q, _ in ranked], [[docs[c] for c, _ in ranking[:depth]] for _, ranking in ranked]


def _reranker(system: str, overrides: dict):
    from harness.plugins import load_registry
    from harness.runs.job import system_config
    from harness.specs import load_object

    spec = load_registry().system(system)
    return load_object(spec.factory)(system_config(spec, overrides).config)


def profile(system, queries, cand_lists, *, top: int = 15) -> dict:
    """Figures of one rerank over the lists (after a warm-up on the first query), then the same
    rerank again under torch.profiler (on a fresh score memo, so every pair is scored both times)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from plugins.sadiri_v2.pair_memo import ScoreMemo, TokenMemo

    model = system.model
    texts = [q.fullText for q in queries] + [c.fullText for cs in cand_lists for c in cs]
    cold = TokenMemo(model.token_ids._tokenize)
    start = time.perf_counter()
    cold([q.fullText for q in queries], model.config.max_query_tokens)
    cold([c.fullText for cs in cand_lists for c in cs], model.config.max_candidate_tokens)
    tokenize_s = time.perf_counter() - start

    cuda = system.device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    system.rerank(queries[:1], cand_lists[:1])  # compile, warm up
    system.memo = ScoreMemo()
    sync()
    start = time.perf_counter()
    system.rerank(queries, cand_lists)
    sync()
    wall = time.perf_counter() - start

    system.memo = ScoreMemo()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch_profile(activities=activities) as prof:
        system.rerank(queries, cand_lists)
        sync()
    events = prof.key_averages()
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    busy = busy_seconds(events, cuda)
    kernels = device_rows(events, cuda)
    host = host_rows(events) if cuda else []
    pairs = sum(len(c) for c in cand_lists)
    tokens = 0
    for q, cs in zip(queries, cand_lists):
        prefix, parts = model.pair_parts(q.fullText, [c.fullText for c in cs])
        tokens += len(prefix) + sum(len(p) for p in parts)
    return {
        "queries": len(queries),
        "pairs": pairs,
        "tokens": tokens,
        "distinct_texts": len(set(texts)),
        "wall_seconds": round(wall, 3),
        "pairs_per_s": round(pairs / wall, 1),
        "tokens_per_s": round(tokens / wall, 1),
        "tokenize_cold_seconds": round(tokenize_s, 3),
        "device_busy_seconds": round(busy, 3),
        "device_busy_share": round(busy / wall, 3) if cuda else None,
        "device": str(torch.cuda.get_device_name(system.device)) if cuda else "cpu",
        "top": [
            {"name": e.key[:90], "seconds": round(getattr(e, attr) / 1e6, 4), "calls": e.count} for e in kernels[:top]
        ],
        "host_ops": [
            {"name": e.key[:90], "seconds": round(e.self_cpu_time_total / 1e6, 4), "calls": e.count} for e in host[:top]
        ],
    }


def _print(fig: dict) -> None:
    print(
        f"{fig['queries']} queries, {fig['pairs']:,} pairs, {fig['tokens']:,} tokens ({fig['distinct_texts']:,} "
        f"distinct texts) on {fig['device']}: {fig['wall_seconds']} s, {fig['pairs_per_s']:,} pairs/s, "
        f"{fig['tokens_per_s']:,.0f} tokens/s"
    )
    print(f"tokenizing every text cold: {fig['tokenize_cold_seconds']} s")
    if fig["device_busy_share"] is not None:
        print(
            f"device busy {fig['device_busy_seconds']} s of {fig['wall_seconds']} s "
            f"({100 * fig['device_busy_share']:.0f}%; the rest the device waits for the host)"
        )
    for title, rows in (("kernels by device time", fig["top"]), ("host ops by their own CPU time", fig["host_ops"])):
        if rows:
            print(f"{title}:")
        for k in rows:
            print(f"  {k['seconds']:>9.4f} s  {k['calls']:>6}  {k['name']}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--collection", required=True)
    p.add_argument("--first-stage", required=True, type=Path, help="a first-stage result file (seed-S.json)")
    p.add_argument("--system", default="sadiri-v2-reranker")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="the reranker's settings")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--depth", type=int, default=100)
    p.add_argument("--data-dir")
    p.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = p.parse_args(argv)
    from harness.config import parse_set_args

    queries, cand_lists = _workload(args.collection, args.first_stage, args.queries, args.depth, args.data_dir)
    fig = profile(_reranker(args.system, parse_set_args(args.set)), queries, cand_lists)
    _print(fig)
    if args.out:
        import datetime as dt

        from harness.foundation.provenance import git_commit

        made = {"benchmark": "rerank-profile", "git_commit": git_commit()}
        made["finished_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        record = {**made, "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, **fig}
        args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
