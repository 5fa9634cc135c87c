"""Paired significance of the difference between two systems on the same queries.

Per query, a metric value for each system (Success@8: 1 if the first needle is in the top 8;
MRR@20: 1/rank of the first needle, 0 below 20), as the metric's row in
harness.evaluation.metric_table gives it; the rows flagged `tested` are the ones compared.
Queries are pooled over the split seeds and paired by (seed, queryID). Queries by one author
share needles and style, so they are not independent: the resampling unit is a *cluster* (by
default every query on its own; the CLI and the leaderboard use the query author across all
pooled seeds, harness.evaluation.author_clusters).

- p: the paired cluster randomization test (sign flips of the clusters' summed differences),
  exact for few clusters, else sampled with its Monte Carlo standard error
  (harness.evaluation.sign_flip).
- 95% interval: the shifts d that the same test of (difference - d) does not reject at 0.05 (the
  test inverted), so the interval excludes 0 exactly when p < 0.05.
- `authors_needed`: how many independent clusters (query authors) a test needs to detect a
  gap of `delta` at level alpha with the given power, from the per-cluster sd of the
  differences (normal approximation: n = ((z_{1-alpha/2} + z_power) * sd / delta)^2).

Pure numpy: ids and ranks in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np

from harness.evaluation import metric_table
from harness.evaluation.sign_flip import (
    DRAWS,
    EXACT_MAX,
    cluster_sums,
    interval_assignments,
    inverted_interval,
    sign_flip_test,
)

ALPHA = 0.05
TEST_NAME = "paired cluster randomization test (sign flips of the clusters' summed differences)"
INTERVAL_NAME = "95% interval from inverting that test (the shifts it does not reject at 0.05)"


def per_query_value(rank: int | None, metric: str) -> float:
    """`metric`'s value for one query whose first needle is at `rank` (a ValueError for a name not in the table)."""
    return metric_table.by_name(metric).value(rank)


def tested_metrics() -> tuple[str, ...]:
    """The names of the metrics compared for significance, in table order."""
    return tuple(m.name for m in metric_table.tested())


@dataclass(frozen=True)
class PairedResult:
    metric: str
    n_queries: int
    n_clusters: int
    mean_a: float
    mean_b: float
    diff: float  # mean_a - mean_b
    ci95: tuple[float, float]
    p_value: float
    exact: bool
    resamples: int  # random sign assignments drawn for p; 0 when exact
    p_se: float = 0.0  # Monte Carlo standard error of p; 0 when exact
    ci_exact: bool = True  # the interval read from all sign assignments

    def as_dict(self) -> dict:
        return asdict(self)


def randomization_p(
    diff: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    resamples: int = DRAWS,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
) -> tuple[float, bool]:
    """Two-sided sign-flip p-value of mean(diff) = 0; (p, exact). See sign_flip.sign_flip_test for
    the p with its Monte Carlo SE."""
    sums, counts = cluster_sums(diff, clusters)
    got, _ = sign_flip_test(sums, counts, draws=resamples, seed=seed, exact_max=exact_max)
    return got.p, got.exact


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    metric: str = "",
    resamples: int = DRAWS,
    seed: int = 0,
    exact_max: int = EXACT_MAX,
    alpha: float = ALPHA,
) -> PairedResult:
    """Compare per-query values `a` and `b` (same order, same queries)."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.shape != xb.shape or xa.ndim != 1 or not len(xa):
        raise ValueError("paired_test needs two equally long, non-empty sequences")
    if clusters is not None and len(clusters) != len(xa):
        raise ValueError("one cluster key per query")
    d = xa - xb
    sums, counts = cluster_sums(d, clusters)
    got, drawn = sign_flip_test(sums, counts, alpha=alpha, draws=resamples, seed=seed, exact_max=exact_max)
    flips = interval_assignments(sums, counts, drawn, draws=resamples, exact_max=exact_max, seed=seed)
    return PairedResult(
        metric=metric,
        n_queries=len(xa),
        n_clusters=len(sums),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        diff=float(d.mean()),
        ci95=inverted_interval(sums, counts, flips, alpha=alpha),
        p_value=got.p,
        exact=got.exact,
        resamples=got.draws,
        p_se=got.se,
        ci_exact=flips.exact,
    )


def align(ranks_a: Mapping[Hashable, int | None], ranks_b: Mapping[Hashable, int | None]) -> list[Hashable]:
    """The query keys both runs scored, sorted (pairing needs the same queries)."""
    return sorted(set(ranks_a) & set(ranks_b), key=repr)


def compare_ranks(
    ranks_a: Mapping[Hashable, int | None],
    ranks_b: Mapping[Hashable, int | None],
    cluster_of: Mapping[Hashable, Hashable] | None = None,
    *,
    metrics: Sequence[str] | None = None,
    resamples: int = DRAWS,
    seed: int = 0,
) -> dict[str, PairedResult]:
    """First-needle ranks keyed by (seed, queryID) for two runs -> one PairedResult per metric
    (default: the table's tested ones)."""
    keys = align(ranks_a, ranks_b)
    if not keys:
        raise ValueError("the two runs share no query")
    clusters = [cluster_of[k] for k in keys] if cluster_of is not None else None
    rows = [metric_table.by_name(m) for m in (tested_metrics() if metrics is None else metrics)]
    return {
        m.name: paired_test(
            [m.value(ranks_a[k]) for k in keys],
            [m.value(ranks_b[k]) for k in keys],
            clusters,
            metric=m.name,
            resamples=resamples,
            seed=seed,
        )
        for m in rows
    }


def authors_needed(
    diff: Sequence[float], clusters: Sequence[Hashable], *, delta: float = 0.05, alpha: float = 0.05, power: float = 0.8
) -> tuple[int, float]:
    """(clusters needed, per-cluster sd of the mean difference) to detect a gap of `delta`."""
    from statistics import NormalDist

    sums, counts = cluster_sums(diff, clusters)
    per_cluster = sums / counts
    sd = float(per_cluster.std(ddof=1)) if len(per_cluster) > 1 else float("nan")
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return (math.ceil((z * sd / delta) ** 2) if math.isfinite(sd) else 0), sd
