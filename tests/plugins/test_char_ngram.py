"""char-ngram counts every text once per collection and builds each pool's TF-IDF and scores from
those counts: vectors, scores and rankings must be scikit-learn's TfidfVectorizer fitted on each
pool, bit for bit (ties included), so the rankings are the per-seed-fit rankings."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from harness.data.demo import demo_documents
from plugins.char_ngram import tfidf
from plugins.char_ngram.config import CharNgramConfig
from plugins.char_ngram.system import CharNgramSystem


def _same(a, b):
    a, b = a.tocsr().sorted_indices(), b.tocsr().sorted_indices()  # entry order within a row aside
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.data, b.data)  # exact


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 terms: many blocks even on the demo collection."""
    monkeypatch.setattr(tfidf, "BLOCK_TERMS", 64)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"max_features": 3000},
        {"analyzer": "char_wb", "min_df": 1, "ngram_max": 3},
        {"lowercase": True, "sublinear_tf": False},
        {"ngram_max": 5},
    ],
)
def test_pools_match_tfidfvectorizer_exactly(overrides, small_blocks):
    docs = [d.fullText for d in demo_documents()[:260]]
    docs[5] = ""  # an empty text
    docs[7] = docs[8]  # a text twice: two documents for the document frequencies
    system = CharNgramSystem(CharNgramConfig(**overrides))
    rng = random.Random(0)
    seen = set()
    for _ in range(3):  # overlapping pools in different orders, as the seeds' pools are
        pool = rng.sample(docs[:220], 180) + [docs[8]]
        queries = rng.sample(docs, 40) + ["", "zzzz unseen \u2980 text", "a lone \ud800 surrogate"]
        counts = system.counts(pool + queries)
        seen |= set(pool + queries)
        ours = system.fit_pool(pool)
        ref = system.vectorizer()
        pool_ref = ref.fit_transform(pool)
        queries_ref = ref.transform(queries)
        _same(ours.vectors(counts.rows(pool)), pool_ref)
        _same(ours.vectors(counts.rows(queries)), queries_ref)
        assert np.array_equal(ours.idf, ref.idf_)
        want = (queries_ref @ pool_ref.T).toarray()  # what the system did per seed
        got = np.concatenate([s for _, s in ours.scores(counts.rows(queries), counts.rows(pool), lanes=7)])
        assert got.dtype == want.dtype and np.array_equal(got, want)  # the same bits
    assert counts.n_rows == len(seen)  # each distinct text counted once


def _seeds(docs, n_seeds=4):
    """Split-like (queries, candidates) pairs: overlapping pools in different orders."""
    rng = random.Random(1)
    out = []
    for _ in range(n_seeds):
        order = rng.sample(docs, len(docs))
        out.append((order[:25], order[25:]))
    return out


def test_rankings_equal_per_seed_refit_ties_included(small_blocks):
    docs = demo_documents()[:160]
    # the same text under other ids: candidates tied with each other, and a query's own text in the pool
    twins = [replace(d, documentID=f"{d.documentID}-twin") for d in docs[:30:3]]
    # texts that only a later seed sees, with characters no earlier text has (the alphabet grows)
    late = [
        replace(d, documentID=f"late-{i}", fullText=d.fullText.replace("e", "\u00e9").replace("a", "\u0101"))
        for i, d in enumerate(docs[100:120])
    ]
    system = CharNgramSystem(CharNgramConfig())
    tied = 0
    for i, (queries, cands) in enumerate(_seeds(docs + twins)):
        if i >= 2:
            cands = cands + late
        got = system.rank(queries, cands, 100)
        assert got == system.rank_refit(queries, cands, 100)  # ids, order and scores
        tied += sum(a[1] == b[1] for r in got.values() for a, b in pairwise(r))
    assert tied > 0  # the tie rule was exercised


def test_scores_from_several_query_blocks_and_empty_rows(small_blocks):
    texts = [d.fullText for d in demo_documents()[:120]] + ["", "\u2603"]
    system = CharNgramSystem(CharNgramConfig(min_df=3))
    counts = system.counts(texts)
    pool = system.fit_pool(texts[20:])
    ref = system.vectorizer()
    want = (ref.fit(texts[20:]).transform(texts[:20] + texts[-2:]) @ ref.transform(texts[20:]).T).toarray()
    blocks = list(pool.scores(counts.rows(texts[:20] + texts[-2:]), counts.rows(texts[20:]), lanes=3))
    assert [start for start, _ in blocks] == list(range(0, 22, 3))
    assert np.array_equal(np.concatenate([s for _, s in blocks]), want)


def test_a_norm_that_could_depend_on_order_falls_back_to_the_refit():
    docs = demo_documents()[:60]
    huge = replace(docs[0], documentID="huge", fullText="ab " * 40000)  # raw tf: squares of 80,000 and more
    system = CharNgramSystem(CharNgramConfig(sublinear_tf=False))
    queries, cands = docs[:10], docs[10:] + [huge]
    counts = system.counts([d.fullText for d in cands + queries])
    pool = system.fit_pool([d.fullText for d in cands])
    with pytest.raises(tfidf.NotExact):
        pool.scores(counts.rows([q.fullText for q in queries]), counts.rows([d.fullText for d in cands]))
    assert system.rank(queries, cands, 100) == system.rank_refit(queries, cands, 100)


def test_more_characters_than_keys_hold_counts_strings():
    texts = [d.fullText for d in demo_documents()[:40]]
    many = "".join(map(chr, range(0x10000, 0x20000)))  # 65,536 characters none of the others holds
    system = CharNgramSystem(CharNgramConfig(ngram_max=2))
    system.counts(texts[:30])
    assert isinstance(system._counts.counter, tfidf.KeyedCounts)
    counts = system.counts(texts[30:] + [many])  # past 65,535 distinct characters
    assert isinstance(counts.counter, tfidf.NgramCounts) and counts.n_rows == 41
    pool = system.fit_pool(texts[:30] + [many])
    ref = system.vectorizer()
    _same(pool.vectors(counts.rows(texts[30:])), ref.fit(texts[:30] + [many]).transform(texts[30:]))


def test_a_pool_fitted_before_new_texts_refuses_to_score():
    texts = [d.fullText for d in demo_documents()[:30]]
    system = CharNgramSystem(CharNgramConfig())
    pool = system.fit_pool(texts[:20])
    counts = system.counts(texts[20:])
    with pytest.raises(ValueError, match="after this pool was fitted"):
        pool.scores(counts.rows(texts[20:]), counts.rows(texts[:20]))


@pytest.mark.parametrize("overrides", [{}, {"ngram_min": 2, "ngram_max": 5, "lowercase": True}])
def test_fast_char_analyzer_equals_sklearn(overrides):
    from plugins.char_ngram.tfidf import char_analyzer

    vec = CharNgramSystem(CharNgramConfig(**overrides)).vectorizer()
    fast, ref = char_analyzer(vec), vec.build_analyzer()
    for text in [d.fullText for d in demo_documents()[:50]] + ["", "a", "ab", "  x\n\n\ty  \u00c9t\u00e9  "]:
        assert fast(text) == ref(text)
