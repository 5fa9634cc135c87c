from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.api import Document, top_k
from plugins.char_ngram.config import CharNgramConfig


class CharNgramSystem:
    """TF-IDF fitted on each pool (the index), cosine. The system is built once for all seeds and
    keeps every text's n-gram counts in one matrix (plugins.char_ngram.tfidf), so a text is read
    once per collection; each seed's idf is still its own pool's, computed from document
    frequencies, and the scores are the per-pool TfidfVectorizer's bit for bit."""

    def __init__(self, config: CharNgramConfig):
        self.config = config
        self._counts = None

    def vectorizer(self):
        from sklearn.feature_extraction.text import TfidfVectorizer

        c = self.config
        return TfidfVectorizer(
            analyzer=c.analyzer,
            ngram_range=(c.ngram_min, c.ngram_max),
            lowercase=c.lowercase,
            sublinear_tf=c.sublinear_tf,
            min_df=c.min_df,
            max_features=c.max_features,
            dtype=np.float32,
        )  # rows come out L2-normalised: dot product = cosine

    def counts(self, texts: Sequence[str]):
        """The CountMatrix of every text seen so far, the given ones counted if new."""
        from plugins.char_ngram.tfidf import CountMatrix

        if self._counts is None:
            self._counts = CountMatrix(self.vectorizer())
        self._counts.add(texts)
        return self._counts

    def fit_pool(self, texts: Sequence[str]):
        """The pool's TfidfVectorizer (vocabulary, idf, vectors of any counted rows), from the counts."""
        from plugins.char_ngram.tfidf import PoolTfidf

        counts = self.counts(texts)
        c = self.config
        return PoolTfidf(
            counts, counts.rows(texts), min_df=c.min_df, max_features=c.max_features, sublinear_tf=c.sublinear_tf
        )

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        from plugins.char_ngram.tfidf import NotExact

        query_texts, cand_texts = [q.fullText for q in queries], [d.fullText for d in candidates]
        counts = self.counts(cand_texts + query_texts)  # every text before the pool: one numbering of terms
        pool = self.fit_pool(cand_texts)
        ids, qids = [d.documentID for d in candidates], [q.documentID for q in queries]
        try:
            blocks = pool.scores(counts.rows(query_texts), counts.rows(cand_texts))
        except NotExact:  # a norm could differ in its last bit from scikit-learn's: fit it as it does
            return self.rank_refit(queries, candidates, k)
        out = {}
        for start, scores in blocks:
            block = qids[start : start + len(scores)]
            out.update(zip(block, top_k(scores, ids, k, block)))
        return out

    def rank_refit(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        """The reference: scikit-learn's TfidfVectorizer fitted on this pool, queries transformed, cosine
        (what the system did before it kept counts; `rank` returns the same rankings)."""
        vec = self.vectorizer()
        cand = vec.fit_transform([d.fullText for d in candidates]).tocsr()
        ids = [d.documentID for d in candidates]
        out = {}
        for start in range(0, len(queries), 256):
            block = queries[start : start + 256]
            scores = (vec.transform([q.fullText for q in block]) @ cand.T).toarray()
            out.update({q.documentID: r for q, r in zip(block, top_k(scores, ids, k, [q.documentID for q in block]))})
        return out
