"""Benchmark inputs (random token ids with lengths drawn uniformly, or real texts through a
tokenizer) and their FLOP counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def text_rows(
    paths, tokenizer_ref: str, n: int, *, skip: int = 0, max_tokens: int = 512, vocab: int | None = None
) -> list[list[int]]:
    """Token ids of real texts: documents `skip`..`skip + n` of canonical JSONL files (in file
    order), each truncated to max_tokens, through a tokenizer (hub id or local folder)."""
    from harness.data.collection import read_documents
    from harness.errors import HarnessError
    from harness.neural.hf import load_tokenizer

    docs = list(read_documents(paths).values())[skip : skip + n]
    if len(docs) < n:
        raise HarnessError(f"{', '.join(map(str, paths))}: {len(docs)} documents after the first {skip}, {n} needed")
    tok = load_tokenizer(tokenizer_ref)
    rows = tok([d.fullText for d in docs], add_special_tokens=False, truncation=True, max_length=max_tokens)[
        "input_ids"
    ]
    top = max(max(r) for r in rows if r)
    if vocab is not None and top >= vocab:
        raise HarnessError(
            f"tokenizer {tokenizer_ref} gives token id {top}, outside this architecture's "
            f"vocabulary of {vocab}: use a tokenizer of the same family"
        )
    return [list(r) for r in rows]


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
    def of(cls, model) -> Shape:
        from aa_harness_bench.archs import non_embedding_parameters

        c = model.config
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads  # Qwen2's config has none
        return cls(non_embedding_parameters(model), c.num_hidden_layers, c.num_attention_heads * head_dim)

    def causal_flops(self, length: int, offset: int = 0) -> float:
        """`length` new tokens after `offset` cached ones: token i attends offset + i + 1 keys."""
        keys = length * offset + length * (length + 1) / 2
        return 2.0 * self.params * length + 4.0 * self.layers * self.query_width * keys

    def rows_flops(self, rows: Sequence[Sequence[int]]) -> float:
        return sum(self.causal_flops(len(r)) for r in rows)
