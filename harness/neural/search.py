"""Exact top-k by inner product on GPU or CPU (torch matmul, or faiss when installed),
with the harness's tie rule (score descending, then documentID ascending).

Each backend returns, per query, every candidate scoring at least the k-th best score; the
tie rule then picks the k, so the cut at rank k is the same as a full sort's.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from harness.evaluation.ranking import top_k


def _finish(scores: np.ndarray, idx: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[str, float]]:
    return top_k(scores[None, :], list(ids[idx]), k)[0]


def search_torch(
    queries: np.ndarray,
    candidates: np.ndarray | torch.Tensor,
    candidate_ids: Sequence[str],
    k: int,
    *,
    device: torch.device | None = None,
    block: int = 1024,
    margin: int = 16,
) -> list[list[tuple[str, float]]]:
    """Top-k on the device; only k + margin scores per query come back to the host, unless ties
    reach past them (then that query's full row does)."""
    device = device or torch.device("cpu")
    ids = np.asarray(candidate_ids, dtype=object)
    cand = torch.as_tensor(candidates, dtype=torch.float32, device=device)
    n = cand.shape[0]
    k_eff = min(k, n)
    fetch = min(n, k_eff + margin)
    block = max(1, min(block, (1 << 28) // max(n, 1)))  # at most ~1 GiB of fp32 scores at a time
    out = []
    for start in range(0, len(queries), block):
        q = torch.as_tensor(queries[start : start + block], dtype=torch.float32, device=device)
        scores = q @ cand.T
        vals, idx = torch.topk(scores, fetch, dim=1)
        spill = (
            (vals[:, -1] >= vals[:, k_eff - 1]) if fetch < n else torch.zeros(len(q), dtype=torch.bool, device=device)
        )
        vals_np, idx_np, spill_np = vals.cpu().numpy(), idx.cpu().numpy(), spill.cpu().numpy()
        for r in range(len(q)):
            if spill_np[r]:  # ties at the k-th score reach past what was fetched: read the whole row
                row = scores[r]
                keep = torch.nonzero(row >= vals[r, k_eff - 1]).flatten()
                row_i, row_s = keep.cpu().numpy(), row[keep].cpu().numpy()
            else:
                row_i, row_s = idx_np[r], vals_np[r]
            out.append(_finish(row_s, row_i, ids, k_eff))
    return out


def search_faiss(
    queries: np.ndarray, candidates: np.ndarray, candidate_ids: Sequence[str], k: int
) -> list[list[tuple[str, float]]]:
    import faiss

    ids = np.asarray(candidate_ids, dtype=object)
    index = faiss.IndexFlatIP(candidates.shape[1])
    index.add(np.ascontiguousarray(candidates, dtype=np.float32))
    k_eff = min(k, len(ids))
    out = []
    q = np.ascontiguousarray(queries, dtype=np.float32)
    for start in range(0, len(q), 1024):
        block = q[start : start + 1024]
        fetch = min(len(ids), 2 * k_eff)
        scores, idx = index.search(block, fetch)
        for qi, (row_s, row_i) in enumerate(zip(scores, idx)):
            if fetch < len(ids) and row_s[-1] >= row_s[k_eff - 1]:
                # ties reach past what was fetched: score this query against everything
                full = candidates @ block[qi]
                row_i = np.flatnonzero(full >= row_s[k_eff - 1])
                row_s = full[row_i]
            out.append(_finish(row_s, row_i, ids, k_eff))
    return out


def top_k_by_backend(
    queries: np.ndarray,
    candidates: np.ndarray,
    candidate_ids: Sequence[str],
    k: int,
    *,
    backend: str = "auto",
    device: torch.device | None = None,
) -> list[list[tuple[str, float]]]:
    """Exact inner-product top-k with the tie rule on a chosen backend: "torch", "faiss", or "auto" (torch on CUDA, else faiss when installed, else torch)."""
    if backend == "auto":
        from harness.neural.device import cpu_backend

        backend = "torch" if device is not None and device.type == "cuda" else cpu_backend()
    if backend == "faiss":
        return search_faiss(queries, candidates, candidate_ids, k)
    return search_torch(queries, candidates, candidate_ids, k, device=device)
