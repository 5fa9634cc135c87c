"""Hard-negative batching (Algorithm 1) at the paper's scale: time against the pool size.

Synthetic document vectors (a seeded mixture of Gaussians, unit rows; two documents per
author drawn near one centre), random-projected to dim // 3, spherical k-means into
n_batches x 3.5 clusters (k-means++ seeding, 20 iterations, best of 3), authors assigned to
clusters and packed into batches: `hard_negative_batches` end to end, as training runs it
at the start of every epoch.
"""

from __future__ import annotations

import math
import time

import numpy as np


def bench_batching(
    sizes, dim: int, device, *, authors_per_batch: int = 16, cluster_factor: float = 3.5, seed: int = 0, log=print
) -> list[dict]:
    from aa_harness_bench.search import clustered_vectors
    from aa_harness_bench.timing import sync
    from harness.neural.hard_negatives import hard_negative_batches
    from harness.neural.kmeans import pick_backend

    rows = []
    for n in sizes:
        n_authors = n // 2
        centres = clustered_vectors(n_authors, dim, seed, clusters=max(16, n_authors // 64))
        rng = np.random.default_rng(seed + 1)
        vecs = np.repeat(centres, 2, axis=0) + 0.3 * rng.standard_normal(
            (2 * n_authors, dim), dtype=np.float32
        ) / math.sqrt(dim)
        authors = [f"a{i}" for i in range(n_authors) for _ in range(2)]
        sync(device)
        start = time.perf_counter()
        batches = hard_negative_batches(
            vecs, authors, authors_per_batch, cluster_factor=cluster_factor, project_to=dim // 3, seed=seed
        )
        sync(device)
        seconds = time.perf_counter() - start
        k = max(1, round(math.ceil(n_authors / authors_per_batch) * cluster_factor))
        backend, kdev = pick_backend()
        row = {
            "documents": 2 * n_authors,
            "authors": n_authors,
            "dim": dim,
            "projected_dim": dim // 3,
            "clusters": k,
            "batches": len(batches),
            "seconds": round(seconds, 2),
            "kmeans_backend": backend,
            "kmeans_device": str(kdev),
        }
        log("  ".join(f"{key}={val}" for key, val in row.items()))
        rows.append(row)
        del vecs
    return rows
