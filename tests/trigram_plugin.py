"""A character-3-gram cosine system, written from docs/plugins.md the way a new user would:
an encode-only system whose vectors are raw 3-gram counts, L2-normalised. Used by the demo's
difficulty check (a plain stylometric baseline must not saturate the demo)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from harness.hookspecs import hookimpl
from harness.specs import SystemSpec

DIM = 2**15


@dataclass(frozen=True)
class TrigramConfig:
    lowercase: bool = False


class TrigramCosine:
    def __init__(self, config: TrigramConfig):
        self.config = config

    def _row(self, text: str) -> np.ndarray:
        import zlib

        text = text.lower() if self.config.lowercase else text
        row = np.zeros(DIM, dtype=np.float32)
        for gram, n in Counter(text[i : i + 3] for i in range(len(text) - 2)).items():
            row[zlib.crc32(gram.encode("utf-8")) % DIM] += n
        return row / max(float(np.linalg.norm(row)), 1e-12)

    def encode(self, documents) -> np.ndarray:
        if not documents:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._row(d.fullText) for d in documents])


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="char-3gram-cosine",
            factory="tests.trigram_plugin:TrigramCosine",
            config="tests.trigram_plugin:TrigramConfig",
            capabilities=("encode",),
            description="raw character 3-gram counts, cosine (a plugin written from the guide)",
        )
    )
