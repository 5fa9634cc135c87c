"""Benchmark inputs (random token ids with lengths drawn uniformly) and their FLOP counts."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def random_rows(n: int, low: int, high: int, vocab: int, seed: int) -> list[list[int]]:
    """n rows of token ids, lengths uniform in [low, high], ids uniform over the vocabulary."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(low, high + 1, size=n)
    return [rng.integers(0, vocab, size=int(k)).tolist() for k in lengths]


@dataclass(frozen=True)
class Shape:
    """What a forward pass costs per token: 2 x non-embedding parameters, plus attention
    (QK^T and AV: 4 x attended keys x query width per layer per token)."""

    params: int  # non-embedding
    layers: int
    query_width: int  # heads x head_dim

    @classmethod
    def of(cls, model) -> "Shape":
        from harness.bench.archs import non_embedding_parameters

        c = model.config
        return cls(non_embedding_parameters(model), c.num_hidden_layers, c.num_attention_heads * c.head_dim)

    def causal_flops(self, length: int, offset: int = 0) -> float:
        """`length` new tokens after `offset` cached ones: token i attends offset + i + 1 keys."""
        keys = length * offset + length * (length + 1) / 2
        return 2.0 * self.params * length + 4.0 * self.layers * self.query_width * keys

    def rows_flops(self, rows: Sequence[Sequence[int]]) -> float:
        return sum(self.causal_flops(len(r)) for r in rows)
