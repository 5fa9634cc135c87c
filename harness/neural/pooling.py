"""Pooling of token states into one vector per sequence."""

from __future__ import annotations

import torch


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens (mask 1), in fp32 for a stable sum."""
    m = mask.unsqueeze(-1).to(torch.float32)
    return (hidden.to(torch.float32) * m).sum(1) / m.sum(1).clamp(min=1e-9)


def last_token_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """State of the last real token of each row, whatever the padding side."""
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask.bool(), positions, torch.full_like(positions, -1)).max(dim=1).values
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
