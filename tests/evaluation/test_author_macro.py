from fractions import Fraction

import pytest

from harness.evaluation.author_macro import author_macro


def test_author_macro_weighs_each_author_once_whatever_their_query_count():
    # author a: 3 queries over two seeds, 2 hits -> 2/3; b: 1 query, a miss -> 0; c: 2 hits of 2 -> 1
    hits = {
        (0, "q1"): Fraction(1),
        (1, "q1"): Fraction(0),
        (1, "q4"): Fraction(1),
        (0, "q2"): Fraction(0),
        (0, "q3"): Fraction(1),
        (1, "q3"): Fraction(1),
    }
    author = {(0, "q1"): "a", (1, "q1"): "a", (1, "q4"): "a", (0, "q2"): "b", (0, "q3"): "c", (1, "q3"): "c"}
    assert author_macro(hits, author) == Fraction(2, 3 * 3) + Fraction(0) + Fraction(1, 3)  # (2/3 + 0 + 1) / 3
    assert author_macro(hits, author) == Fraction(5, 9)
    assert sum(hits.values()) / len(hits) == Fraction(4, 6)  # pooled: the many-query author weighs more


def test_author_macro_of_one_query_per_author_is_the_pooled_mean():
    hits = {"x": Fraction(1), "y": Fraction(0), "z": Fraction(0), "w": Fraction(1)}
    assert author_macro(hits, {k: k for k in hits}) == Fraction(1, 2)


def test_author_macro_needs_queries():
    with pytest.raises(ValueError):
        author_macro({}, {})
