"""Spherical k-means with k-means++ seeding: faiss does the iterations when installed, else torch.

Seeding matters more than the iterations on small sets: a random start can settle with two
centroids in one true cluster, so every run starts from k-means++ and the best of `restarts`
runs (by total cosine to the assigned centroid) wins.
"""
from __future__ import annotations

import numpy as np
import torch


def _plus_plus(pts: torch.Tensor, k: int, g: torch.Generator) -> torch.Tensor:
    """k-means++ seeding with cosine distance: spread-out starting centroids."""
    first = int(torch.randint(len(pts), (1,), generator=g))
    cent = [pts[first]]
    dist = (1 - pts @ pts[first]).clamp(min=0)
    for _ in range(1, k):
        p = dist.cpu().double() + 1e-12
        nxt = int(torch.multinomial(p / p.sum(), 1, generator=g))
        cent.append(pts[nxt])
        dist = torch.minimum(dist, (1 - pts @ pts[nxt]).clamp(min=0))
    return torch.stack(cent)


def _torch_lloyd(pts: torch.Tensor, cent: torch.Tensor, niter: int, g: torch.Generator) -> torch.Tensor:
    k = len(cent)
    for _ in range(niter):
        assign = (pts @ cent.T).argmax(1)
        sums = torch.zeros_like(cent).index_add_(0, assign, pts)
        empty = torch.bincount(assign, minlength=k) == 0
        if empty.any():  # re-seed empty clusters with random points
            pick = torch.randint(len(pts), (int(empty.sum()),), generator=g).to(pts.device)
            sums[empty] = pts[pick]
        cent = torch.nn.functional.normalize(sums, dim=1)
    return cent


def _faiss_lloyd(x: np.ndarray, cent: np.ndarray, niter: int, seed: int) -> np.ndarray:
    import faiss

    km = faiss.Kmeans(x.shape[1], len(cent), niter=niter, spherical=True, seed=seed, verbose=False,
                      min_points_per_centroid=1, max_points_per_centroid=1 << 20)
    km.train(x, init_centroids=np.ascontiguousarray(cent, dtype=np.float32))
    return km.centroids


def spherical_kmeans(x: np.ndarray, k: int, *, niter: int = 20, seed: int = 0, backend: str = "auto",
                     restarts: int = 3) -> np.ndarray:
    """Cluster id per row of `x` (rows are normalised here), k clusters by cosine."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    k = max(1, min(k, len(x)))
    if backend == "auto":
        try:
            import faiss  # noqa: F401

            backend = "faiss"
        except ImportError:
            backend = "torch"
    device = torch.device("cuda") if torch.cuda.is_available() and backend == "torch" else torch.device("cpu")
    pts = torch.as_tensor(x, device=device)
    best, best_score = None, -np.inf
    for r in range(restarts):
        g = torch.Generator().manual_seed(seed * 1000 + r)
        init = _plus_plus(pts, k, g)
        if backend == "faiss":
            cent = torch.as_tensor(_faiss_lloyd(x, init.cpu().numpy(), niter, seed + r), device=device)
        else:
            cent = _torch_lloyd(pts, init, niter, g)
        sims = pts @ cent.T
        score = float(sims.max(1).values.sum())
        if score > best_score:
            best, best_score = sims.argmax(1).cpu().numpy().astype(np.int64), score
    return best
