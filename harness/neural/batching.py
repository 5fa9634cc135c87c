"""Length bucketing with a token budget: sort by length, cut batches whose padded size fits."""
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
