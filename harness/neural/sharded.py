"""Encoding sharded over the processes of a torchrun job: one GPU each, every rank gets all rows.

Rows are dealt longest-first round-robin, so each rank holds nearly the same number of
tokens; each rank runs the single-device path on its share, and an all-gather puts the
vectors back in input order on every rank.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.distributed as dist


def embed_sharded(
    model: Any,
    features: Sequence[Any],
    device: torch.device,
    *,
    embed: Callable[..., np.ndarray],
    max_tokens: int = 65536,
    max_batch: int = 512,
) -> np.ndarray:
    """`embed(model, features, device, max_tokens=, max_batch=)` is the single-device path
    (`harness.neural.encoder.embed_features`); it is passed in so this layer imports nothing above it."""
    rank, size = dist.get_rank(), dist.get_world_size()
    order = sorted(range(len(features)), key=lambda i: (-model.feature_length(features[i]), i))
    shares = [order[r::size] for r in range(size)]
    mine = embed(model, [features[i] for i in shares[rank]], device, max_tokens=max_tokens, max_batch=max_batch)
    comm = device if dist.get_backend() == "nccl" else torch.device("cpu")
    dim = torch.tensor([mine.shape[1] if len(shares[rank]) else 0], device=comm)
    dist.all_reduce(dim, op=dist.ReduceOp.MAX)
    width = max(len(s) for s in shares)
    local = torch.zeros((width, int(dim)), dtype=torch.float32, device=comm)
    if len(shares[rank]):
        local[: len(shares[rank])] = torch.from_numpy(mine).to(comm)
    parts = [torch.empty_like(local) for _ in range(size)]
    dist.all_gather(parts, local)
    out = np.empty((len(features), int(dim)), dtype=np.float32)
    for share, part in zip(shares, parts):
        out[share] = part[: len(share)].cpu().numpy()
    return out
