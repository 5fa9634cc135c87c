from __future__ import annotations

from typing import Sequence

from harness.api import Document, top_k
from plugins.bm25.config import BM25Config
from plugins.bm25.index import BM25Index
from plugins.bm25.tokenize import tokenize


class BM25System:
    """Indexes the candidate pool of each split, then scores every query against it."""

    def __init__(self, config: BM25Config):
        self.config = config

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        c = self.config
        index = BM25Index([tokenize(d.fullText) for d in candidates], c.k1, c.b, c.epsilon)
        ids = [d.documentID for d in candidates]
        out = {}
        for start in range(0, len(queries), 256):  # bounded memory on large pools
            block = queries[start : start + 256]
            scores = index.scores([tokenize(q.fullText) for q in block])
            out.update({q.documentID: r for q, r in zip(block, top_k(scores, ids, k, [q.documentID for q in block]))})
        return out
