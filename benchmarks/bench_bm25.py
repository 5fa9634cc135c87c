"""BM25 on an HRS1-sized split: the harness's vectorized BM25 against rank-bm25, same run.

HRS1 has about 34,000 candidates of ~600 words and 120 queries per seed. The text is
synthetic (Zipf-distributed word ids from a fixed seed), so only the sizes are realistic.
rank-bm25 scores one query by looping in Python over every document for every query token,
so it is timed on --reference-queries queries and extrapolated to all of them (printed as such).

    python -m benchmarks.bench_bm25 [--candidates 34000] [--queries 120] [--words 600]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def synthetic_docs(n: int, words: int, vocab: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(words // 2, words * 3 // 2, size=n)
    ids = np.minimum(rng.zipf(1.1, size=int(lengths.sum())), vocab)
    names = np.array([f"w{i}" for i in range(vocab + 1)], dtype=object)
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(names[ids[start : start + length]]))
        start += length
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=34_000)
    ap.add_argument("--queries", type=int, default=120)
    ap.add_argument("--words", type=int, default=600)
    ap.add_argument("--vocab", type=int, default=200_000)
    ap.add_argument("--reference-queries", type=int, default=5, help="queries timed with rank-bm25 (0: skip it)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    from harness.data.documents import Document
    from harness.foundation.provenance import device_name
    from plugins.bm25.config import BM25Config
    from plugins.bm25.system import BM25System
    from plugins.bm25.tokenize import tokenize

    t = time.perf_counter()
    cands = [
        Document(f"c{i:05d}", ("x",), s, "g")
        for i, s in enumerate(synthetic_docs(args.candidates, args.words, args.vocab, 0))
    ]
    queries = [
        Document(f"q{i:03d}", ("y",), s, "h")
        for i, s in enumerate(synthetic_docs(args.queries, args.words, args.vocab, 1))
    ]
    print(
        f"generated {len(cands)} candidates and {len(queries)} queries of ~{args.words} words in {time.perf_counter() - t:.1f}s"
    )

    t = time.perf_counter()
    BM25System(BM25Config()).rank(queries, cands, 100)
    ours_s = time.perf_counter() - t
    print(
        f"harness bm25 (vectorized): tokenize + index + score + top-100 for all {len(queries)} queries: {ours_s:.1f}s"
    )
    figures = {
        "benchmark": "bm25-scale",  # the performance page's section for these figures
        "device": device_name(),
        "candidates": len(cands),
        "queries": len(queries),
        "words": args.words,
        "harness_seconds": round(ours_s, 2),
    }

    if args.reference_queries:
        import rank_bm25

        from plugins.bm25.index import BM25Index

        t = time.perf_counter()
        corpus = [tokenize(d.fullText) for d in cands]
        ref = rank_bm25.BM25Okapi(corpus, k1=0.25, b=0.75)
        build = time.perf_counter() - t
        sample = queries[: args.reference_queries]
        t = time.perf_counter()
        ref_scores = [ref.get_scores(tokenize(q.fullText)) for q in sample]
        per_query = (time.perf_counter() - t) / len(sample)
        ref_total = build + per_query * len(queries)
        mine = BM25Index(corpus, 0.25, 0.75).scores([tokenize(q.fullText) for q in sample])
        max_diff = float(np.max(np.abs(mine - np.array(ref_scores))))
        print(
            f"rank-bm25: index {build:.1f}s, {per_query:.2f}s per query (timed on {len(sample)}); "
            f"all {len(queries)} queries extrapolated: {ref_total:.0f}s"
        )
        print(f"speed-up {ref_total / ours_s:.0f}x; max |score difference| on the timed queries: {max_diff:.2e}")
        figures.update(
            rank_bm25_index_seconds=round(build, 2),
            rank_bm25_seconds_per_query=round(per_query, 3),
            rank_bm25_extrapolated_seconds=round(ref_total, 1),
            rank_bm25_timed_queries=len(sample),
            max_abs_score_difference=max_diff,
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
