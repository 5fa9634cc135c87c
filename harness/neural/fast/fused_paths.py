"""Embedding and prefix scoring over a FusedDecoder: the harness's fast paths for LLM backbones.

Rows are taken longest first and grouped under a token budget: packed end to end, or padded
to the group's longest (which, sorted, adds little). Each group is one forward. Vectors stay
on the device until the end, so the host lays out the next group while the device runs this one.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from harness.neural.batching import in_input_order, token_budget_batches
from harness.neural.fast.fused_decoder import FusedDecoder, Packed, Padded, to_device


def packs(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices, longest first, cut into packs of at most max_tokens tokens (a longer row alone)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    out: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in order:
        if current and used + lengths[i] > max_tokens:
            out.append(current)
            current, used = [], 0
        current.append(i)
        used += lengths[i]
    if current:
        out.append(current)
    return out


def _segments(packed: Packed, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(row index of each real token, row lengths) from the host-side lengths: no device read."""
    lengths = np.asarray(packed.lengths[:n], dtype=np.int64)
    device = packed.ids.device
    return to_device(np.repeat(np.arange(n), lengths), device), to_device(lengths, device)


def mean_pool_packed(hidden: torch.Tensor, packed: Packed, n: int) -> torch.Tensor:
    seg, lengths = _segments(packed, n)
    sums = torch.zeros((n, hidden.shape[1]), dtype=torch.float32, device=hidden.device)
    sums.index_add_(0, seg, hidden[: seg.numel()].float())
    return sums / lengths[:, None].float()


def last_token_packed(hidden: torch.Tensor, packed: Packed, n: int) -> torch.Tensor:
    return hidden[packed.cu_seqlens[1 : n + 1].long() - 1]


def _pool_padded(hidden: torch.Tensor, batch: Padded, pooling: str) -> torch.Tensor:
    n, width = batch.ids.shape
    h = hidden.view(n, width, -1)
    lengths = to_device(np.asarray(batch.lengths, dtype=np.int64), h.device)
    if pooling == "last":
        return h[torch.arange(n, device=h.device), lengths - 1]
    mask = (torch.arange(width, device=h.device)[None, :] < lengths[:, None]).unsqueeze(-1)
    return (h.float() * mask).sum(1) / lengths[:, None].float()


@torch.inference_mode()
def embed_fused(
    decoder: FusedDecoder,
    rows: Sequence[Sequence[int]],
    device: torch.device,
    *,
    max_tokens: int = 65536,
    pooling: str = "mean",
    finish: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> np.ndarray:
    """finish(pooled states) per row (identity if None), float32 rows in input order; pooling is
    "mean" (fp32 mean over the row) or "last" (the row's last token). The budget counts padding."""
    lengths = [len(r) for r in rows]
    padded = decoder.layout == "padded"
    groups = token_budget_batches(lengths, max_tokens) if padded else packs(lengths, max_tokens)
    parts = []
    for group in groups:
        chosen = [rows[i] for i in group]
        if padded:
            batch = Padded.of(chosen, device)
            pooled = _pool_padded(decoder.forward(batch), batch, pooling)
        else:
            packed = Packed.of(chosen, device)
            pooled = (last_token_packed if pooling == "last" else mean_pool_packed)(
                decoder.forward(packed), packed, len(group)
            )
        parts.append((finish(pooled) if finish else pooled).float())
    return in_input_order(parts, groups, len(rows))


@torch.inference_mode()
def score_fused_continuations_on_device(
    decoder: FusedDecoder,
    head: Callable[[torch.Tensor], torch.Tensor],
    prefix: Sequence[int],
    continuations: Sequence[Sequence[int]],
    device: torch.device,
    *,
    max_tokens: int = 65536,
) -> torch.Tensor:
    """head(last state of prefix + c) per continuation, float32 [n, d] in input order, left on the
    device: nothing here waits for it, so the host lays out the next query while this one runs.
    The prefix runs once; its keys and values serve every pack. The budget counts continuation tokens."""
    if not prefix or any(not c for c in continuations):
        raise ValueError("prefix and every continuation need at least one token")
    _, cache = decoder.forward(Packed.of([prefix], device), capture=True)
    parts, order = [], []
    for group in packs([len(c) for c in continuations], max_tokens):
        packed = Packed.of([continuations[i] for i in group], device, offset=len(prefix))
        last = last_token_packed(decoder.forward(packed, prefix=cache), packed, len(group))
        parts.append(head(last).float())
        order += group
    scores = torch.cat(parts)
    out = torch.empty_like(scores)
    out[to_device(np.asarray(order, dtype=np.int64), scores.device)] = scores
    return out


def score_fused_continuations(
    decoder: FusedDecoder,
    head: Callable[[torch.Tensor], torch.Tensor],
    prefix: Sequence[int],
    continuations: Sequence[Sequence[int]],
    device: torch.device,
    *,
    max_tokens: int = 65536,
) -> np.ndarray:
    """score_fused_continuations_on_device, read back to the host."""
    scores = score_fused_continuations_on_device(decoder, head, prefix, continuations, device, max_tokens=max_tokens)
    return scores.cpu().numpy()
