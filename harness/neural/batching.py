"""Batching: length bucketing with a token budget, right padding, and putting results back in order."""

from __future__ import annotations

from typing import Sequence


def token_budget_batches(lengths: Sequence[int], max_tokens: int, max_batch: int = 512) -> list[list[int]]:
    """Indices grouped longest first so that len(batch) * longest <= max_tokens (at least one each).

    Sorting by length means little padding; the budget keeps memory flat across batches.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        if current and (longest * (len(current) + 1) > max_tokens or len(current) >= max_batch):
            batches.append(current)
            current = []
        if not current:
            longest = lengths[i]  # sorted: the first of a batch is its longest
        current.append(i)
    if current:
        batches.append(current)
    return batches


def right_padded(rows: Sequence[Sequence[int]], pad_id: int = 0):
    """(ids, mask) LongTensors [len(rows), longest], each row's tokens first, then padding."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    return ids, mask


def in_input_order(parts: Sequence, batches: Sequence[Sequence[int]], n: int):
    """float32 numpy rows [n, dim] from per-batch device tensors (batch b holds rows batches[b]).
    One copy to the host at the end, so nothing waits on the device between batches."""
    import numpy as np
    import torch

    if not parts:
        return np.zeros((0, 0), dtype=np.float32)
    order = torch.as_tensor([i for b in batches for i in b], device=parts[0].device)
    out = torch.empty((n, parts[0].shape[1]), dtype=torch.float32, device=parts[0].device)
    out[order] = torch.cat(parts).float()
    return out.cpu().numpy()
