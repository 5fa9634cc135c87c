"""The metrics, declared once: each is one row, and evaluation, result checks, significance, every
page and the export read the rows, so adding a metric is adding a row.

Every metric here is a mean over queries of a per-query value that depends only on the rank of the
query's first needle (None: no needle ranked, or the query's ranking says nothing). The rows are
read at call time (through the functions below), never copied at import, so a test can swap them.
Pure: no torch, no numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def hit(rank: int | None, cutoff: int) -> float:
    """Success@k per query: 1 when the first needle is in the top k."""
    return 1.0 if rank is not None and rank <= cutoff else 0.0


def reciprocal_rank(rank: int | None, cutoff: int) -> float:
    """MRR@k per query: 1/rank of the first needle, 0 below rank k."""
    return 1.0 / rank if rank is not None and rank <= cutoff else 0.0


@dataclass(frozen=True)
class Metric:
    """One metric: how results, pages and tests name it and how one query scores under it."""

    name: str  # the key in result files and exports: "success@8"
    label: str  # as pages and prose spell it: "Success@8"
    short: str  # a narrow column's header: "S@8"
    cutoff: int  # the k of @k
    per_query: Callable[[int | None, int], float]  # (first-needle rank, cutoff) -> value; module-level, so rows pickle
    higher_is_better: bool = True
    headline: bool = True  # a column of the tables and the export
    tested: bool = False  # compared for paired significance (`compare`)

    def value(self, rank: int | None) -> float:
        """This metric's value for one query whose first needle is at `rank`."""
        return self.per_query(rank, self.cutoff)


METRICS: tuple[Metric, ...] = (
    Metric("success@8", "Success@8", "S@8", 8, hit, tested=True),
    Metric("success@100", "Success@100", "S@100", 100, hit),
    Metric("mrr@20", "MRR@20", "MRR@20", 20, reciprocal_rank, tested=True),
)


def all_metrics() -> tuple[Metric, ...]:
    """Every row, in table order: what evaluation computes and a result records."""
    return METRICS


def headline() -> tuple[Metric, ...]:
    """The rows shown as columns of the tables and the export."""
    return tuple(m for m in METRICS if m.headline)


def tested() -> tuple[Metric, ...]:
    """The rows compared for paired significance."""
    return tuple(m for m in METRICS if m.tested)


def by_name(name: str) -> Metric:
    """The row called `name`, or a ValueError naming the known ones."""
    for m in METRICS:
        if m.name == name:
            return m
    raise ValueError(f"unknown metric {name!r} (known: {', '.join(m.name for m in METRICS)})")
