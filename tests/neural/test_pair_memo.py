"""A reranker remembers each text's token ids and each pair's score: a pair met again gets the
number it got the first time, and only pairs never seen are computed."""

import dataclasses

import numpy as np
import pytest

from plugins.sadiri_v2.pair_memo import ScoreMemo, TokenMemo


def test_token_memo_tokenizes_each_text_once_per_length():
    calls = []

    def tokenize(texts, n):
        calls.append((list(texts), n))
        return [[len(t), n, ord(t[0])] for t in texts]

    memo = TokenMemo(tokenize)
    assert memo(["ab", "c", "ab"], 4) == [[2, 4, 97], [1, 4, 99], [2, 4, 97]]
    assert memo(["c", "de"], 4) == [[1, 4, 99], [2, 4, 100]]
    assert memo(["c"], 8) == [[1, 8, 99]]  # another budget is another tokenization
    assert calls == [(["ab", "c"], 4), (["de"], 4), (["c"], 8)]
    assert len(memo) == 4


def test_score_memo_asks_only_for_new_pairs_and_answers_repeats_from_the_first_score():
    memo = ScoreMemo()
    out, todo = memo.split("q", ["a", "b", "a"])
    assert todo == [0, 1] and np.isnan(out).all()  # a repeated text is scored once
    out = memo.fill("q", ["a", "b", "a"], out, todo, [0.25, -1.5])
    assert out.tolist() == [0.25, -1.5, 0.25]
    out, todo = memo.split("q", ["b", "c"])
    assert todo == [1] and out[0] == np.float32(-1.5)
    assert memo.fill("q", ["b", "c"], out, todo, [3.0]).tolist() == [-1.5, 3.0]
    _, todo = memo.split("other query", ["a"])  # a pair is its query and its candidate
    assert todo == [0]
    assert (memo.scored, memo.reused) == (3, 2)  # split counts what it answers; fill what was computed


@pytest.mark.slow
@pytest.mark.parametrize("prefix_reuse", [True, False])
def test_reranker_reuses_the_scores_of_pairs_it_has_seen(saved_reranker, prefix_reuse):
    from plugins.sadiri_v2.reranker import RerankerSystem
    from tests.neural.test_reranker import _docs

    docs = _docs()
    config = dataclasses.replace(saved_reranker, prefix_reuse=prefix_reuse)
    system = RerankerSystem(config)
    first = system.rerank([docs[0], docs[2]], [docs[1:6], docs[3:5]])
    assert system.describe()["pairs_scored"] == 7 and system.describe()["pairs_reused"] == 0
    # a later seed: one list again, one longer, one new query
    second = system.rerank([docs[2], docs[0], docs[7]], [docs[3:5], docs[1:9], docs[1:3]])
    assert system.describe()["pairs_scored"] == 3 + 2 and system.describe()["pairs_reused"] == 2 + 5
    assert second[0].tolist() == first[1].tolist()  # the very numbers, not a recomputation
    assert second[1][:5].tolist() == first[0].tolist()
    fresh = RerankerSystem(config).rerank([docs[0], docs[7]], [docs[1:9], docs[1:3]])
    # what it computed for the new pairs is what a system that never saw the first call computes;
    # the tolerance covers fp32 products over other batch shapes
    assert np.allclose(second[1], fresh[0], rtol=1e-5, atol=1e-5)
    assert np.allclose(second[2], fresh[1], rtol=1e-5, atol=1e-5)
    assert all(s.dtype == np.float32 for s in second)


@pytest.mark.slow
def test_scores_read_back_a_few_queries_later_are_each_querys_own(saved_reranker, monkeypatch):
    """On the fused path the scores stay on the device and come back a few queries later, in one
    copy: each query still gets exactly the numbers it gets scored alone."""
    from harness.neural.fast.fused_paths import score_fused_continuations
    from plugins.sadiri_v2 import reranker
    from tests.neural.test_reranker import _docs

    monkeypatch.setattr(reranker, "RUN_AHEAD", 3)  # 7 queries: read back after 3, 6 and at the end
    docs = _docs()
    system = reranker.RerankerSystem(saved_reranker)
    assert system.model.fused_decoder is not None  # the path that leaves its scores on the device
    queries, lists = docs[:7], [docs[i + 1 : i + 2 + i % 3] for i in range(7)]
    got = system.rerank(queries, lists)
    for q, cands, scores in zip(queries, lists, got):
        prefix, rest = system.model.pair_parts(q.fullText, [c.fullText for c in cands])
        alone = score_fused_continuations(system.model.fused_decoder, system.model.finish, prefix, rest, system.device)
        assert scores.dtype == np.float32 and scores.tolist() == alone[:, 0].tolist()
