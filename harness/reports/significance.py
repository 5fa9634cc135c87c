"""Paired comparisons of runs from their result files: `aa-harness compare` and the per-collection pages.

Queries are pooled over the seeds both runs have and paired by (seed, queryID); the resampling
unit is (seed, query author), read from the committed split manifest (each query alone when the
manifest is missing). See harness.evaluation.significance for the tests themselves.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from harness.errors import HarnessError
from harness.evaluation.significance import (
    METRICS,
    PairedResult,
    authors_needed,
    compare_ranks,
    per_query_value,
)
from harness.evaluation.splits import manifest_path, read_manifest

ALPHA = 0.05
RESAMPLES = 10000


def first_ranks_by_key(results: list[dict]) -> dict[tuple[int, str], int | None]:
    return {(r["seed"], q): rank for r in results for q, rank in r["first_needle_rank"].items()}


def author_clusters(collection: str, seeds, splits_dir: Path | None) -> dict[tuple[int, str], tuple] | None:
    """(seed, queryID) -> (seed, first author), from the manifests; None when any is missing."""
    if splits_dir is None:
        return None
    out = {}
    for seed in sorted(set(seeds)):
        path = manifest_path(splits_dir, collection, seed)
        if not path.exists():
            return None
        for q in read_manifest(path).queries:
            out[(seed, q.documentID)] = (seed, sorted(q.authorIDs)[0])
    return out


def compare_results(a: list[dict], b: list[dict], splits_dir: Path | None, *, resamples: int = RESAMPLES,
                    seed: int = 0) -> dict[str, PairedResult]:
    ra, rb = first_ranks_by_key(a), first_ranks_by_key(b)
    collection = a[0]["collection"]
    shared = sorted({s for s, _ in ra} & {s for s, _ in rb})
    if not shared:
        raise HarnessError("the two runs share no seed")
    for s in shared:
        sa = next(r["split_sha256"] for r in a if r["seed"] == s)
        sb = next(r["split_sha256"] for r in b if r["seed"] == s)
        if sa != sb:
            raise HarnessError(f"seed {s}: the two runs were made on different splits ({sa[:12]} vs {sb[:12]})")
    clusters = author_clusters(collection, shared, splits_dir)
    if clusters is not None and not set(ra) & set(rb) <= set(clusters):
        clusters = None  # manifests do not match the runs: fall back to single queries
    return compare_ranks(ra, rb, clusters, resamples=resamples, seed=seed)


def needed_authors(a: list[dict], b: list[dict], splits_dir: Path | None, delta: float = 0.05) -> tuple[int, float, int]:
    """(query authors one seed needs to detect a `delta` Success@8 gap of this size of spread, sd, authors seen per seed)."""
    ra, rb = first_ranks_by_key(a), first_ranks_by_key(b)
    keys = sorted(set(ra) & set(rb))
    clusters = author_clusters(a[0]["collection"], {s for s, _ in keys}, splits_dir)
    cl = [clusters[k] if clusters else k for k in keys]
    diff = [per_query_value(ra[k], "success@8") - per_query_value(rb[k], "success@8") for k in keys]
    n, sd = authors_needed(diff, cl, delta=delta)
    per_seed = len(set(cl)) / max(1, len({s for s, _ in keys}))
    return n, sd, round(per_seed)


def format_comparison(name_a: str, name_b: str, res: Mapping[str, PairedResult]) -> str:
    from tabulate import tabulate

    rows = []
    for m in METRICS:
        r = res[m]
        rows.append([m, f"{100 * r.mean_a:.1f}", f"{100 * r.mean_b:.1f}", f"{100 * r.diff:+.1f}",
                     f"[{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}]", f"{r.p_value:.4f}",
                     "yes" if r.p_value < ALPHA else "no"])
    r0 = res[METRICS[0]]
    head = (f"{name_a} vs {name_b}: {r0.n_queries} paired queries in {r0.n_clusters} (seed, author) clusters; "
            f"paired randomization test ({'exact' if r0.exact else f'{r0.resamples} sign flips'}) and cluster "
            f"bootstrap 95% interval of the difference ({name_a} - {name_b}), in points")
    return head + "\n\n" + tabulate(rows, headers=["metric", name_a, name_b, "difference", "95% interval", "p",
                                                   f"p < {ALPHA}"], tablefmt="github", disable_numparse=True)
