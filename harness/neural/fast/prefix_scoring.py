"""Scoring many continuations of one shared prefix: the prefix is encoded once.

A cross-encoder reads `prefix + continuation` for each of a query's candidates. Encoding the
prefix once (batch 1), keeping each layer's keys and values, and running only the
continuations (right-padded, length-sorted, positions offset by the prefix length)
computes the same last-token states as the concatenated pairs, for the continuations' tokens
alone and with no padding in front of them. Needs a decoder switched to `aa_causal`.
"""

from __future__ import annotations

from typing import Callable, Sequence, cast

import numpy as np
import torch

from harness.neural.batching import right_padded, token_budget_batches


@torch.inference_mode()
def score_continuations(
    backbone: torch.nn.Module,
    head: Callable[[torch.Tensor], torch.Tensor],
    prefix: Sequence[int],
    continuations: Sequence[Sequence[int]],
    device: torch.device,
    *,
    pad_id: int,
    max_tokens: int = 65536,
    max_batch: int = 512,
) -> np.ndarray:
    """head(last real token state of prefix + c) for each continuation c, as float32 [len, out]."""
    from harness.neural.fast.causal_attention import is_enabled

    if not is_enabled(backbone):
        raise ValueError("score_continuations needs a decoder switched to aa_causal (causal_attention.enable)")
    if not prefix or any(not c for c in continuations):
        raise ValueError("prefix and every continuation need at least one token")
    captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    backbone(
        input_ids=torch.as_tensor([list(prefix)], dtype=torch.long, device=device), aa_capture=captured, use_cache=False
    )
    offset = len(prefix)
    out: list[np.ndarray | None] = [None] * len(continuations)
    # each row's attention also reads the prefix: count it in the budget so memory stays flat
    for batch in token_budget_batches([len(c) + offset for c in continuations], max_tokens, max_batch):
        ids, mask = right_padded([continuations[i] for i in batch], pad_id)
        ids, lengths = ids.to(device), mask.sum(1).to(device)
        positions = torch.arange(offset, offset + ids.shape[1], device=device).expand(ids.shape[0], -1)
        hidden = backbone(input_ids=ids, position_ids=positions, aa_prefix=captured, use_cache=False).last_hidden_state
        last = hidden[torch.arange(ids.shape[0], device=device), lengths - 1]
        scores = head(last).float().cpu().numpy()
        for i, s in zip(batch, scores):
            out[i] = s
    return np.stack(cast("list[np.ndarray]", out)) if out else np.zeros((0, 1), dtype=np.float32)
