"""Bi-encoders and the one encoding path they all use.

A `BiEncoder` turns texts into features (token ids, or LUAR's episodes of chunks), collates
a batch of features into tensors, and embeds them. `encode_texts` runs it: texts already in
the embedding cache are skipped, the rest are batched longest-first under a token budget,
embedded under bf16 autocast on CUDA (fp32 on CPU) and cached shard by shard.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np
import torch

from harness.neural.batching import token_budget_batches
from harness.neural.device import autocast
from harness.neural.embed_cache import EmbeddingCache, cached_encode
from harness.neural.pooling import mean_pool


class BiEncoder(torch.nn.Module):
    """Subclasses define featurize/feature_length/collate/embed and say how to compare vectors."""

    similarity: str = "cosine"  # or "dot"
    max_length: int = 512

    def featurize(self, texts: Sequence[str]) -> list[Any]:
        raise NotImplementedError

    def feature_length(self, feature: Any) -> int:
        return len(feature)

    def collate(self, features: Sequence[Any]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def embed(self, **batch: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, **batch: torch.Tensor) -> torch.Tensor:  # what DDP wraps
        return self.embed(**batch)

    def identity(self) -> str:
        """What makes two instances compute the same function (for the embedding cache)."""
        raise NotImplementedError

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    @staticmethod
    def freeze_unused_pooler(backbone: torch.nn.Module) -> None:
        """BERT-style pooler layers are never used by these encoders; a trainable parameter that
        gets no gradient would also stall DDP's gradient reduction, so freeze it."""
        pooler = getattr(backbone, "pooler", None)
        if pooler is not None:
            for p in pooler.parameters():
                p.requires_grad_(False)

    def enable_gradient_checkpointing(self) -> None:
        pass


class TokenBiEncoder(BiEncoder):
    """A Hugging Face encoder or decoder read as token ids, padded on the right, mean-pooled."""

    def __init__(self, backbone: torch.nn.Module, tokenizer, max_length: int = 512):
        super().__init__()
        self.backbone = backbone
        self.freeze_unused_pooler(backbone)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)

    def featurize(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]

    padding_side = "right"

    def collate(self, features: Sequence[list[int]]) -> dict[str, torch.Tensor]:
        width = max(len(f) for f in features)
        ids = torch.full((len(features), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(features), width), dtype=torch.long)
        for i, f in enumerate(features):
            span = slice(0, len(f)) if self.padding_side == "right" else slice(width - len(f), width)
            ids[i, span] = torch.tensor(f, dtype=torch.long)
            mask[i, span] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # Encoders make their own position ids (RoBERTa's start after the padding index), so
        # none are passed here; decoders read with left padding override this (reranker).
        return self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return mean_pool(self.hidden_states(input_ids, attention_mask), attention_mask)

    def enable_gradient_checkpointing(self) -> None:
        self.backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


@torch.inference_mode()
def embed_features(model: BiEncoder, features: Sequence[Any], device: torch.device, *, max_tokens: int = 65536,
                   max_batch: int = 512, progress: bool = False, desc: str = "encoding",
                   on_batch=None) -> np.ndarray:
    """Embed features in token-budget batches; returns float32 rows in input order."""
    from tqdm.auto import tqdm

    out: list[np.ndarray | None] = [None] * len(features)
    batches = token_budget_batches([model.feature_length(f) for f in features], max_tokens, max_batch)
    was_training = model.training
    model.eval()
    try:
        for batch in tqdm(batches, desc=desc, unit="batch", disable=not progress, file=sys.stderr):
            tensors = {k: v.to(device) for k, v in model.collate([features[i] for i in batch]).items()}
            with autocast(device):
                vecs = model.embed(**tensors).float().cpu().numpy()
            for i, v in zip(batch, vecs):
                out[i] = v
    finally:
        model.train(was_training)
    return np.stack(out) if out else np.zeros((0, 0), dtype=np.float32)


def encode_texts(model: BiEncoder, texts: Sequence[str], device: torch.device, *, cache: EmbeddingCache | None = None,
                 max_tokens: int = 65536, max_batch: int = 512, progress: bool = True, flush_every: int = 4096,
                 desc: str = "encoding") -> np.ndarray:
    """Vectors for `texts` (float32, not normalised), using and filling the cache."""
    def encode(chunk: list[str]) -> np.ndarray:
        return embed_features(model, model.featurize(chunk), device, max_tokens=max_tokens, max_batch=max_batch,
                              progress=progress, desc=desc)

    return cached_encode(texts, cache, encode, flush_every=flush_every)
