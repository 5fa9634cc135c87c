import numpy as np
import pytest

from harness.evaluation.sign_flip import (
    cluster_sums,
    enumerate_all,
    interval_assignments,
    inverted_interval,
    sign_flip_test,
)
from harness.evaluation.significance import (
    authors_needed,
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


def test_constant_difference_interval_is_a_point():
    r = paired_test([1] * 10, [0.5] * 10)
    assert r.ci95 == (0.5, 0.5)
    # three clusters: 8 assignments, the smallest p is 2/8, so the test rejects no shift
    assert paired_test([1, 1, 1], [0.5, 0.5, 0.5]).ci95 == (-np.inf, np.inf)
    r = paired_test([0, 1] * 50, [0] * 100)
    assert r.ci95[0] < 0.5 < r.ci95[1]


def test_exact_p_matches_scipy_permutation_test():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.random(11)
        b = rng.random(11)
        ours = paired_test(a, b).p_value
        ref = stats.permutation_test(
            (a, b),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            vectorized=True,
            permutation_type="samples",
            n_resamples=np.inf,
            alternative="two-sided",
        ).pvalue
        assert ours == pytest.approx(ref, rel=1e-9)


def test_monte_carlo_p_is_close_to_exact():
    rng = np.random.default_rng(7)
    a = (rng.random(18) < 0.6).astype(float)
    b = (rng.random(18) < 0.3).astype(float)
    exact, e = randomization_p(a - b, exact_max=20)
    approx, e2 = randomization_p(a - b, exact_max=0, resamples=20000)
    assert e and not e2 and approx == pytest.approx(exact, abs=0.02)


def _exact_p_at(sums, counts, d):
    """The exact sign-flip p of (difference - d), by brute force over the 2^k assignments."""
    shifted = np.asarray(sums, dtype=float) - d * np.asarray(counts, dtype=float)
    a = enumerate_all(shifted, counts).a
    return (np.abs(a) >= abs(shifted.sum()) - 1e-9).mean()


def test_exact_interval_is_the_set_the_test_accepts():
    # Success@8 differences of 9 author clusters: the interval's ends are where p(d) crosses 0.05
    sums, counts = np.array([3.0, 1, -1, 2, 0, 4, -2, 1, 2]), np.array([4.0, 2, 3, 2, 1, 5, 3, 1, 2])
    lo, hi = inverted_interval(sums, counts, enumerate_all(sums, counts))
    step = 1e-6  # far below the gaps between the breakpoints (differences of small integers over sums of counts)
    assert _exact_p_at(sums, counts, lo) >= 0.05 and _exact_p_at(sums, counts, hi) >= 0.05
    assert _exact_p_at(sums, counts, lo - step) < 0.05 and _exact_p_at(sums, counts, hi + step) < 0.05
    assert lo < sums.sum() / counts.sum() < hi


def test_interval_excludes_zero_exactly_when_p_is_below_alpha():
    rng = np.random.default_rng(5)
    for k, exact_max in ((12, 20), (40, 20), (40, 0)):
        for _ in range(20):
            counts = rng.integers(1, 9, size=k).astype(float)
            sums = np.array([rng.choice([-1, 0, 1], size=int(n), p=[0.25, 0.45, 0.3]).sum() for n in counts], float)
            got, drawn = sign_flip_test(sums, counts, exact_max=exact_max, draws=2000)
            flips = interval_assignments(sums, counts, drawn, exact_max=exact_max, draws=2000)
            if got.exact != flips.exact:
                continue  # p enumerated over the non-zero clusters, the interval sampled: not the same assignments
            lo, hi = inverted_interval(sums, counts, flips)
            assert (lo <= 0 <= hi) == (got.p >= 0.05)


def test_sampled_p_near_alpha_draws_until_its_se_is_small():
    # 60 clusters whose sum sits near the 5% point of the sign-flip distribution (sd = sqrt(60) for +-1 sums)
    counts = np.ones(60)
    near = np.array([1.0] * 38 + [-1.0] * 22)  # observed sum 16 = 2.07 sd: p about 0.05
    got, drawn = sign_flip_test(near, counts)
    assert not got.exact and abs(got.p - 0.05) < 0.01
    assert got.se <= 0.001 and got.draws > 10_000 and len(drawn.a) == got.draws
    assert got.se == pytest.approx(np.sqrt(got.p * (1 - got.p) / got.draws), rel=1e-12)
    far, _ = sign_flip_test(np.array([1.0] * 50 + [-1.0] * 10), counts)  # sum 40: p far below 0.05
    assert far.draws == 10_000 and far.p < 0.01


def test_cluster_sums_follow_first_appearance():
    sums, counts = cluster_sums([1, -1, 1, 0], ["b", "a", "b", "c"])
    assert sums.tolist() == [2.0, -1.0, 0.0] and counts.tolist() == [2.0, 1.0, 1.0]


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


def test_a_tie_within_rounding_counts_for_the_interval_as_for_the_p():
    """An assignment whose sum equals the observed one but for float rounding is a hit of the test;
    the interval must then reach 0 too, or the two disagree (as they once did on another CPU)."""
    import numpy as np

    from harness.evaluation.sign_flip import Assignments, _hits, inverted_interval

    sums, counts = np.array([1.0, 2.0]), np.array([1.0, 1.0])  # observed sum 3 over 2 queries
    a = np.array([3.0 - 1e-12] + [0.5] * 38)  # one tie within rounding, 38 assignments far below
    b = np.zeros(39)
    hits = _hits(a, 3.0)
    p = (1 + hits) / (1 + len(a))
    assert hits == 1 and p == 0.05
    lo, hi = inverted_interval(sums, counts, Assignments(a, b, False))
    assert lo <= 0 <= hi
