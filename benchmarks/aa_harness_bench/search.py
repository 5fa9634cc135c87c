"""Search scaling on synthetic vectors: exact top-k (torch, on the device) and a compressed
faiss index (CPU), its build time, query time and the recall it gives up against exact.

The vectors are a seeded mixture of Gaussians (unit-normalised), a stand-in for document
embeddings with topical clusters; uniform noise would make any compressed index look worse
than it does on real embeddings, and a single cluster better.
"""

from __future__ import annotations

import math
import time

import numpy as np


def clustered_vectors(n: int, dim: int, seed: int, *, clusters: int = 1024, spread: float = 0.6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # fixed centres whatever the seed: candidates and queries are drawn around the same clusters
    centres = np.random.default_rng(12345).standard_normal((clusters, dim)).astype(np.float32)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 1 << 17):
        m = min(1 << 17, n - start)
        x = centres[rng.integers(0, clusters, m)] + spread * rng.standard_normal((m, dim), dtype=np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def default_spec(n: int, dim: int) -> str:
    """IVF with ~4 sqrt(n) lists (a power of two) and 8-bit PQ of dim/8 sub-vectors (dim/8 bytes each)."""
    lists = 2 ** max(4, round(math.log2(4 * math.sqrt(n))))
    return f"IVF{lists},PQ{dim // 8}"


def exact_topk_indices(queries: np.ndarray, candidates: np.ndarray, k: int, device) -> tuple[np.ndarray, float]:
    """(top-k indices [q, k], seconds) by torch on `device`, candidates already resident there."""
    import torch

    from aa_harness_bench.timing import timed

    cand = torch.as_tensor(candidates, device=device)
    q = torch.as_tensor(queries, device=device)
    block = max(1, min(len(q), (1 << 28) // len(cand)))

    def run():
        parts = [torch.topk(q[s : s + block] @ cand.T, k, dim=1).indices for s in range(0, len(q), block)]
        return torch.cat(parts)

    run()  # warm-up
    idx, seconds = timed(run, device)
    return idx.cpu().numpy(), seconds


def bench_search(
    sizes,
    dim: int,
    n_queries: int,
    k: int,
    device,
    *,
    spec: str | None = None,
    nprobes: tuple[int, ...] = (64,),
    compressed: bool = True,
    seed: int = 0,
    log=print,
) -> list[dict]:
    """One row per pool size: exact top-k time; with `compressed`, the index's build time and,
    for each search breadth in `nprobes`, its query rate and recall@k against exact."""
    rows = []
    queries = clustered_vectors(n_queries, dim, seed + 1)
    for n in sizes:
        cands = clustered_vectors(n, dim, seed)
        exact_idx, t_exact = exact_topk_indices(queries, cands, k, device)
        row = {
            "candidates": n,
            "dim": dim,
            "queries": n_queries,
            "k": k,
            "exact_device": str(device),
            "exact_seconds": round(t_exact, 4),
            "exact_queries_per_s": round(n_queries / t_exact, 1),
            "exact_bytes_per_vector": 4 * dim,
        }
        if compressed:
            import faiss

            from harness.neural.fast.compressed_search import (
                build_index,
                set_search_breadth,
            )

            this_spec = spec or default_spec(n, dim)
            t0 = time.perf_counter()
            index = build_index(cands, this_spec, seed=seed)
            t_build = time.perf_counter() - t0
            sweep = []
            for nprobe in nprobes:
                set_search_breadth(index, nprobe)
                t0 = time.perf_counter()
                _, idx = index.search(queries, k)
                t_search = time.perf_counter() - t0
                recall = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(idx, exact_idx)]))
                sweep.append(
                    {
                        "nprobe": nprobe,
                        "search_seconds": round(t_search, 4),
                        "queries_per_s": round(n_queries / t_search, 1),
                        f"recall_at_{k}": round(recall, 4),
                    }
                )
            row.update(
                {
                    "index": this_spec,
                    "faiss_threads": faiss.omp_get_max_threads(),
                    "build_seconds": round(t_build, 2),
                    "sweep": sweep,
                    "bytes_per_vector": int(index.sa_code_size()) if hasattr(index, "sa_code_size") else None,
                }
            )
        log("  ".join(f"{key}={val}" for key, val in row.items()))
        rows.append(row)
        del cands
    return rows
