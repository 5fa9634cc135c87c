import numpy as np

from harness.evaluation.metrics import order
from harness.evaluation.ranking import top_k, top_k_inner_product


def test_top_k_agrees_with_full_sort_under_heavy_ties():
    rng = np.random.default_rng(0)
    ids = [f"doc{i:03d}" for i in rng.permutation(300)]
    scores = rng.integers(0, 5, size=(20, 300)).astype(float)  # many ties at every cut
    for row, got in zip(scores, top_k(scores, ids, 17)):
        expected = order(zip(ids, row))[:17]
        assert [c for c, _ in got] == expected


def test_top_k_with_k_larger_than_pool():
    got = top_k(np.array([[1.0, 2.0]]), ["a", "b"], 10)
    assert got == [[("b", 2.0), ("a", 1.0)]]


def test_exact_search_blocks_match_one_shot():
    rng = np.random.default_rng(1)
    q, c = rng.normal(size=(10, 8)).astype(np.float32), rng.normal(size=(50, 8)).astype(np.float32)
    ids = [f"c{i}" for i in range(50)]
    blocked, whole = top_k_inner_product(q, c, ids, 5, block=3), top_k(q @ c.T, ids, 5)
    assert [[i for i, _ in r] for r in blocked] == [[i for i, _ in r] for r in whole]
    assert np.allclose([[s for _, s in r] for r in blocked], [[s for _, s in r] for r in whole], rtol=1e-5)
