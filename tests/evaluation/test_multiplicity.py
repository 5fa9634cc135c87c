from fractions import Fraction

from harness.evaluation.multiplicity import holm
from harness.reports.page_tests import marks, page_tests, pairs_shown


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 -> 4 * 0.01, 3 * 0.02, max(2 * 0.03, 0.06), max(0.5, 0.06); in input order
    got = holm([Fraction(3, 100), Fraction(1, 100), Fraction(1, 2), Fraction(2, 100)])
    assert got == [Fraction(6, 100), Fraction(4, 100), Fraction(1, 2), Fraction(6, 100)]
    assert holm([0.9, 0.8]) == [1.0, 1.0] and holm([]) == []


class _R:
    def __init__(self, p):
        self.p_value = p


def test_a_page_counts_the_best_row_against_the_baseline_once():
    names = ["bm25", "a", "b", "best"]
    assert pairs_shown(names, "best", "bm25") == [
        ("bm25", "best"),
        ("a", "best"),
        ("a", "bm25"),
        ("b", "best"),
        ("b", "bm25"),
    ]
    p = {
        frozenset(("bm25", "best")): 0.001,
        frozenset(("a", "best")): 0.04,
        frozenset(("a", "bm25")): 0.2,
        frozenset(("b", "best")): 0.011,
        frozenset(("b", "bm25")): 0.5,
    }
    tests = page_tests(names, "best", "bm25", lambda x, y: _R(p[frozenset((x, y))]))
    assert tests.n == 5 and tests.raw_below == 3 and tests.holm_below == 2  # 0.005, 0.044 stay; 0.04 * 3 does not
    assert marks("a", "best", "bm25", tests) == "*"
    assert marks("b", "best", "bm25", tests) == "*ᴴ"
    assert marks("best", "best", "bm25", tests) == "†ᴴ" and marks("bm25", "best", "bm25", tests) == "*ᴴ"
