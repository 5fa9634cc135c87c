"""Text encoders and the one encoding path they all use.

A `TextEncoder` turns texts into features (token ids, or LUAR's episodes of chunks), collates
a batch of features into tensors, and embeds them: the retrievers' bi-encoders and the
reranker's pair scorer (a cross-encoder, whose "text" is a query and candidate pair) alike.
`TokenEncoder` is the one over a Hugging Face backbone read as token ids. `encode_texts` runs
an encoder: texts already in the embedding cache are skipped, the rest are batched
longest-first under a token budget, embedded under bf16 autocast on CUDA (fp32 on CPU) and
cached shard by shard.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import numpy as np
import torch

from harness.neural.batching import in_input_order, token_budget_batches
from harness.neural.device import autocast
from harness.neural.embed_cache import EmbeddingCache, cached_encode
from harness.neural.pooling import last_token_pool, mean_pool


class TextEncoder(torch.nn.Module):
    """Subclasses define featurize/feature_length/collate/embed and say how to compare vectors."""

    similarity: str = "cosine"  # or "dot"
    max_length: int = 512

    def featurize(self, texts: Sequence[str]) -> list[Any]:
        raise NotImplementedError

    def feature_length(self, feature: Any) -> int:
        return len(feature)

    def collate(self, features: Sequence[Any]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def embed(self, *args: Any, **batch: Any) -> torch.Tensor:  # each subclass names the tensors its collate makes
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

    def enable_gradient_checkpointing(self) -> bool:
        """Recompute activations in the backward pass; False when the backbone cannot."""
        return False


def checkpoint_backbone(backbone) -> bool:
    """Turn on a Hugging Face model's gradient checkpointing; False (training goes on without it,
    using more memory) for architectures that lack it, e.g. MPNet."""
    if not getattr(backbone, "supports_gradient_checkpointing", False):
        return False
    backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return True


class TokenEncoder(TextEncoder):
    """A Hugging Face encoder or decoder read as token ids, padded on the right, mean-pooled."""

    def __init__(self, backbone: torch.nn.Module, tokenizer, max_length: int = 512, pad_id: int | None = None):
        """tokenizer may be None for callers that bring token ids (benchmarks); then pad_id is needed."""
        super().__init__()
        self.backbone = backbone
        self.freeze_unused_pooler(backbone)
        self.tokenizer = tokenizer
        self.max_length = max_length
        if pad_id is None:
            if tokenizer is None:
                raise ValueError("TokenEncoder without a tokenizer needs pad_id")
            pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
        self.pad_id = pad_id

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

    def enable_gradient_checkpointing(self) -> bool:
        return checkpoint_backbone(self.backbone)

    pooling = "mean"  # or "last" (the last real token's state)
    fused_decoder = None  # set by harness.neural.fast.enable_fast_path for Llama-family decoders
    fast_embed = None  # likewise: embeds features through the fused decoder, replacing embed_features' loop

    def finish(self, pooled: torch.Tensor) -> torch.Tensor:
        """What follows pooling (a projection, a head); identity here."""
        return pooled

    def pool(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.pooling == "last":
            return last_token_pool(hidden, attention_mask)
        return mean_pool(hidden, attention_mask)

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.finish(self.pool(self.hidden_states(input_ids, attention_mask), attention_mask))


@torch.inference_mode()
def embed_features(
    model: TextEncoder,
    features: Sequence[Any],
    device: torch.device,
    *,
    max_tokens: int = 65536,
    max_batch: int = 512,
    progress: bool = False,
    desc: str = "encoding",
    amp: bool = True,
    advance: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Embed features in token-budget batches; returns float32 rows in input order.

    progress: a bar of its own (`harness.foundation.progress.phase(desc)`, documents, with the time left);
    advance: a caller's bar instead, moved by each batch's documents. Neither changes the batches.

    amp: bf16 autocast on CUDA (for fp32 master weights in training); a model already in its
    inference dtype needs none. The packed path runs in the model's own dtype.

    Vectors stay on the device until the end, so the host collates the next batch while the
    device computes this one (no synchronisation per batch).
    """
    from harness.neural.oom import retry_on_oom

    def run(budget: int) -> np.ndarray:
        if advance is not None or not progress:
            return _embed_features(
                model, features, device, max_tokens=budget, max_batch=max_batch, amp=amp, advance=advance
            )
        from harness.foundation.progress import phase

        with phase(desc, len(features), "doc") as own:
            return _embed_features(
                model, features, device, max_tokens=budget, max_batch=max_batch, amp=amp, advance=own
            )

    # Out of GPU memory: halve the token budget and retry (said once), rather than lose the run.
    return retry_on_oom(run, max_tokens, what=desc)


def _embed_features(
    model: TextEncoder,
    features: Sequence[Any],
    device: torch.device,
    *,
    max_tokens: int,
    max_batch: int,
    amp: bool,
    advance: Callable[[int], None] | None,
) -> np.ndarray:
    if getattr(model, "fast_embed", None) is not None:
        out = model.fast_embed(features, device, max_tokens=max_tokens)
        if advance is not None:
            advance(len(features))
        return out
    batches = token_budget_batches([model.feature_length(f) for f in features], max_tokens, max_batch)
    pin = device.type == "cuda"
    parts: list[torch.Tensor] = []
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            host = model.collate([features[i] for i in batch])
            tensors = {k: (v.pin_memory() if pin else v).to(device, non_blocking=True) for k, v in host.items()}
            with autocast(device, amp):
                parts.append(model.embed(**tensors).float())
            if advance is not None:
                advance(len(batch))
    finally:
        model.train(was_training)
    return in_input_order(parts, batches, len(features))


def encode_texts(
    model: TextEncoder,
    texts: Sequence[str],
    device: torch.device,
    *,
    cache: EmbeddingCache | None = None,
    max_tokens: int = 65536,
    max_batch: int = 512,
    progress: bool = True,
    flush_every: int = 4096,
    desc: str = "encoding",
) -> np.ndarray:
    """Vectors for `texts` (float32, not normalised), using and filling the cache.

    Under torchrun (several processes) the texts are sharded over the ranks' devices.
    """
    from harness.foundation.progress import phase
    from harness.neural.distributed import world_size

    with phase(desc, len(texts), "doc") if progress else contextlib.nullcontext(None) as advance:

        def encode(chunk: list[str]) -> np.ndarray:
            features = model.featurize(chunk)
            if world_size() > 1:
                from harness.neural.sharded import embed_sharded

                out = embed_sharded(
                    model, features, device, embed=embed_features, max_tokens=max_tokens, max_batch=max_batch
                )
                if advance is not None:
                    advance(len(chunk))
                return out
            return embed_features(model, features, device, max_tokens=max_tokens, max_batch=max_batch, advance=advance)

        # one bar over every text the cache lacks, however many chunks they are cached in
        return cached_encode(
            texts, cache, encode, flush_every=flush_every, on_todo=advance.set_total if advance is not None else None
        )
