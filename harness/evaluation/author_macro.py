"""Author-macro averaging: each query author counts once, however many queries the seeds gave them.

Pooled Success@8 is the mean over every (seed, query): an author with many queries across the
seeds weighs as much as all of them. The author-macro figure first averages within each author
cluster (one query author across all pooled seeds, co-authors joined; see
harness.evaluation.author_clusters), then averages those means over the clusters, so it answers
"for a typical author, how often is the needle found" rather than "for a typical query".
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)
Num = TypeVar("Num", int, float)


def author_macro(values: Mapping[Key, Num], cluster_of: Mapping[Key, Hashable]) -> float:
    """Mean over clusters of the mean of their queries' values (any numbers that add and divide,
    Fractions included, so a test can compare exactly). Every key of `values` needs a cluster."""
    by_cluster: dict[Hashable, list] = {}
    for key, value in values.items():
        by_cluster.setdefault(cluster_of[key], []).append(value)
    if not by_cluster:
        raise ValueError("no queries to average")
    means = [sum(v) / len(v) for v in by_cluster.values()]
    return sum(means) / len(means)
