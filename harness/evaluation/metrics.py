"""Success@k, MRR@k and their breakdowns, exactly as the paper defines them.

- Ranks are 1-based. Ties are broken by score descending, then documentID ascending.
- Success@k: share of queries with at least one needle in the top k.
- MRR@k: mean over queries of 1/rank of the first needle, 0 when it is below rank k.
- Which metrics a result records, and how each scores one query, is the metric table
  (harness.evaluation.metric_table); everything below iterates it.
- A query the system did not rank (absent or empty ranking) counts as a miss, and so does one
  whose ranking gives every candidate the same score: such a ranking says nothing, and the id
  tie-break would score it by how the ids happen to sort.
Everything here is pure: ids in, numbers out. No torch.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping, Sequence

import numpy as np

from harness.evaluation import metric_table

Ranking = Sequence[tuple[str, float]]
CURVE_MAX = 100


def order(ranking: Iterable[tuple[str, float]]) -> list[str]:
    """Candidate ids in rank order under the tie rule (score desc, then id asc)."""
    return [c for c, _ in sorted(ranking, key=lambda cs: (-float(cs[1]), cs[0]))]


def first_needle_rank(ranked_ids: Sequence[str], needles: Iterable[str]) -> int | None:
    """1-based rank of the first needle in `ranked_ids`, or None when no needle is ranked."""
    needles = set(needles)
    for i, c in enumerate(ranked_ids, 1):
        if c in needles:
            return i
    return None


def all_tied(ranking: Ranking) -> bool:
    """Whether a ranking of two or more candidates gives them all the same score."""
    return len(ranking) > 1 and len({float(s) for _, s in ranking}) == 1


def first_ranks(rankings: Mapping[str, Ranking], needles: Mapping[str, Iterable[str]]) -> dict[str, int | None]:
    """First-needle rank per query of `needles` (the split's queries define the denominator); None
    for a query not ranked, or ranked with every score tied."""
    out: dict[str, int | None] = {}
    for q, n in needles.items():
        ranking = rankings.get(q, ())
        out[q] = None if all_tied(ranking) else first_needle_rank(order(ranking), n)
    return out


def success_at(k: int, ranks: Iterable[int | None]) -> float:
    ranks = list(ranks)
    return sum(metric_table.hit(r, k) for r in ranks) / len(ranks)


def mrr_at(k: int, ranks: Iterable[int | None]) -> float:
    ranks = list(ranks)
    return sum(metric_table.reciprocal_rank(r, k) for r in ranks) / len(ranks)


def headline(ranks: Sequence[int | None]) -> dict[str, float]:
    """Every metric of the table over these queries: the mean of its per-query values."""
    return {m.name: sum(m.value(r) for r in ranks) / len(ranks) for m in metric_table.all_metrics()}


def success_curve(ranks: Sequence[int | None], k_max: int = CURVE_MAX) -> list[float]:
    """Success@k for k = 1..k_max."""
    hits = np.zeros(k_max + 1)
    for r in ranks:
        if r is not None and r <= k_max:
            hits[r] += 1
    return (np.cumsum(hits)[1:] / len(ranks)).tolist()


def bootstrap_ci(
    ranks: Sequence[int | None], *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> dict[str, list[float]]:
    """Percentile bootstrap interval over queries for each metric of the table (fixed seed: reproducible)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(ranks), size=(resamples, len(ranks)))
    stats: dict[str, np.ndarray] = {}
    for m in metric_table.all_metrics():
        values = np.array([m.value(x) for x in ranks], dtype=float)
        stats[m.name] = values[idx].mean(axis=1)  # every metric on the same resamples
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    return {k: [float(np.percentile(v, lo)), float(np.percentile(v, hi))] for k, v in stats.items()}


def per_genre(ranks: Mapping[str, int | None], query_genres: Mapping[str, str]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[int | None]] = defaultdict(list)
    for q, r in ranks.items():
        groups[query_genres[q]].append(r)
    return {g: {"n_queries": len(v), **headline(v)} for g, v in sorted(groups.items())}


def evaluate(
    rankings: Mapping[str, Ranking], needles: Mapping[str, Iterable[str]], query_genres: Mapping[str, str]
) -> dict:
    """Everything a result file records about one run on one split."""
    ranks = first_ranks(rankings, needles)
    values = list(ranks.values())
    return {
        "metrics": headline(values),
        "ci95": bootstrap_ci(values),
        "per_genre": per_genre(ranks, query_genres),
        "success_curve": success_curve(values),
        "first_needle_rank": ranks,
        "n_queries": len(values),
        "n_ranked": sum(1 for q in needles if rankings.get(q)),
    }


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1) over seeds; sd is NaN for a single seed."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else float("nan")


def pooled_metric(results: Sequence[Mapping], metric: str) -> float:
    """A metric over the queries of every seed's result at once (each seed weighted by its queries)."""
    return sum(r["metrics"][metric] * r["n_queries"] for r in results) / sum(r["n_queries"] for r in results)


def metrics_line(metrics: Mapping[str, float]) -> str:
    """The headline metrics as the CLI prints them: percent with one decimal, like the leaderboard pages
    (MRR@20 too is shown ×100)."""
    return "  ".join(f"{m.short} {100 * metrics[m.name]:.1f}%" for m in metric_table.headline())
