"""Negatives for the reranker (the paper's Figure 1): n(d_q) near the query, n(d_q+) near the
positive, n(r) at random -- never by the query's author.

Neighbours come from SBERT cosine over the training collection, computed once per
(collection, model) and cached as a small .npz of neighbour indices.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from harness.api import atomic_open
from plugins.sadiri_v2.config import parse_strategy


def nearest_other_author(vecs: np.ndarray, authors: Sequence[str], k: int, block: int = 2048) -> np.ndarray:
    """For each row, the indices of its k most cosine-similar rows by other authors (best first).
    Vectors narrower than float32 are widened first: numpy has no BLAS for float16, where 7,128
    SBERT vectors took 220 s against 8 s for the whole float32 mining."""
    vecs = np.asarray(vecs)
    if vecs.dtype not in (np.float32, np.float64):
        vecs = vecs.astype(np.float32)
    v = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    _, codes = np.unique(np.asarray(authors), return_inverse=True)
    k = min(k, len(v) - 1)
    out = np.empty((len(v), k), dtype=np.int64)
    for start in range(0, len(v), block):
        sims = v[start : start + block] @ v.T
        sims[codes[start : start + block, None] == codes[None, :]] = -np.inf  # own author (and self)
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        out[start : start + block] = np.take_along_axis(top, order, axis=1)
    return out


def cached_neighbours(
    texts: Sequence[str],
    authors: Sequence[str],
    embed: Callable[[list[str]], np.ndarray],
    model_id: str,
    k: int,
    cache_dir: Path,
) -> np.ndarray:
    h = hashlib.sha256(model_id.encode())
    for t, a in zip(texts, authors):
        h.update(hashlib.sha256(t.encode()).digest() + a.encode() + b"\0")
    path = Path(cache_dir) / f"{h.hexdigest()[:24]}-k{k}.npz"
    if path.is_file():
        with np.load(path) as z:
            return z["neighbours"]
    nn = nearest_other_author(np.asarray(embed(list(texts))), authors, k)
    with atomic_open(path, "wb") as f:
        np.savez(f, neighbours=nn)
    return nn


def split_counts(m: int, categories: Sequence[str]) -> dict[str, int]:
    """m split evenly over the categories (the first ones take any remainder)."""
    base, extra = divmod(m, len(categories))
    return {c: base + (i < extra) for i, c in enumerate(categories)}


def draw_negatives(
    query: int,
    positive: int,
    strategy: str,
    m: int,
    neighbours: np.ndarray,
    authors: Sequence[str],
    rng: random.Random,
    *,
    pool: int | None = None,
) -> list[int]:
    """m distinct negatives for (query, positive): from each chosen neighbour list the nearest
    ones (pool None) or a uniform sample of its `pool` nearest usable ones; random ones uniformly
    from the other authors' documents."""
    own = authors[query]
    chosen: list[int] = []
    taken = {query, positive}
    counts = split_counts(m, parse_strategy(strategy))
    for category, n in counts.items():
        if category == "r":
            continue
        near = neighbours[query if category == "q" else positive]
        usable = [int(i) for i in near if int(i) not in taken and authors[int(i)] != own]
        picked = usable[:n] if pool is None else rng.sample(usable[:pool], min(n, len(usable[:pool])))
        chosen += picked
        taken.update(picked)
    missing = m - len(chosen)  # random ones, plus any shortfall of a neighbour list
    for _ in range(50 * missing):  # rejection sampling: cheap on a large collection
        if missing == 0:
            return chosen
        i = rng.randrange(len(authors))
        if authors[i] != own and i not in taken:
            chosen.append(i)
            taken.add(i)
            missing -= 1
    others = [i for i in range(len(authors)) if authors[i] != own and i not in taken]  # small collections
    return chosen + rng.sample(others, min(missing, len(others)))
