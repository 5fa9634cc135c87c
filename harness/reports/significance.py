"""Paired comparisons of runs from their result files: `aa-harness compare` and the per-collection pages.

Queries are pooled over the seeds both runs have and paired by (seed, queryID). The resampling
unit is the query author across all pooled seeds (authors of one co-authored query joined),
read from the split manifests; see harness.evaluation.author_clusters for why, and
harness.evaluation.significance for the tests themselves.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.errors import HarnessError
from harness.evaluation.author_clusters import author_clusters
from harness.evaluation.significance import (
    INTERVAL_NAME,
    METRICS,
    TEST_NAME,
    PairedResult,
    authors_needed,
    compare_ranks,
    per_query_value,
)
from harness.evaluation.splits import find_manifest, read_manifest

ALPHA = 0.05
RESAMPLES = 10000
UNIT = "a query author across all pooled seeds is one cluster"


def first_ranks_by_key(results: list[dict]) -> dict[tuple[int, str], int | None]:
    return {(r["seed"], q): rank for r in results for q, rank in r["first_needle_rank"].items()}


def query_author_clusters(collection: str, seeds, splits_dir: Path | Sequence[Path] | None) -> dict[tuple[int, str], str]:
    """(seed, queryID) -> its author cluster over all the given seeds, from the manifests in
    `splits_dir` (a folder, or folders looked in in order)."""
    if splits_dir is None:
        raise HarnessError(f"{collection}: no manifests folder given; the author clusters come from the manifests")
    places = [Path(splits_dir)] if isinstance(splits_dir, (str, Path)) else [Path(p) for p in splits_dir]
    authors: dict[tuple[int, str], tuple[str, ...]] = {}
    for seed in sorted(set(seeds)):
        for q in read_manifest(find_manifest(places, collection, seed)).queries:
            authors[(seed, q.documentID)] = tuple(sorted(q.authorIDs))
    return author_clusters(authors)


def _check_same_splits(a: list[dict], b: list[dict], shared) -> None:
    for s in shared:
        sa = next(r["split_sha256"] for r in a if r["seed"] == s)
        sb = next(r["split_sha256"] for r in b if r["seed"] == s)
        if sa != sb:
            raise HarnessError(f"seed {s}: the two runs were made on different splits ({sa[:12]} vs {sb[:12]})")


def _paired_keys(a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None):
    ra, rb = first_ranks_by_key(a), first_ranks_by_key(b)
    shared = sorted({s for s, _ in ra} & {s for s, _ in rb})
    if not shared:
        raise HarnessError("the two runs share no seed")
    _check_same_splits(a, b, shared)
    clusters = query_author_clusters(a[0]["collection"], shared, splits_dir)
    missing = (set(ra) & set(rb)) - set(clusters)
    if missing:
        raise HarnessError(f"{a[0]['collection']}: {len(missing)} scored queries are not in the manifests "
                           f"(e.g. seed {min(missing)[0]} {min(missing)[1]}); the runs do not match them")
    return ra, rb, clusters


def compare_results(a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None, *, resamples: int = RESAMPLES,
                    seed: int = 0) -> dict[str, PairedResult]:
    ra, rb, clusters = _paired_keys(a, b, splits_dir)
    return compare_ranks(ra, rb, clusters, resamples=resamples, seed=seed)


def needed_authors(a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None, delta: float = 0.05) -> tuple[int, float, int]:
    """(independent query authors needed to detect a `delta` Success@8 gap with this spread, the per-author sd,
    the distinct query authors these runs have)."""
    ra, rb, clusters = _paired_keys(a, b, splits_dir)
    keys = sorted(set(ra) & set(rb))
    cl = [clusters[k] for k in keys]
    diff = [per_query_value(ra[k], "success@8") - per_query_value(rb[k], "success@8") for k in keys]
    n, sd = authors_needed(diff, cl, delta=delta)
    return n, sd, len(set(cl))


def describe_unit(r: PairedResult) -> str:
    return f"{r.n_queries} paired queries in {r.n_clusters} author clusters ({UNIT})"


def format_comparison(name_a: str, name_b: str, res: Mapping[str, PairedResult]) -> str:
    from tabulate import tabulate

    rows = []
    for m in METRICS:
        r = res[m]
        rows.append([m, f"{100 * r.mean_a:.1f}", f"{100 * r.mean_b:.1f}", f"{100 * r.diff:+.1f}",
                     f"[{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}]", f"{r.p_value:.4f}",
                     "yes" if r.p_value < ALPHA else "no"])
    r0 = res[METRICS[0]]
    how = "exact, all sign assignments" if r0.exact else f"{r0.resamples} random sign assignments"
    head = (f"{name_a} vs {name_b}: {describe_unit(r0)}.\n"
            f"p: {TEST_NAME}, {how}; interval: {INTERVAL_NAME}, of the difference ({name_a} - {name_b}), in points")
    return head + "\n\n" + tabulate(rows, headers=["metric", name_a, name_b, "difference", "95% interval", "p",
                                                   f"p < {ALPHA}"], tablefmt="github", disable_numparse=True)
