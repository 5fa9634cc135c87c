"""Paired comparisons of runs from their result files: `aa-harness compare` and the per-collection pages.

Queries are pooled over the seeds both runs have and paired by (seed, queryID). The resampling
unit is the query author across all pooled seeds (authors of one co-authored query joined),
read from the split manifests; see harness.evaluation.author_clusters for why, and
harness.evaluation.significance for the tests themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.evaluation.author_clusters import author_clusters, needle_ties
from harness.evaluation.author_macro import author_macro
from harness.evaluation.manifests import find_manifest, read_manifest
from harness.evaluation.sign_flip import DRAWS, EXACT_MAX, MAX_DRAWS, NEAR, TARGET_SE
from harness.evaluation.significance import (
    ALPHA,
    INTERVAL_NAME,
    TEST_NAME,
    PairedResult,
    authors_needed,
    compare_ranks,
    per_query_value,
)

RESAMPLES = DRAWS
HOW_P = (
    f"exact (all 2^k sign assignments) when at most {EXACT_MAX} author clusters have a non-zero summed "
    f"difference, else {DRAWS:,} random assignments, doubled while p is within {NEAR} of {ALPHA} and its "
    f"Monte Carlo standard error is above {TARGET_SE} (at most {MAX_DRAWS:,}); a sampled p is shown "
    "± its Monte Carlo SE"
)
UNIT = "a query author across all pooled seeds is one cluster"


def first_ranks_by_key(results: list[dict]) -> dict[tuple[int, str], int | None]:
    return {(r["seed"], q): rank for r in results for q, rank in r["first_needle_rank"].items()}


def pooled_success_at_8(results: list[dict], keys) -> tuple[float, int]:
    """Pooled Success@8 over the given (seed, query) keys the results scored; (value, n), NaN for none."""
    ranks = first_ranks_by_key(results)
    vals = [per_query_value(ranks[k], "success@8") for k in keys if k in ranks]
    return (sum(vals) / len(vals) if vals else math.nan), len(vals)


def query_author_clusters(
    collection: str, seeds, splits_dir: Path | Sequence[Path] | None
) -> dict[tuple[int, str], str]:
    """(seed, queryID) -> its author cluster over all the given seeds, from the manifests in
    `splits_dir` (a folder, or folders looked in in order): authors are joined through co-authored
    queries and through needles that queries of different authors share, in any of the seeds."""
    if splits_dir is None:
        raise HarnessError(f"{collection}: no manifests folder given; the author clusters come from the manifests")
    places = [Path(splits_dir)] if isinstance(splits_dir, (str, Path)) else [Path(p) for p in splits_dir]
    authors: dict[tuple[int, str], tuple[str, ...]] = {}
    ties: list[tuple[str, ...]] = []
    for seed in sorted(set(seeds)):
        read = _manifest_authors(find_manifest(places, collection, seed))
        for qid, who in read.queries:
            authors[(seed, qid)] = who
        ties += read.ties
    return author_clusters(authors, ties)


@dataclass(frozen=True)
class _Authors:
    queries: tuple[tuple[str, tuple[str, ...]], ...]  # (queryID, its sorted authors)
    ties: tuple[tuple[str, ...], ...]  # harness.evaluation.author_clusters.needle_ties


_AUTHORS_READ: dict[tuple[str, int, int], _Authors] = {}


def _manifest_authors(path: Path) -> _Authors:
    """A manifest's query authors and needle ties, read once per file version (path, mtime, size):
    a page compares many pairs of runs on the same manifests."""
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _AUTHORS_READ:
        split = read_manifest(path)
        queries = tuple((q.documentID, tuple(sorted(q.authorIDs))) for q in split.queries)
        _AUTHORS_READ[key] = _Authors(queries, tuple(needle_ties(split.needles, dict(queries))))
    return _AUTHORS_READ[key]


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
        raise HarnessError(
            f"{a[0]['collection']}: {len(missing)} scored queries are not in the manifests "
            f"(e.g. seed {min(missing)[0]} {min(missing)[1]}); the runs do not match them"
        )
    return ra, rb, clusters


def compare_results(
    a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None, *, resamples: int = RESAMPLES, seed: int = 0
) -> dict[str, PairedResult]:
    ra, rb, clusters = _paired_keys(a, b, splits_dir)
    return compare_ranks(ra, rb, clusters, resamples=resamples, seed=seed)


def needed_authors(
    a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None, delta: float = 0.05
) -> tuple[int, float, int]:
    """(independent query authors needed to detect a `delta` Success@8 gap with this spread, the per-author sd,
    the distinct query authors these runs have)."""
    ra, rb, clusters = _paired_keys(a, b, splits_dir)
    keys = sorted(set(ra) & set(rb))
    cl = [clusters[k] for k in keys]
    diff = [per_query_value(ra[k], "success@8") - per_query_value(rb[k], "success@8") for k in keys]
    n, sd = authors_needed(diff, cl, delta=delta)
    return n, sd, len(set(cl))


def p_text(r: PairedResult, *, sep: str = " ") -> str:
    """The p as printed everywhere: exact, or sampled with its Monte Carlo SE."""
    if r.exact:
        return f"p{sep}<{sep}0.0001 (exact)" if r.p_value < 0.0001 else f"p{sep}={sep}{r.p_value:.4f} (exact)"
    return f"p{sep}={sep}{r.p_value:.4f} ± {r.p_se:.4f}"


def paired_author_macro(
    a: list[dict], b: list[dict], splits_dir: Path | Sequence[Path] | None, metric: str = "success@8"
) -> tuple[float, float, int]:
    """(author-macro `metric` of a, of b, author clusters) over the queries both runs scored."""
    ra, rb, clusters = _paired_keys(a, b, splits_dir)
    keys = sorted(set(ra) & set(rb))
    cl = {k: clusters[k] for k in keys}
    return (
        author_macro({k: per_query_value(ra[k], metric) for k in keys}, cl),
        author_macro({k: per_query_value(rb[k], metric) for k in keys}, cl),
        len(set(cl.values())),
    )


def run_author_macro(results: list[dict], splits_dir: Path | Sequence[Path] | None, metric: str = "success@8") -> float:
    """A run's author-macro `metric` over all its seeds: each query author's mean (one author across
    the seeds, co-authors joined), then the mean over authors."""
    ranks = first_ranks_by_key(results)
    clusters = query_author_clusters(results[0]["collection"], {s for s, _ in ranks}, splits_dir)
    missing = set(ranks) - set(clusters)
    if missing:
        raise HarnessError(
            f"{results[0]['collection']}: {len(missing)} scored queries are not in the manifests "
            f"(e.g. seed {min(missing)[0]} {min(missing)[1]}); the run does not match them"
        )
    return author_macro({k: per_query_value(r, metric) for k, r in ranks.items()}, clusters)


def describe_unit(r: PairedResult) -> str:
    return f"{r.n_queries} paired queries in {r.n_clusters} author clusters ({UNIT})"


def format_comparison(name_a: str, name_b: str, res: Mapping[str, PairedResult]) -> str:
    from tabulate import tabulate

    rows = []
    for m, r in res.items():  # the metrics compared, in the table's order
        rows.append(
            [
                m,
                f"{100 * r.mean_a:.1f}",
                f"{100 * r.mean_b:.1f}",
                f"{100 * r.diff:+.1f}",
                f"[{100 * r.ci95[0]:+.1f}, {100 * r.ci95[1]:+.1f}]",
                f"{r.p_value:.4f}" + ("" if r.exact else f" ± {r.p_se:.4f}"),
                "exact" if r.exact else f"{r.resamples:,} random",
                "yes" if r.p_value < ALPHA else "no",
            ]
        )
    r0 = next(iter(res.values()))
    head = (
        f"{name_a} vs {name_b}: {describe_unit(r0)}.\n"
        f"p: {TEST_NAME}; {HOW_P}.\ninterval: {INTERVAL_NAME}, of the difference ({name_a} - {name_b}), "
        "in points"
    )
    return (
        head
        + "\n\n"
        + tabulate(
            rows,
            headers=[
                "metric",
                name_a,
                name_b,
                "difference",
                "95% interval",
                "p ± Monte Carlo SE",
                "sign assignments",
                f"p < {ALPHA}",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
