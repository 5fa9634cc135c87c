"""A bound on any one author's weight in a split: at most N documents per (author, genre).

The split makes every document of a sampled author's query genre a query, and every document of
theirs in another genre a needle of each, so one prolific author can supply most of a seed's
queries, each with hundreds of needles, and decide the seed's score alone. The cap keeps N
documents of any larger (author, genre) cell and leaves the others out of the split entirely:
neither query nor candidate, so the pool never holds a same-author document that does not count
as a needle. Capping documents, not queries or needles, bounds both sides with one number.

Which documents are kept depends on the seed and the document ids alone (never on set order or
global randomness): documents are taken in the order of sha256("<seed>:<id>"), and one is kept
while every (author, genre) cell it belongs to holds fewer than N kept documents. A co-authored
document counts in each of its authors' cells.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from harness.data.collection import Collection
from harness.errors import HarnessError

SETTING = "max_per_author_genre"


def check_cap(value: Any) -> int | None:
    """The cap as the builder uses it: a whole number of at least 1, or None (0 or None: no cap)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HarnessError(
            f"max documents per (author, genre) must be a whole number of at least 1 (0: no cap), got {value!r}"
        )
    return value


def _order_key(seed: int, doc_id: str) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}:{doc_id}".encode()).hexdigest(), doc_id


def left_out_by_cap(collection: Collection, cap: int, seed: int) -> frozenset[str]:
    """The ids of the documents the cap leaves out of seed `seed`'s split (background documents are never capped)."""
    cells = collection.author_genres()
    full = {(a, g) for a, genres in cells.items() for g, ids in genres.items() if len(ids) > cap}
    if not full:
        return frozenset()
    in_full = sorted({d for a, g in full for d in cells[a][g]}, key=lambda d: _order_key(seed, d))
    docs = collection.documents
    kept_in: dict[tuple[str, str], int] = {}
    left_out = set()
    for d in in_full:
        mine = [(a, docs[d].genre) for a in docs[d].authorIDs if (a, docs[d].genre) in full]
        if all(kept_in.get(cell, 0) < cap for cell in mine):
            for cell in mine:
                kept_in[cell] = kept_in.get(cell, 0) + 1
        else:
            left_out.add(d)
    return frozenset(left_out)


def without(collection: Collection, ids: frozenset[str]) -> Collection:
    """The collection less `ids`: what the split builder samples from once the cap has been applied."""
    return replace(collection, documents={d: doc for d, doc in collection.documents.items() if d not in ids})
