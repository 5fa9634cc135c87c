from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.api import Document, resolve_model, weights_fingerprint
from plugins.sbert.config import SBERTConfig


class SBERTSystem:
    """Encodes documents with a SentenceTransformer; unit-length vectors, so inner product = cosine."""

    def __init__(self, config: SBERTConfig):
        self.config = config
        self.path = resolve_model(config.model)  # first: a missing model fails in a second, before torch loads
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no library bars around the harness's own

        device = config.device if config.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = config.dtype if config.dtype != "auto" else ("float16" if device.startswith("cuda") else "float32")
        self.model = SentenceTransformer(self.path, device=device, model_kwargs={"torch_dtype": getattr(torch, dtype)})
        if config.max_seq_length is not None:
            self.model.max_seq_length = config.max_seq_length
        self.device, self.dtype = device, dtype
        self.cache = None
        if config.cache:
            from harness.api import (
                EmbeddingCache,
                default_cache_root,
                model_key,
            )

            ident = f"sbert|{weights_fingerprint(self.path) or self.path}"
            self.cache = EmbeddingCache(default_cache_root(), model_key(ident), self.model.max_seq_length)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts,
            batch_size=self.config.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )  # the harness shows one bar per phase

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        from harness.api import cached_encode

        return cached_encode(texts, self.cache, self._encode)

    def encode(self, documents: Sequence[Document]) -> np.ndarray:
        return self.encode_texts([d.fullText for d in documents])

    def device_name(self) -> str:
        import torch

        if self.device.startswith("cuda"):
            return f"cuda: {torch.cuda.get_device_name(torch.device(self.device))}"
        from harness.api import device_name

        return device_name()

    def describe(self) -> dict:
        return {
            "model_path": self.path,
            "weights_sha256": weights_fingerprint(self.path),
            "dtype": self.dtype,
            "max_seq_length": self.model.max_seq_length,
        }
