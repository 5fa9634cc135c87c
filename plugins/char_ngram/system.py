from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.data.documents import Document
from harness.evaluation.ranking import top_k
from plugins.char_ngram.config import CharNgramConfig


class CharNgramSystem:
    def __init__(self, config: CharNgramConfig):
        self.config = config

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        from sklearn.feature_extraction.text import TfidfVectorizer

        c = self.config
        vec = TfidfVectorizer(analyzer=c.analyzer, ngram_range=(c.ngram_min, c.ngram_max), lowercase=c.lowercase,
                              sublinear_tf=c.sublinear_tf, min_df=c.min_df, max_features=c.max_features,
                              dtype=np.float32)  # rows come out L2-normalised: dot product = cosine
        cand = vec.fit_transform([d.fullText for d in candidates]).tocsr()
        ids = [d.documentID for d in candidates]
        out = {}
        for start in range(0, len(queries), 256):
            block = queries[start:start + 256]
            scores = (vec.transform([q.fullText for q in block]) @ cand.T).toarray()
            out.update({q.documentID: r for q, r in zip(block, top_k(scores, ids, k, [q.documentID for q in block]))})
        return out
