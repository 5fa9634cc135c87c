"""The LUAR architecture in the released checkpoints' parameter layout (transformer.*, linear.*)."""

from __future__ import annotations

import math
from typing import Sequence

import torch

from harness.api import TextEncoder, checkpoint_backbone, mean_pool


class LUAR(TextEncoder):
    similarity = "cosine"

    def __init__(
        self,
        transformer,
        tokenizer,
        embedding_size: int = 512,
        chunk_tokens: int = 32,
        max_chunks: int = 16,
        identity: str = "luar",
    ):
        super().__init__()
        self.transformer = transformer
        self.freeze_unused_pooler(transformer)
        self.tokenizer = tokenizer
        self.linear = torch.nn.Linear(transformer.config.hidden_size, embedding_size)
        self.chunk_tokens, self.max_chunks = chunk_tokens, max_chunks
        self.max_length = chunk_tokens * max_chunks
        self._identity = identity

    # -- features: a document becomes an episode of chunks, each with its own special tokens
    def featurize(self, texts: Sequence[str]) -> list[list[list[int]]]:
        body = self.chunk_tokens - 2
        ids = self.tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=body * self.max_chunks)[
            "input_ids"
        ]
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        return [[[cls, *doc[i : i + body], sep] for i in range(0, max(len(doc), 1), body)] for doc in ids]

    def feature_length(self, feature) -> int:
        return len(feature) * self.chunk_tokens

    def collate(self, features) -> dict[str, torch.Tensor]:
        n = max(len(f) for f in features)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(features), n, self.chunk_tokens), pad, dtype=torch.long)
        mask = torch.zeros((len(features), n, self.chunk_tokens), dtype=torch.long)
        for i, episode in enumerate(features):
            for j, chunk in enumerate(episode):
                ids[i, j, : len(chunk)] = torch.tensor(chunk)
                mask[i, j, : len(chunk)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, n, length = input_ids.shape
        present = attention_mask.sum(-1) > 0  # (b, n): which chunks exist
        flat_ids, flat_mask = input_ids[present], attention_mask[present]
        states = self.transformer(input_ids=flat_ids, attention_mask=flat_mask).last_hidden_state
        pooled = mean_pool(states, flat_mask)
        chunks = pooled.new_zeros((b, n, pooled.shape[-1]))
        chunks[present] = pooled
        # parameter-free scaled dot-product self-attention across the episode (missing chunks masked)
        scores = chunks @ chunks.transpose(1, 2) / math.sqrt(chunks.shape[-1])
        scores = scores.masked_fill(~present[:, None, :], float("-inf"))
        mixed = torch.softmax(scores, dim=-1) @ chunks
        mixed = mixed.masked_fill(~present[:, :, None], float("-inf"))
        episode = mixed.max(dim=1).values
        return self.linear(episode.to(self.linear.weight.dtype))

    def identity(self) -> str:
        return self._identity

    def enable_gradient_checkpointing(self) -> bool:
        return checkpoint_backbone(self.transformer)


def released_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Map a released LUAR checkpoint's keys onto this module (same names; position ids dropped)."""
    return {k: v for k, v in state.items() if not k.endswith("position_ids")}
