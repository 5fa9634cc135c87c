import random

import numpy as np
import pytest

from harness.data.demo import demo_documents
from plugins.bm25.config import BM25Config
from plugins.bm25.index import BM25Index
from plugins.bm25.system import BM25System
from plugins.bm25.tokenize import tokenize


def _corpus():
    docs = demo_documents()[:300]
    corpus = [tokenize(d.fullText) for d in docs]
    # terms in nearly every document get a negative idf: exercise rank-bm25's epsilon floor
    corpus += [["the", "the", "common"]] * 5 + [["rare", "unique", "common"]]
    return corpus


@pytest.mark.parametrize("k1,b", [(0.25, 0.75), (1.5, 0.75), (0.9, 0.4)])
def test_scores_equal_rank_bm25(k1, b):
    rank_bm25 = pytest.importorskip("rank_bm25")
    corpus = _corpus()
    ref = rank_bm25.BM25Okapi(corpus, k1=k1, b=b, epsilon=0.25)
    ours = BM25Index(corpus, k1=k1, b=b, epsilon=0.25)
    rng = random.Random(0)
    queries = [corpus[i] for i in rng.sample(range(len(corpus)), 8)]
    queries.append(["the", "the", "never-seen-token", "rare"])  # repeats and unknown terms
    got = ours.scores(queries)
    for q, row in zip(queries, got):
        assert np.allclose(row, ref.get_scores(q), rtol=0, atol=1e-6)


def test_tokenizer_lowercases_and_drops_punctuation():
    assert tokenize("Hello, WORLD! it's 2nd_place") == ["hello", "world", "it", "s", "2nd_place"]


def test_system_ranks_exact_duplicate_first():
    from harness.data.documents import Document

    cands = [
        Document(f"c{i}", ("a",), t, "g")
        for i, t in enumerate(["red fox jumps", "blue whale swims", "green frog sits"])
    ]
    q = Document("q", ("b",), "the blue whale", "h")
    ranked = BM25System(BM25Config()).rank([q], cands, 100)["q"]
    assert ranked[0][0] == "c1" and len(ranked) == 3
