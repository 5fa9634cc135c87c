"""Top-k selection from a dense score matrix under the harness's tie rule.

The rule (score descending, then documentID ascending) is applied here so that a system
which returns only its top k agrees with the metrics on which candidates make the cut.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.errors import HarnessError


class NonFiniteScoreError(HarnessError):
    """A score matrix holds NaN or an infinity: no ranking can be cut from it."""


def check_finite(
    scores: np.ndarray,
    query_ids: Sequence[str] | None = None,
    candidate_ids: Sequence[str] | None = None,
    *,
    row_offset: int = 0,
) -> None:
    """Raise NonFiniteScoreError naming the first query (and candidate) whose score is NaN or infinite.

    Checked before any cut-off: `row >= kth` is false for every entry when kth is NaN, so a
    NaN would otherwise give an empty ranking that scores as a plain miss.
    """
    scores = np.asarray(scores)
    finite = np.isfinite(scores)
    if finite.all():
        return
    i, j = (int(x) for x in np.argwhere(~finite)[0])
    q = query_ids[i] if query_ids is not None else f"row {row_offset + i}"
    c = f" for candidate {candidate_ids[j]!r}" if candidate_ids is not None else ""
    raise NonFiniteScoreError(
        f"query {q!r}: non-finite score {scores[i, j]!r}{c} ({int((~finite).sum())} such score(s))"
    )


def top_k(
    scores: np.ndarray, candidate_ids: Sequence[str], k: int, query_ids: Sequence[str] | None = None
) -> list[list[tuple[str, float]]]:
    """Per row of `scores` (queries x candidates), the k best (id, score) pairs in rank order.

    Raises NonFiniteScoreError (naming the query, from `query_ids` when given) on NaN or infinite scores.
    """
    scores = np.asarray(scores)
    check_finite(scores, query_ids, candidate_ids)
    n = scores.shape[1]
    k = min(k, n)
    ids = np.asarray(candidate_ids, dtype=object)
    id_order = np.empty(n, dtype=np.int64)
    id_order[np.argsort(ids.astype(str), kind="stable")] = np.arange(n)
    out = []
    for row in scores:
        if k < n:
            # Everything tied with the k-th best must be considered, or the id tie-break is wrong.
            kth = np.partition(row, n - k)[n - k]
            pool = np.flatnonzero(row >= kth)
        else:
            pool = np.arange(n)
        chosen = pool[np.lexsort((id_order[pool], -row[pool]))][:k]
        out.append([(str(ids[j]), float(row[j])) for j in chosen])
    return out


def top_k_inner_product(
    query_vecs: np.ndarray,
    cand_vecs: np.ndarray,
    candidate_ids: Sequence[str],
    k: int,
    *,
    block: int = 256,
    query_ids: Sequence[str] | None = None,
) -> list[list[tuple[str, float]]]:
    """Exact inner-product search in query blocks (bounded memory), with the tie rule."""
    out: list[list[tuple[str, float]]] = []
    for start in range(0, len(query_vecs), block):
        scores = query_vecs[start : start + block] @ cand_vecs.T
        ids = None if query_ids is None else query_ids[start : start + block]
        out.extend(top_k(scores, candidate_ids, k, ids))
    return out


def check_vectors(vectors, documents: Sequence, what: str = "encode()") -> np.ndarray:
    """An encoder's output as a float32 (n, d) array with one finite row per document, or an error.

    `zip` would silently drop documents when an encoder returns fewer rows than it was given,
    and a NaN row would rank nothing; both are errors naming the document.
    """
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise HarnessError(f"{what} returned an array of shape {arr.shape}; expected (documents, dimensions)")
    if len(arr) != len(documents):
        raise HarnessError(f"{what} returned {len(arr)} vectors for {len(documents)} documents")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = arr[i][~np.isfinite(arr[i])][0]
        raise NonFiniteScoreError(
            f"{what}: document {documents[i].documentID!r} got a non-finite vector "
            f"(value {float(value)!r}; {int(bad.sum())} such document(s))"
        )
    return arr
