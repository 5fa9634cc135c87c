"""Paired significance of the difference between two systems on the same queries.

Per query, a metric value for each system (Success@8: 1 if the first needle is in the top 8;
MRR@20: 1/rank of the first needle, 0 below 20). Queries are pooled over the split seeds and
paired by (seed, queryID). Queries by one author share needles and style, so they are not
independent: the resampling unit is a *cluster* (by default every query on its own; the CLI
and the leaderboard use the query author across all pooled seeds, harness.evaluation.author_clusters).

- Randomization test (sign flip): under the null the two systems are exchangeable per
  cluster, so each cluster's summed difference flips sign with probability 1/2. Two-sided p
  = share of sign assignments whose |mean difference| is at least the observed one; exact
  (all 2^C assignments) for C <= `exact_max` clusters, else `resamples` random assignments
  with p = (1 + hits) / (1 + resamples).
- Paired bootstrap: clusters drawn with replacement, the difference of the means recomputed;
  the 95% interval is the 2.5th and 97.5th percentiles. Fixed seed: the same inputs give the
  same numbers.
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

METRICS = ("success@8", "mrr@20")
TEST_NAME = "paired cluster randomization test (sign flips of the clusters' summed differences)"
INTERVAL_NAME = "cluster bootstrap 95% interval (clusters drawn with replacement)"


def per_query_value(rank: int | None, metric: str) -> float:
    if metric == "success@8":
        return 1.0 if rank is not None and rank <= 8 else 0.0
    if metric == "mrr@20":
        return 1.0 / rank if rank is not None and rank <= 20 else 0.0
    if metric == "success@100":
        return 1.0 if rank is not None and rank <= 100 else 0.0
    raise ValueError(f"unknown metric {metric!r}")


@dataclass(frozen=True)
class PairedResult:
    metric: str
    n_queries: int
    n_clusters: int
    mean_a: float
    mean_b: float
    diff: float            # mean_a - mean_b
    ci95: tuple[float, float]
    p_value: float
    exact: bool
    resamples: int

    def as_dict(self) -> dict:
        return asdict(self)


def _cluster_sums(diff: np.ndarray, clusters: Sequence[Hashable] | None) -> tuple[np.ndarray, np.ndarray]:
    if clusters is None:
        return diff, np.ones_like(diff)
    index: dict[Hashable, int] = {}
    for c in clusters:
        index.setdefault(c, len(index))
    ids = np.array([index[c] for c in clusters])
    return np.bincount(ids, weights=diff, minlength=len(index)), np.bincount(ids, minlength=len(index)).astype(float)


def randomization_p(diff: Sequence[float], clusters: Sequence[Hashable] | None = None, *, resamples: int = 10000,
                    seed: int = 0, exact_max: int = 20) -> tuple[float, bool]:
    """Two-sided sign-flip p-value of mean(diff) = 0; (p, exact)."""
    d = np.asarray(diff, dtype=float)
    sums, _ = _cluster_sums(d, clusters)
    observed = abs(sums.sum())
    tol = 1e-9 * max(1.0, observed)
    nz = sums[sums != 0]  # a zero cluster's sign changes nothing
    if len(nz) <= exact_max:
        signs = 1 - 2 * ((np.arange(2 ** len(nz))[:, None] >> np.arange(len(nz))) & 1)
        stats = np.abs(signs @ nz) if len(nz) else np.zeros(1)
        return float((stats >= observed - tol).mean()), True
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, resamples, 1000):
        m = min(1000, resamples - start)
        signs = rng.integers(0, 2, size=(m, len(nz))) * 2 - 1
        hits += int((np.abs(signs @ nz) >= observed - tol).sum())
    return (1 + hits) / (1 + resamples), False


def bootstrap_ci(diff: Sequence[float], clusters: Sequence[Hashable] | None = None, *, resamples: int = 10000,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean difference, resampling clusters with replacement."""
    d = np.asarray(diff, dtype=float)
    sums, counts = _cluster_sums(d, clusters)
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    for start in range(0, resamples, 1000):
        m = min(1000, resamples - start)
        idx = rng.integers(0, len(sums), size=(m, len(sums)))
        stats[start:start + m] = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.percentile(stats, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(lo), float(hi)


def paired_test(a: Sequence[float], b: Sequence[float], clusters: Sequence[Hashable] | None = None, *,
                metric: str = "", resamples: int = 10000, seed: int = 0, exact_max: int = 20) -> PairedResult:
    """Compare per-query values `a` and `b` (same order, same queries)."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.shape != xb.shape or xa.ndim != 1 or not len(xa):
        raise ValueError("paired_test needs two equally long, non-empty sequences")
    if clusters is not None and len(clusters) != len(xa):
        raise ValueError("one cluster key per query")
    d = xa - xb
    p, exact = randomization_p(d, clusters, resamples=resamples, seed=seed, exact_max=exact_max)
    return PairedResult(metric=metric, n_queries=len(xa), n_clusters=len(set(clusters)) if clusters is not None else len(xa),
                        mean_a=float(xa.mean()), mean_b=float(xb.mean()), diff=float(d.mean()),
                        ci95=bootstrap_ci(d, clusters, resamples=resamples, seed=seed), p_value=p, exact=exact,
                        resamples=0 if exact else resamples)


def align(ranks_a: Mapping[Hashable, int | None], ranks_b: Mapping[Hashable, int | None]) -> list[Hashable]:
    """The query keys both runs scored, sorted (pairing needs the same queries)."""
    return sorted(set(ranks_a) & set(ranks_b), key=repr)


def compare_ranks(ranks_a: Mapping[Hashable, int | None], ranks_b: Mapping[Hashable, int | None],
                  cluster_of: Mapping[Hashable, Hashable] | None = None, *, metrics: Sequence[str] = METRICS,
                  resamples: int = 10000, seed: int = 0) -> dict[str, PairedResult]:
    """First-needle ranks keyed by (seed, queryID) for two runs -> one PairedResult per metric."""
    keys = align(ranks_a, ranks_b)
    if not keys:
        raise ValueError("the two runs share no query")
    clusters = [cluster_of[k] for k in keys] if cluster_of is not None else None
    return {m: paired_test([per_query_value(ranks_a[k], m) for k in keys], [per_query_value(ranks_b[k], m) for k in keys],
                           clusters, metric=m, resamples=resamples, seed=seed) for m in metrics}


def authors_needed(diff: Sequence[float], clusters: Sequence[Hashable], *, delta: float = 0.05, alpha: float = 0.05,
                   power: float = 0.8) -> tuple[int, float]:
    """(clusters needed, per-cluster sd of the mean difference) to detect a gap of `delta`."""
    from statistics import NormalDist

    d = np.asarray(diff, dtype=float)
    sums, counts = _cluster_sums(d, clusters)
    per_cluster = sums / counts
    sd = float(per_cluster.std(ddof=1)) if len(per_cluster) > 1 else float("nan")
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return (math.ceil((z * sd / delta) ** 2) if math.isfinite(sd) else 0), sd
