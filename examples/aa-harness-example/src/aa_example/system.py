"""An Encoder: encode(documents) -> one unit vector per document; the harness does the search."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from aa_example.config import FunctionWordConfig

TOKEN = re.compile(r"[a-z']+")


class FunctionWordEncoder:
    def __init__(self, config: FunctionWordConfig):
        self.config = config
        self.index = {w: i for i, w in enumerate(config.words)}

    def _counts(self, text: str) -> np.ndarray:
        row = np.full(len(self.index), self.config.smoothing, dtype=np.float64)
        tokens = TOKEN.findall(text.lower())
        for t in tokens:
            i = self.index.get(t)
            if i is not None:
                row[i] += 1
        return row / max(len(tokens), 1)

    def encode(self, documents: Sequence) -> np.ndarray:
        """One vector per document, computed from that document alone: the harness encodes in
        chunks of its choosing, so a vector must not depend on which other texts share the call."""
        vecs = np.stack([self._counts(d.fullText) for d in documents]) if documents else np.zeros((0, len(self.index)))
        if self.config.standardise and len(vecs):
            # each document's profile over the words, centred and scaled on its own
            logs = np.log(vecs + 1e-9)  # finite even with smoothing 0
            vecs = (logs - logs.mean(axis=1, keepdims=True)) / (logs.std(axis=1, keepdims=True) + 1e-9)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs.astype(np.float32)

    def describe(self) -> dict:
        """Recorded in each result's `extra`."""
        return {"vocabulary_size": len(self.index)}
