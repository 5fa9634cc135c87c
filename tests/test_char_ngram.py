"""char-ngram builds each pool's TF-IDF from counts cached across pools: the matrices must be
scikit-learn's TfidfVectorizer's bit for bit, so rankings are the per-seed-fit rankings."""
from __future__ import annotations

import random

import numpy as np
import pytest

from harness.data.demo import demo_documents
from plugins.char_ngram.config import CharNgramConfig
from plugins.char_ngram.system import CharNgramSystem


def _same(a, b):
    a, b = a.tocsr(), b.tocsr()
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)  # exact: same values in the same order


@pytest.mark.parametrize("overrides", [{}, {"max_features": 3000}, {"analyzer": "char_wb", "min_df": 1, "ngram_max": 3},
                                       {"lowercase": True, "sublinear_tf": False}])
def test_pools_match_tfidfvectorizer_exactly(overrides):
    docs = [d.fullText for d in demo_documents()[:260]]
    docs[5] = ""  # an empty text
    system = CharNgramSystem(CharNgramConfig(**overrides))
    rng = random.Random(0)
    for _ in range(3):  # overlapping pools in different orders, as the seeds' pools are
        pool = rng.sample(docs[:220], 180)
        queries = rng.sample(docs, 40) + ["", "zzzz unseen \u2980 text"]
        ours = system.fit_pool(pool)
        ref = system.vectorizer()
        _same(ours.matrix, ref.fit_transform(pool))
        _same(ours.transform(queries), ref.transform(queries))
    assert len(system._counts) <= len(set(docs)) + 1  # each distinct text counted once


def test_rankings_equal_per_seed_fit():
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: F401

    from harness.evaluation.ranking import top_k

    docs = demo_documents()[:200]
    system = CharNgramSystem(CharNgramConfig())
    for lo in (0, 30):
        queries, cands = docs[lo:lo + 20], docs[lo + 20:lo + 170]
        vec = system.vectorizer()
        c = vec.fit_transform([d.fullText for d in cands])
        want = top_k((vec.transform([q.fullText for q in queries]) @ c.T).toarray(), [d.documentID for d in cands], 100)
        got = system.rank(queries, cands, 100)
        assert [got[q.documentID] for q in queries] == want


@pytest.mark.parametrize("overrides", [{}, {"ngram_min": 2, "ngram_max": 5, "lowercase": True}])
def test_fast_char_analyzer_equals_sklearn(overrides):
    from plugins.char_ngram.tfidf import char_analyzer

    vec = CharNgramSystem(CharNgramConfig(**overrides)).vectorizer()
    fast, ref = char_analyzer(vec), vec.build_analyzer()
    for text in [d.fullText for d in demo_documents()[:50]] + ["", "a", "ab", "  x\n\n\ty  \u00c9t\u00e9  "]:
        assert fast(text) == ref(text)


def test_scores_are_the_per_seed_fit_scores_bit_for_bit():
    from harness.evaluation.ranking import top_k  # noqa: F401

    docs = demo_documents()[:240]
    system = CharNgramSystem(CharNgramConfig())
    queries, cands = docs[:40], docs[40:]
    vec = system.vectorizer()
    c = vec.fit_transform([d.fullText for d in cands])
    want = (vec.transform([q.fullText for q in queries]) @ c.T).toarray()
    pool = system.fit_pool([d.fullText for d in cands])
    got = (pool.matrix.tocsr().sorted_indices() @ pool.transform([q.fullText for q in queries]).T).T.toarray()
    assert np.array_equal(got, want)
