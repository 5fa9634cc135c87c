"""Spherical k-means with k-means++ seeding, on the GPU when there is one.

Seeding matters more than the iterations on small sets: a random start can settle with two
centroids in one true cluster, so every run starts from k-means++ and the best of `restarts`
runs (by total cosine to the assigned centroid) wins.

Everything stays on the device: k-means++ draws from the distance distribution with the
device's own generator and updates the distances with one matrix product per round, and a
round may draw several centroids at once (`seed_batch`; by default one per round up to 256
centroids, then k / 256 a round, so a 400,000-point, 43,000-centroid seeding is 256 rounds,
not 43,000 host round trips). Assignment runs in blocks of points, so the points x centroids
score matrix is never whole. With CUDA the iterations are torch's; on the CPU faiss does them
when installed (backend "auto").
"""

from __future__ import annotations

import numpy as np
import torch

_BLOCK_ELEMENTS = 1 << 26  # scores held at once in assignment


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def default_seed_batch(k: int) -> int:
    """Centroids drawn a round: 1 (exact k-means++) up to k = 256, then k / 256."""
    return max(1, k // 256)


def _plus_plus(pts: torch.Tensor, k: int, g: torch.Generator, batch: int | None = None) -> torch.Tensor:
    """k-means++ seeding with cosine distance; `batch` centroids are drawn per round from the same
    distance distribution (without replacement), then the distances are updated by one product."""
    batch = default_seed_batch(k) if batch is None else max(1, batch)
    n = len(pts)
    first = torch.randint(n, (1,), generator=g, device=pts.device)
    chosen = [first]
    dist = (1 - pts @ pts[first].T).clamp_(min=0)[:, 0]
    have = 1
    while have < k:
        m = min(batch, k - have)
        weights = dist.double() + 1e-12
        nxt = torch.multinomial(weights, m, replacement=False, generator=g)
        chosen.append(nxt)
        dist = torch.minimum(dist, (1 - pts @ pts[nxt].T).clamp_(min=0).min(dim=1).values)
        have += m
    return pts[torch.cat(chosen)]


def _assign(pts: torch.Tensor, cent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(nearest centroid by cosine, its similarity) per point, in blocks of points."""
    block = max(1, _BLOCK_ELEMENTS // max(1, len(cent)))
    ids, sims = [], []
    for s in range(0, len(pts), block):
        best = (pts[s : s + block] @ cent.T).max(dim=1)
        ids.append(best.indices)
        sims.append(best.values)
    return torch.cat(ids), torch.cat(sims)


def _torch_lloyd(pts: torch.Tensor, cent: torch.Tensor, niter: int, g: torch.Generator) -> torch.Tensor:
    k = len(cent)
    for _ in range(niter):
        assign, _ = _assign(pts, cent)
        sums = torch.zeros_like(cent).index_add_(0, assign, pts)
        empty = torch.bincount(assign, minlength=k) == 0
        n_empty = int(empty.sum())
        if n_empty:  # re-seed empty clusters with random points
            sums[empty] = pts[torch.randint(len(pts), (n_empty,), generator=g, device=pts.device)]
        cent = torch.nn.functional.normalize(sums, dim=1)
    return cent


def _faiss_lloyd(x: np.ndarray, cent: np.ndarray, niter: int, seed: int) -> np.ndarray:
    import faiss

    km = faiss.Kmeans(
        x.shape[1],
        len(cent),
        niter=niter,
        spherical=True,
        seed=seed,
        verbose=False,
        min_points_per_centroid=1,
        max_points_per_centroid=1 << 20,
    )
    km.train(x, init_centroids=np.ascontiguousarray(cent, dtype=np.float32))
    return np.asarray(km.centroids)


def pick_backend(backend: str = "auto") -> tuple[str, torch.device]:
    """("torch" or "faiss", the device the points live on): CUDA when present, else faiss's CPU
    iterations when installed, else torch on the CPU."""
    from harness.neural.device import cpu_backend

    cuda = torch.cuda.is_available()
    if backend == "auto":
        backend = "torch" if cuda else cpu_backend()
    return backend, torch.device("cuda") if cuda and backend == "torch" else torch.device("cpu")


def spherical_kmeans(
    x: np.ndarray | torch.Tensor,
    k: int,
    *,
    niter: int = 20,
    seed: int = 0,
    backend: str = "auto",
    restarts: int = 3,
    seed_batch: int | None = None,
) -> np.ndarray:
    """Cluster id per row of `x` (rows are normalised here), k clusters by cosine.

    x may be a torch tensor already on the device (the hard-negative batching passes one)."""
    backend, device = pick_backend(backend)
    pts = torch.as_tensor(x).to(device=device, dtype=torch.float32)
    pts = torch.nn.functional.normalize(pts, dim=1, eps=1e-12)
    k = max(1, min(k, len(pts)))
    host = pts.cpu().numpy() if backend == "faiss" else None
    # on CUDA the products run in TF32 (a 400,000 x 43,000 x 682 assignment is 23 TFLOP an iteration)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = device.type == "cuda" or tf32
    try:
        best = _restarts(pts, k, niter, seed, restarts, seed_batch, backend, host, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return best


def _restarts(pts, k, niter, seed, restarts, seed_batch, backend, host, device) -> np.ndarray:
    best: torch.Tensor | None = None
    best_score = -np.inf
    for r in range(restarts):
        g = _generator(device, seed * 1000 + r)
        init = _plus_plus(pts, k, g, seed_batch)
        if backend == "faiss":
            cent = torch.as_tensor(_faiss_lloyd(host, init.cpu().numpy(), niter, seed + r), device=device)
        else:
            cent = _torch_lloyd(pts, init, niter, g)
        assign, sims = _assign(pts, cent)
        score = float(sims.sum())
        if score > best_score:
            best, best_score = assign, score
    assert best is not None, "no restart gave a finite score"
    return best.cpu().numpy().astype(np.int64)
