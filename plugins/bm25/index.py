"""A vectorized BM25 Okapi index (scipy sparse), equal to rank-bm25's BM25Okapi.

rank-bm25 scores one query by looping over its tokens and, for each, over every document
in Python; an HRS1-sized split (34,000 candidates, 120 queries of ~600 words) would take
hours. Here the per-(document, term) weights are precomputed once as a sparse matrix and
all queries are scored with one sparse product. Like rank-bm25, a term repeated in the
query counts once per occurrence.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp


class BM25Index:
    def __init__(self, corpus: Sequence[Sequence[str]], k1: float = 0.25, b: float = 0.75, epsilon: float = 0.25):
        vocab: dict[str, int] = {}
        indptr, indices = [0], []
        for tokens in corpus:
            indices.extend(vocab.setdefault(t, len(vocab)) for t in tokens)
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float64)
        tf = sp.csr_matrix(
            (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr)), shape=(len(corpus), len(vocab))
        )
        tf.sum_duplicates()  # counts per (document, term)
        n_docs = len(corpus)
        doc_len = np.diff(np.asarray(indptr)).astype(np.float64)
        avgdl = doc_len.sum() / n_docs
        df = np.bincount(tf.indices, minlength=len(vocab)).astype(np.float64)
        idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
        idf[idf < 0] = epsilon * idf.mean()  # rank-bm25 floors negative idf at epsilon * average idf
        rows = np.repeat(np.arange(n_docs), np.diff(tf.indptr))
        norm = k1 * (1 - b + b * doc_len[rows] / avgdl)
        tf.data = idf[tf.indices] * tf.data * (k1 + 1) / (tf.data + norm)
        self.weights = tf.tocsc()
        self.vocab = vocab

    def query_matrix(self, queries: Sequence[Sequence[str]]) -> sp.csr_matrix:
        rows, cols = [], []
        for i, tokens in enumerate(queries):
            for t in tokens:
                j = self.vocab.get(t)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(queries), len(self.vocab)))
        m.sum_duplicates()
        return m

    def scores(self, queries: Sequence[Sequence[str]]) -> np.ndarray:
        """Dense (queries x documents) BM25 scores."""
        return (self.query_matrix(queries) @ self.weights.T).toarray()
