from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SBERTConfig:
    """model: hub id or local folder (see harness.neural.models.resolve_model).
    max_seq_length: None keeps the model's own limit (384 word pieces for all-mpnet-base-v2).
    device: "auto" picks CUDA when available. dtype: "auto" = float16 on CUDA, float32 on CPU.
    """

    model: str = "sentence-transformers/all-mpnet-base-v2"
    batch_size: int = 64  # texts per encoding batch
    max_seq_length: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    cache: bool = True  # embedding cache (harness.neural.embed_cache): each distinct text encoded once

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.dtype not in ("auto", "float32", "float16", "bfloat16"):
            raise ValueError(f"dtype must be auto, float32, float16 or bfloat16, got {self.dtype!r}")
