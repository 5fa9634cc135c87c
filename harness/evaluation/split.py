"""One split: its queries, candidates and each query's needles, as a frozen record, its canonical
JSON and sha256, and the guarantees every split must meet (check_split).

A split is what a manifest file holds; how one is built is harness.evaluation.split_builder, how one
is written and read is harness.evaluation.manifests.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from harness.data.collection import Collection
from harness.errors import DataError

BUILDER = "appendix-b"
BUILDER_VERSION = 1


@dataclass(frozen=True)
class Query:
    documentID: str
    authorIDs: tuple[str, ...]
    genre: str


@dataclass(frozen=True)
class Split:
    """One manifest: which documents are queries, which are candidates, and each query's needles."""

    collection: str
    seed: int
    queries: tuple[Query, ...]
    candidates: tuple[str, ...]
    needles: Mapping[str, tuple[str, ...]]
    builder: Mapping[str, Any]
    source_sha256: str

    def content(self) -> dict[str, Any]:
        """The manifest without its own hash, in a canonical order."""
        return {
            "builder": dict(self.builder),
            "candidates": list(self.candidates),
            "collection": self.collection,
            "counts": {
                "queries": len(self.queries),
                "candidates": len(self.candidates),
                "needles": sum(len(v) for v in self.needles.values()),
                "query_authors": len({a for q in self.queries for a in q.authorIDs}),
            },
            "needles": {q: list(v) for q, v in sorted(self.needles.items())},
            "queries": [
                {"documentID": q.documentID, "authorIDs": list(q.authorIDs), "genre": q.genre} for q in self.queries
            ],
            "seed": self.seed,
            "source_sha256": self.source_sha256,
        }

    @functools.cached_property
    def sha256(self) -> str:  # computed once: a large manifest takes a while to serialise
        return hashlib.sha256(_dump(self.content()).encode("utf-8")).hexdigest()

    def to_json(self) -> str:
        return _dump({**self.content(), "sha256": self.sha256})

    @property
    def query_genres(self) -> dict[str, str]:
        return {q.documentID: q.genre for q in self.queries}


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def check_split(split: Split, collection: Collection | None = None) -> None:
    """The guarantees every split must meet; a violation is a bug or a corrupted manifest."""
    where = f"split {split.collection!r} seed {split.seed}"
    cands = set(split.candidates)
    if len(cands) != len(split.candidates):
        raise DataError(f"{where}: duplicate candidate ids")
    qids = [q.documentID for q in split.queries]
    if len(set(qids)) != len(qids):
        raise DataError(f"{where}: duplicate query ids")
    if not qids:
        raise DataError(f"{where}: no queries")
    docs = collection.documents if collection is not None else None
    if docs is not None:
        missing = [d for d in [*qids, *split.candidates] if d not in docs]
        if missing:
            raise DataError(
                f"{where}: {len(missing)} document id(s) of the manifest are not in the collection (first: {missing[0]!r}); "
                "the manifest was built from other data"
            )
    extra = sorted(set(split.needles) - set(qids))
    if extra:
        raise DataError(f"{where}: needles listed for {extra[0]!r}, which is not a query")
    for q in split.queries:
        needles = split.needles.get(q.documentID, ())
        if not needles:
            raise DataError(f"{where}: query {q.documentID!r} has no needle")
        if q.documentID in cands:
            raise DataError(f"{where}: query {q.documentID!r} is also a candidate")
        if len(set(needles)) != len(needles):
            raise DataError(f"{where}: query {q.documentID!r} lists a needle twice")
        if docs is not None and set(q.authorIDs) != set(docs[q.documentID].authorIDs):
            raise DataError(
                f"{where}: query {q.documentID!r} has authors {list(q.authorIDs)} in the manifest, "
                f"{list(docs[q.documentID].authorIDs)} in the collection"
            )
        builder_genres = docs is not None and split.builder.get("name") == BUILDER
        if builder_genres and docs is not None and q.genre != docs[q.documentID].genre:
            raise DataError(
                f"{where}: query {q.documentID!r} has genre {q.genre!r} in the manifest, "
                f"{docs[q.documentID].genre!r} in the collection"
            )
        for n in needles:
            if n not in cands:
                raise DataError(f"{where}: needle {n!r} of query {q.documentID!r} is not a candidate")
            if docs is None:
                continue
            if not set(docs[n].authorIDs) & set(docs[q.documentID].authorIDs):
                raise DataError(
                    f"{where}: needle {n!r} of query {q.documentID!r} shares no author with it "
                    f"({list(docs[n].authorIDs)} vs {list(docs[q.documentID].authorIDs)})"
                )
            if builder_genres and docs[n].genre == q.genre:
                raise DataError(f"{where}: needle {n!r} shares its query's genre {q.genre!r}")
