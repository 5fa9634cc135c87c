"""Top-k selection from a dense score matrix under the harness's tie rule.

The rule (score descending, then documentID ascending) is applied here so that a system
which returns only its top k agrees with the metrics on which candidates make the cut.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def top_k(scores: np.ndarray, candidate_ids: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
    """Per row of `scores` (queries x candidates), the k best (id, score) pairs in rank order."""
    scores = np.asarray(scores)
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


def top_k_inner_product(query_vecs: np.ndarray, cand_vecs: np.ndarray, candidate_ids: Sequence[str], k: int,
                 *, block: int = 256) -> list[list[tuple[str, float]]]:
    """Exact inner-product search in query blocks (bounded memory), with the tie rule."""
    out: list[list[tuple[str, float]]] = []
    for start in range(0, len(query_vecs), block):
        scores = query_vecs[start:start + block] @ cand_vecs.T
        out.extend(top_k(scores, candidate_ids, k))
    return out
