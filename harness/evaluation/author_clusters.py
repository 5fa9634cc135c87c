"""The resampling unit of paired tests: one query author across every pooled seed.

At author fraction 1.0 every seed samples the same query authors, and often the same query
documents, so (seed, author) units are not independent: an author who happens to be easy for
one system is easy in every seed. A cluster is therefore an author, whatever the seed; authors
tied by a co-authored document are joined (union-find), so no query belongs to two clusters: a
co-authored query ties its authors, and so does a needle that two queries of different authors
share (it shares an author with each, so it is co-authored by them).
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
    ties: Iterable[Sequence[str]] = (),
) -> dict[Key, str]:
    """Query key (e.g. (seed, queryID)) -> its cluster, named by the smallest author id in it.
    ties: further groups of authors to join (the authors of one co-authored document)."""
    uf = _UnionFind()
    for group in (*query_authors.values(), *ties):
        if not group:
            raise ValueError("a query without an author cannot be clustered")
        uf.find(group[0])
        for other in group[1:]:
            uf.union(group[0], other)
    return {key: uf.find(authors[0]) for key, authors in query_authors.items()}


def needle_ties(
    needles: Mapping[str, Sequence[str]], query_authors: Mapping[str, Sequence[str]]
) -> list[tuple[str, ...]]:
    """Of one split: the authors of the queries that share a needle, for each needle shared by queries
    of different authors (sorted, so the result does not depend on the manifest's order)."""
    by_needle: dict[str, set[str]] = {}
    for q, ns in needles.items():
        for n in ns:
            by_needle.setdefault(n, set()).update(query_authors[q])
    return sorted(tuple(sorted(a)) for a in by_needle.values() if len(a) > 1)
