from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.data.documents import Document
from harness.evaluation.ranking import top_k
from plugins.char_ngram.config import CharNgramConfig


class CharNgramSystem:
    """TF-IDF fitted on each pool (the index), cosine. The system is built once for all seeds and
    keeps every text's n-gram counts (plugins.char_ngram.tfidf), so a document shared by the
    seeds' pools is read once; each seed's idf is still its own pool's."""

    def __init__(self, config: CharNgramConfig):
        self.config = config
        self._counts = None

    def vectorizer(self):
        from sklearn.feature_extraction.text import TfidfVectorizer

        c = self.config
        return TfidfVectorizer(analyzer=c.analyzer, ngram_range=(c.ngram_min, c.ngram_max), lowercase=c.lowercase,
                               sublinear_tf=c.sublinear_tf, min_df=c.min_df, max_features=c.max_features,
                               dtype=np.float32)  # rows come out L2-normalised: dot product = cosine

    def prepare(self, texts: Sequence[str]) -> None:
        """Count the texts not counted yet (numeric n-gram keys for "char" n-grams up to 4 characters,
        else the analyzer's strings)."""
        from plugins.char_ngram.tfidf import (
            AlphabetFull,
            KeyedCounts,
            NgramCounts,
            char_analyzer,
        )

        vec = self.vectorizer()
        if self._counts is None:
            try:
                self._counts = KeyedCounts(vec)
            except ValueError:
                self._counts = NgramCounts(char_analyzer(vec))
        try:
            self._counts.prepare(texts)
        except AlphabetFull:
            self._counts = NgramCounts(char_analyzer(vec))

    def fit_pool(self, texts: Sequence[str]):
        """The pool's TfidfVectorizer, bit for bit, from the cached counts."""
        from plugins.char_ngram.tfidf import PoolTfidf

        self.prepare(texts)
        c = self.config
        return PoolTfidf(self._counts, texts, min_df=c.min_df, max_features=c.max_features,
                         sublinear_tf=c.sublinear_tf, dtype=np.float32)

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        self.prepare([d.fullText for d in candidates] + [q.fullText for q in queries])  # one alphabet for both
        pool = self.fit_pool([d.fullText for d in candidates])
        # candidates x queries, each row's terms in column order: every score sums the same products
        # in the same order as queries x candidates^T did (column order of the query row), so the
        # scores are the same bits, without transposing the large candidate matrix
        cand = pool.matrix.tocsr().sorted_indices()
        ids = [d.documentID for d in candidates]
        out = {}
        for start in range(0, len(queries), 256):
            block = queries[start:start + 256]
            scores = (cand @ pool.transform([q.fullText for q in block]).T).T.toarray()
            out.update({q.documentID: r for q, r in zip(block, top_k(scores, ids, k, [q.documentID for q in block]))})
        return out
