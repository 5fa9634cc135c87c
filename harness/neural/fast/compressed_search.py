"""Compressed search through a faiss index, for candidate pools far beyond HRS (millions).

`spec` is a faiss index-factory string over inner product, e.g. "IVF4096,PQ64" (inverted
lists of product-quantised vectors: 64 bytes a vector instead of 4 x dim) or "HNSW32".
Results are approximate: the bench measures the recall it gives up against exact search.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def build_index(candidates: np.ndarray, spec: str, *, train_size: int = 262144, seed: int = 0):
    import faiss

    x = np.ascontiguousarray(candidates, dtype=np.float32)
    index = faiss.index_factory(x.shape[1], spec, faiss.METRIC_INNER_PRODUCT)
    if not index.is_trained:
        rng = np.random.default_rng(seed)
        sample = x if len(x) <= train_size else x[np.sort(rng.choice(len(x), train_size, replace=False))]
        index.train(sample)
    for start in range(0, len(x), 1 << 18):
        index.add(x[start : start + (1 << 18)])
    return index


def set_search_breadth(index, nprobe: int) -> None:
    """How many inverted lists (IVF) or graph candidates (HNSW efSearch) a query visits."""
    import faiss

    params = faiss.ParameterSpace()
    for name in ("nprobe", "efSearch"):
        try:
            params.set_index_parameter(index, name, nprobe)
        except RuntimeError:
            pass


def index_search(
    index, queries: np.ndarray, candidate_ids: Sequence[str], k: int, *, nprobe: int = 64
) -> list[list[tuple[str, float]]]:
    """Approximate top-k per query, score descending then documentID (the harness's order)."""
    set_search_breadth(index, nprobe)
    ids = np.asarray(candidate_ids, dtype=object)
    scores, idx = index.search(np.ascontiguousarray(queries, dtype=np.float32), min(k, len(ids)))
    out = []
    for row_s, row_i in zip(scores, idx):
        keep = row_i >= 0
        pairs = sorted(zip(ids[row_i[keep]], row_s[keep].tolist()), key=lambda p: (-p[1], p[0]))
        out.append([(str(c), float(s)) for c, s in pairs])
    return out
