"""SADIRI hard-negative batching (the paper's Algorithm 1).

At the start of every epoch all training documents are embedded with the current model
(LLM embeddings are first random-projected to K = D // 3 dimensions), clustered by
spherical k-means into k = n_batches * s clusters (s = 3.5), and each author is given one
cluster: the larger of the clusters its documents fell in. Clusters larger than b / s
authors are split, and the pieces are packed, in random order, into batches of b authors --
so a batch holds about s clusters of mutually similar authors, which are each other's
hard negatives.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from typing import Sequence

import numpy as np

from harness.neural.kmeans import spherical_kmeans


def random_projection(x, k: int, seed: int, device=None):
    """x R / sqrt(k), R a seeded Gaussian [D, k]. With a torch device the product runs there and a
    tensor comes back (the batching keeps the projected vectors on the GPU for k-means)."""
    rng = np.random.default_rng(seed)
    r = rng.standard_normal((x.shape[1], k)).astype(np.float32)
    if device is None:
        return x @ r / math.sqrt(k)
    import torch

    return (
        torch.as_tensor(np.asarray(x, dtype=np.float32), device=device)
        @ torch.as_tensor(r, device=device)
        / math.sqrt(k)
    )


def kmeans_author_groups(doc_vecs, doc_authors: Sequence[str], n_clusters: int, seed: int) -> dict[str, int]:
    """Each author's cluster: of the clusters its documents fall in, the largest (then lowest id)."""
    assign = spherical_kmeans(doc_vecs, n_clusters, seed=seed)
    size = Counter(assign.tolist())
    per_author: dict[str, list[int]] = defaultdict(list)
    for a, c in zip(doc_authors, assign.tolist()):
        per_author[a].append(c)
    return {a: min(cs, key=lambda c: (-size[c], c)) for a, cs in per_author.items()}


def pack_batches(groups: list[list[str]], batch_size: int, rng: random.Random) -> list[list[str]]:
    """Pack groups in random order into batches of batch_size (a group may straddle two batches)."""
    groups = [list(g) for g in groups]
    rng.shuffle(groups)
    batches: list[list[str]] = []
    current: list[str] = []
    for g in groups:
        while g:
            room = batch_size - len(current)
            current += g[:room]
            g = g[room:]
            if len(current) == batch_size:
                batches.append(current)
                current = []
    if len(current) >= 2:  # a lone author has no negative to learn from
        batches.append(current)
    return batches


def hard_negative_batches(
    doc_vecs: np.ndarray,
    doc_authors: Sequence[str],
    batch_size: int,
    *,
    cluster_factor: float = 3.5,
    project_to: int | None = None,
    seed: int = 0,
) -> list[list[str]]:
    rng = random.Random(seed)
    if project_to:
        from harness.neural.kmeans import pick_backend

        doc_vecs = random_projection(doc_vecs, project_to, seed, device=pick_backend()[1])
    authors = sorted(set(doc_authors))
    n_batches = math.ceil(len(authors) / batch_size)
    n_clusters = max(1, round(n_batches * cluster_factor))
    chosen = kmeans_author_groups(doc_vecs, doc_authors, n_clusters, seed)
    clusters: dict[int, list[str]] = defaultdict(list)
    for a in authors:
        clusters[chosen[a]].append(a)
    piece = max(1, round(batch_size / cluster_factor))
    pieces = []
    for c in sorted(clusters):
        members = clusters[c]
        rng.shuffle(members)
        pieces += [members[i : i + piece] for i in range(0, len(members), piece)]
    return pack_batches(pieces, batch_size, rng)


def random_batches(authors: Sequence[str], batch_size: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return pack_batches([[a] for a in sorted(authors)], batch_size, rng)
