"""Writes docs/claims.md: each significance claim the README made before its statistics were redone,
recomputed from the committed runs with `aa-harness compare`'s test (author clusters across all pooled
seeds). Run from the repository root: `python docs/gen_claims.py`; tests/test_claims.py checks that the
committed file is current.

A claim on a run listed as stale (made on data since corrected) is recomputed on the manifests it was
made on, and says so.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "leaderboards" / "runs"
REGISTRIES = ROOT / "leaderboards"  # stale.json, fixes.json, training/: read from here alone
OUT = ROOT / "docs" / "claims.md"

R15 = "sadiri-v2-qwen2.5-1.5b-cosine-b16-lr1e-4"
R05 = "sadiri-v2-qwen2.5-0.5b-cosine-b16-lr1e-4"


def rr(strategy: str) -> str:
    return f"{R15}+reranker-{strategy}-b4-all-authors"


# (what the README said, collection, run A, run B, the README's figure: A − B Success@8 points and p)
CLAIMS = [
    (
        "char n-grams beat BM25",
        "reddit-xsub",
        "char-ngram",
        "bm25",
        "+3.0 [+1.0, +5.3], p = 0.007",
    ),
    (
        "char n-grams beat BM25",
        "blogs-xtopic",
        "char-ngram",
        "bm25",
        "+2.2 [+1.1, +3.3], p < 0.001",
    ),
    (
        "char n-grams beat BM25",
        "pan18-en",
        "char-ngram",
        "bm25",
        "+29.1 [+21.4, +36.3], p < 0.001",
    ),
    (
        "char n-grams beat BM25",
        "pan19-en",
        "char-ngram",
        "bm25",
        "+0.7 [−10.6, +10.7], p = 0.94",
    ),
    (
        "cosine training beats the untrained 0.5B backbone",
        "reddit-xsub",
        R05,
        "qwen2.5-0.5b-untrained",
        "+7.6, p < 0.001",
    ),
    (
        "cosine training beats the untrained 0.5B backbone",
        "blogs-xtopic",
        R05,
        "qwen2.5-0.5b-untrained",
        "+6.2, p < 0.001",
    ),
    (
        "cosine training beats the untrained 0.5B backbone",
        "pan19-en",
        R05,
        "qwen2.5-0.5b-untrained",
        "+7.4, p = 0.16",
    ),
    ("trained ≫ char n-grams", "reddit-xsub", R15, "char-ngram", "+17.9, p < 0.001"),
    ("trained ≫ char n-grams", "blogs-xtopic", R15, "char-ngram", "+10.5, p < 0.001"),
    ("SADIRI beats BM25", "pan19-en", "sadiri-mpnet", "bm25", "+7.9, p = 0.04"),
    (
        "the 1.5B retriever over char n-grams",
        "pan19-en",
        R15,
        "char-ngram",
        "+8.8, p = 0.10",
    ),
    ("SADIRI-v2 1.5B ≥ SADIRI", "reddit-xsub", R15, "sadiri-mpnet", "+9.0, p < 0.001"),
    ("SADIRI-v2 1.5B ≥ SADIRI", "blogs-xtopic", R15, "sadiri-mpnet", "+1.0, n.s."),
    ("SADIRI-v2 1.5B ≥ SADIRI", "pan19-en", R15, "sadiri-mpnet", "+1.7, n.s."),
    ("SADIRI ≥ LUAR", "reddit-xsub", "sadiri-mpnet", "luar-mpnet", "−0.8, n.s."),
    ("SADIRI ≥ LUAR", "blogs-xtopic", "sadiri-mpnet", "luar-mpnet", "+4.2, p < 0.001"),
    ("SADIRI ≥ LUAR", "pan19-en", "sadiri-mpnet", "luar-mpnet", "+5.7, p = 0.03"),
    (
        "the 0.5B SADIRI-v2 retriever below SADIRI",
        "blogs-xtopic",
        R05,
        "sadiri-mpnet",
        "−3.1, p = 0.008",
    ),
    ("bigger backbone ≥ smaller (trained)", "reddit-xsub", R15, R05, "+7.5, p < 0.001"),
    (
        "bigger backbone ≥ smaller (trained)",
        "blogs-xtopic",
        R15,
        R05,
        "+4.1, p < 0.001",
    ),
    ("bigger backbone ≥ smaller (trained)", "pan19-en", R15, R05, "+7.6, p = 0.11"),
    (
        "all three pools beat the retriever",
        "reddit-xsub",
        rr("q+p+r"),
        R15,
        "+13.6, p < 0.001",
    ),
    (
        "all three pools beat the retriever",
        "blogs-xtopic",
        rr("q+p+r"),
        R15,
        "+7.0, p < 0.001",
    ),
    (
        "all three pools beat the retriever",
        "pan19-en",
        rr("q+p+r"),
        R15,
        "+12.6, p < 0.001",
    ),
    (
        "n(d_q) alone falls below the retriever",
        "reddit-xsub",
        rr("q"),
        R15,
        "−13.1, p < 0.001",
    ),
    (
        "n(d_q) alone falls below the retriever",
        "pan19-en",
        rr("q"),
        R15,
        "−22.4, p = 0.006",
    ),
    (
        "n(d_q) alone falls below the retriever",
        "blogs-xtopic",
        rr("q"),
        R15,
        "−0.3, p = 0.83",
    ),
    (
        "n(d_q) alone below all three pools",
        "blogs-xtopic",
        rr("q"),
        rr("q+p+r"),
        "−7.3, p < 0.001",
    ),
    (
        "n(d_q) + n(r) against all three pools",
        "reddit-xsub",
        rr("q+r"),
        rr("q+p+r"),
        "−0.2, p = 1.0",
    ),
    (
        "n(d_q+) + n(r) against all three pools",
        "reddit-xsub",
        rr("p+r"),
        rr("q+p+r"),
        "+0.6, p = 0.76",
    ),
    (
        "n(d_q) + n(r) against all three pools",
        "blogs-xtopic",
        rr("q+r"),
        rr("q+p+r"),
        "+1.2, p = 0.07",
    ),
    (
        "n(d_q+) + n(r) against all three pools",
        "blogs-xtopic",
        rr("p+r"),
        rr("q+p+r"),
        "−0.3, n.s.",
    ),
    (
        "n(d_q) + n(r) against all three pools",
        "pan19-en",
        rr("q+r"),
        rr("q+p+r"),
        "−2.4, n.s.",
    ),
    (
        "n(d_q+) + n(r) against all three pools",
        "pan19-en",
        rr("p+r"),
        rr("q+p+r"),
        "−1.2, n.s.",
    ),
    (
        "all three pools beat n(r) alone",
        "reddit-xsub",
        rr("q+p+r"),
        rr("r"),
        "+5.1, p ≤ 0.002",
    ),
    (
        "all three pools beat n(d_q+) alone",
        "reddit-xsub",
        rr("q+p+r"),
        rr("p"),
        "+6.2, p ≤ 0.002",
    ),
    (
        "all three pools beat n(d_q) + n(d_q+)",
        "reddit-xsub",
        rr("q+p+r"),
        rr("q+p"),
        "+5.5, p ≤ 0.002",
    ),
]


def record_dir() -> Path:
    return next(p for p in (ROOT / "harness" / "record" / "splits", ROOT / "splits") if p.is_dir())


def claims_table() -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tabulate import tabulate

    from harness.reports.board import load_runs
    from harness.reports.significance import compare_results
    from harness.reports.stale import load_stale

    record = record_dir()
    runs = load_runs(RUNS, record, record=REGISTRIES)
    stale_runs = load_runs(RUNS, record, stale=True, record=REGISTRIES)
    entries = load_stale(REGISTRIES)
    rows = []
    for claim, collection, a, b, said in CLAIMS:
        ka, kb = (collection, a), (collection, b)
        sa, sb = ka in entries, kb in entries
        if sa != sb:  # one run stale, the other rerun: they no longer share a split
            rows.append(
                [
                    claim,
                    collection,
                    f"`{a}` − `{b}`",
                    said,
                    "not comparable: one run is stale",
                    "",
                ]
            )
            continue
        pool = stale_runs if sa else runs
        if ka not in pool or kb not in pool:
            rows.append([claim, collection, f"`{a}` − `{b}`", said, "not run", ""])
            continue
        ra, rb = pool[ka], pool[kb]
        manifests = record
        if sa:  # compare on the manifests the stale runs were made on, laid out under the collection's name
            manifests = Path(tempfile.mkdtemp())
            shutil.copytree(record / entries[ka].manifests, manifests / collection)
        r = compare_results(ra, rb, manifests)["success@8"]
        verdict = "p < 0.05" if r.p_value < 0.05 else "n.s."
        note = f"{verdict}" + (f"; stale ({entries[ka].reason})" if sa else "")
        rows.append(
            [
                claim,
                collection,
                f"`{a}` − `{b}`",
                said,
                (
                    f"{100 * r.diff:+.1f} [{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}], p = {r.p_value:.3g}, "
                    f"{r.n_queries} queries in {r.n_clusters} author clusters"
                ),
                note,
            ]
        )
    return tabulate(
        rows,
        headers=[
            "claim",
            "collection",
            "A − B",
            "the README said",
            "recomputed (Success@8 points)",
            "now",
        ],
        tablefmt="github",
        disable_numparse=True,
    )


def render() -> str:
    return (
        "<!-- generated by docs/gen_claims.py from leaderboards/runs; do not edit -->\n"
        "# Significance claims, recomputed\n\n"
        "Each significance claim the README made when its tests resampled (seed, query author) units, "
        "recomputed from the committed runs with the paired cluster randomization test (sign flips of the "
        "clusters' summed differences) and the cluster bootstrap 95% interval, one cluster per query author "
        'across all pooled seeds ([Metrics and statistics](metrics.md)); "now" reads the test\'s p. '
        "pan19-en now reads the corpus file's second release: its rerun rows (bm25, char-ngram) are compared on "
        "the new manifests, and claims on its stale rows on the manifests they were made on.\n\n"
        f"{claims_table()}\n"
    )


if __name__ == "__main__":
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
