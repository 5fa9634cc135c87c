"""Texts -> SBERT vectors through the embedding cache, for plugins that need a neighbourhood (reranker negatives)."""

from __future__ import annotations

from typing import Callable

import numpy as np


def sbert_embedder(model: str, device: str, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    """The model loads on first use; the cache lets a GPU machine fill it and a CPU finish."""

    def embed(texts: list[str]) -> np.ndarray:
        from plugins.sbert.config import SBERTConfig
        from plugins.sbert.system import SBERTSystem

        system = SBERTSystem(SBERTConfig(model=model, batch_size=batch_size, device=device))
        return system.encode_texts(texts)

    return embed
