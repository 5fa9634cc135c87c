"""The resampling unit of paired tests: one query author across every pooled seed.

At author fraction 1.0 every seed samples the same query authors, and often the same query
documents, so (seed, author) units are not independent: an author who happens to be easy for
one system is easy in every seed. A cluster is therefore an author, whatever the seed; authors
tied by a co-authored query are joined (union-find), so no query belongs to two clusters.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # the smaller id is the root, so a cluster's name does not depend on the input order
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def author_clusters(
    query_authors: Mapping[Key, Sequence[str]],
) -> dict[Key, str]:
    """Query key (e.g. (seed, queryID)) -> its cluster, named by the smallest author id in it."""
    uf = _UnionFind()
    for authors in query_authors.values():
        if not authors:
            raise ValueError("a query without an author cannot be clustered")
        first = authors[0]
        uf.find(first)
        for other in authors[1:]:
            uf.union(first, other)
    return {key: uf.find(authors[0]) for key, authors in query_authors.items()}


def count_clusters(clusters: Iterable[Hashable]) -> int:
    return len(set(clusters))
