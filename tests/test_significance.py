import numpy as np
import pytest

from harness.evaluation.significance import (
    authors_needed,
    bootstrap_ci,
    compare_ranks,
    paired_test,
    per_query_value,
    randomization_p,
)


def test_hand_computed_sign_flip_p():
    # d = (1, 1, 1, 0): of the 2^3 sign assignments of the non-zero differences only
    # (+,+,+) and (-,-,-) reach |sum| >= 3, so p = 2/8.
    r = paired_test([1, 1, 1, 0], [0, 0, 0, 0])
    assert r.exact and r.p_value == pytest.approx(0.25)
    assert r.diff == pytest.approx(0.75) and r.mean_a == 0.75 and r.mean_b == 0.0


def test_hand_computed_clustered_p():
    # clusters x: (1, 1) -> sum 2, y: (-1,) -> sum -1; observed |1|; the four assignments give
    # |2-1| = 1, |-2-1| = 3, |2+1| = 3, |-2+1| = 1: all >= 1, so p = 1.
    p, exact = randomization_p([1, 1, -1], ["x", "x", "y"])
    assert exact and p == pytest.approx(1.0)
    # per query (no clusters): |1+1-1| = 1; sums of three +-1 are +-1 or +-3: p = 1 too; drop one
    p, _ = randomization_p([1, 1, 0], None)
    assert p == pytest.approx(0.5)  # (+,+) and (-,-) of 4 reach |2|


def test_constant_difference_bootstrap_interval_is_a_point():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    lo, hi = bootstrap_ci([0, 1] * 50, resamples=2000)
    assert lo < 0.5 < hi


def test_exact_p_matches_scipy_permutation_test():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.random(11)
        b = rng.random(11)
        ours = paired_test(a, b).p_value
        ref = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                     permutation_type="samples", n_resamples=np.inf, alternative="two-sided").pvalue
        assert ours == pytest.approx(ref, rel=1e-9)


def test_monte_carlo_p_is_close_to_exact():
    rng = np.random.default_rng(7)
    a = (rng.random(18) < 0.6).astype(float)
    b = (rng.random(18) < 0.3).astype(float)
    exact, e = randomization_p(a - b, exact_max=20)
    approx, e2 = randomization_p(a - b, exact_max=0, resamples=20000)
    assert e and not e2 and approx == pytest.approx(exact, abs=0.02)


def test_bootstrap_interval_close_to_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    d = (rng.random(300) < 0.4).astype(float) - (rng.random(300) < 0.3).astype(float)
    lo, hi = bootstrap_ci(d, resamples=20000)
    ref = stats.bootstrap((d,), np.mean, n_resamples=20000, method="percentile", random_state=1).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.01) and hi == pytest.approx(ref.high, abs=0.01)


def test_compare_ranks_pairs_by_key_and_scores_metrics():
    a = {(0, "q1"): 1, (0, "q2"): 9, (1, "q1"): None, (1, "q3"): 2}
    b = {(0, "q1"): 30, (0, "q2"): 3, (1, "q1"): 5, (9, "x"): 1}
    res = compare_ranks(a, b)
    s8 = res["success@8"]
    assert s8.n_queries == 3  # the shared keys only
    assert s8.mean_a == pytest.approx(1 / 3) and s8.mean_b == pytest.approx(2 / 3)
    assert res["mrr@20"].mean_a == pytest.approx((1 + 1 / 9) / 3)
    assert per_query_value(21, "mrr@20") == 0.0


def test_authors_needed_formula():
    # per-cluster differences with sd 0.5: n = ((1.95996 + 0.84162) * 0.5 / 0.05)^2 = 784.9 -> 785
    d = [0.5, -0.5] * 50
    n, sd = authors_needed(d, list(range(100)))
    assert sd == pytest.approx(np.std(d, ddof=1))
    assert n == int(np.ceil((2.8015817 * sd / 0.05) ** 2))
