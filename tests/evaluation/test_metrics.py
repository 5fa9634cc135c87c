import math
import random

import numpy as np
import pytest

from harness.evaluation.metrics import (
    bootstrap_ci,
    evaluate,
    first_needle_rank,
    headline,
    mean_sd,
    mrr_at,
    order,
    success_at,
    success_curve,
)


def test_tie_rule_score_desc_then_id_asc():
    assert order([("b", 1.0), ("a", 1.0), ("c", 2.0), ("d", 0.5)]) == ["c", "a", "b", "d"]


def test_hand_computed_with_ties_and_multi_needle():
    rankings = {
        # needle n1 tied with x at the top: id order puts n1 ("n1" > "m") second? "m" < "n1", so rank 2.
        "q1": [("n1", 5.0), ("m", 5.0), ("z", 1.0)],
        # two needles, the first at rank 3
        "q2": [("a", 9.0), ("b", 8.0), ("n2", 7.0), ("n3", 6.0)],
        # needle below rank 20 but inside 100
        "q3": [(f"x{i:03d}", 100.0 - i) for i in range(30)] + [("n4", 0.5)],
        # not ranked at all: a miss
    }
    needles = {"q1": {"n1"}, "q2": {"n2", "n3"}, "q3": {"n4"}, "q4": {"n5"}}
    ev = evaluate(rankings, needles, {"q1": "g", "q2": "g", "q3": "h", "q4": "h"})
    assert ev["first_needle_rank"] == {"q1": 2, "q2": 3, "q3": 31, "q4": None}
    assert ev["metrics"]["success@8"] == pytest.approx(2 / 4)
    assert ev["metrics"]["success@100"] == pytest.approx(3 / 4)
    assert ev["metrics"]["mrr@20"] == pytest.approx((1 / 2 + 1 / 3 + 0 + 0) / 4)
    assert ev["n_queries"] == 4 and ev["n_ranked"] == 3
    assert ev["per_genre"]["g"]["success@8"] == 1.0 and ev["per_genre"]["h"]["n_queries"] == 2


def test_a_ranking_with_every_score_tied_is_a_miss_whatever_the_ids():
    """A constant scorer says nothing; by the id tie-break alone it once scored on how ids sort."""
    needles = {"q1": {"a"}, "q2": {"a"}, "q3": {"a"}}
    rankings = {
        "q1": [("a", 0.0), ("b", 0.0), ("c", 0.0)],  # the needle first by id
        "q2": [("a", 1.0)],  # one candidate: nothing tied
        "q3": [("b", 2.0), ("a", 2.0), ("c", 1.0)],
    }  # a tie at the top only: the tie rule decides
    ev = evaluate(rankings, needles, {q: "g" for q in needles})
    assert ev["first_needle_rank"] == {"q1": None, "q2": 1, "q3": 1}


def test_boundaries_of_k():
    assert success_at(8, [8, 9]) == 0.5
    assert mrr_at(20, [20, 21]) == pytest.approx((1 / 20) / 2)
    assert first_needle_rank(["a", "b"], {"c"}) is None


def test_success_curve_matches_success_at():
    ranks = [1, 3, 3, 50, None, 100, 101]
    curve = success_curve(ranks)
    assert len(curve) == 100
    for k in (1, 2, 3, 8, 50, 99, 100):
        assert curve[k - 1] == pytest.approx(success_at(k, ranks))
    assert all(a <= b for a, b in zip(curve, curve[1:]))


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    rng = random.Random(1)
    ranks = [rng.choice([1, 5, 12, 40, None]) for _ in range(200)]
    ci = bootstrap_ci(ranks)
    point = headline(ranks)
    for m, (lo, hi) in ci.items():
        assert lo <= point[m] <= hi and hi - lo < 0.3
    assert bootstrap_ci(ranks) == ci


def test_mean_sd_uses_sample_sd():
    m, sd = mean_sd([0.1, 0.2, 0.3, 0.4])
    assert m == pytest.approx(0.25) and sd == pytest.approx(np.std([0.1, 0.2, 0.3, 0.4], ddof=1))
    assert math.isnan(mean_sd([0.5])[1])


def test_against_ir_measures_on_tie_free_rankings():
    """Independent implementation (trec_eval via ir-measures): Success@k and RR@20 agree."""
    ir_measures = pytest.importorskip("ir_measures")
    rng = random.Random(7)
    rankings, needles, qrels, run = {}, {}, [], []
    for q in range(60):
        qid = f"q{q}"
        cands = [f"c{i}" for i in range(150)]
        scores = rng.sample(range(10_000), len(cands))  # distinct: no ties, so tie rules cannot differ
        ranked = list(zip(cands, map(float, scores)))
        rankings[qid] = ranked
        needles[qid] = set(rng.sample(cands, rng.randint(1, 3)))
        qrels += [ir_measures.Qrel(qid, n, 1) for n in needles[qid]]
        run += [ir_measures.ScoredDoc(qid, c, s) for c, s in ranked]
    ours = evaluate(rankings, needles, {q: "g" for q in needles})["metrics"]
    theirs = ir_measures.calc_aggregate(
        [ir_measures.Success @ 8, ir_measures.Success @ 100, ir_measures.RR @ 20], qrels, run
    )
    assert ours["success@8"] == pytest.approx(theirs[ir_measures.Success @ 8], abs=1e-9)
    assert ours["success@100"] == pytest.approx(theirs[ir_measures.Success @ 100], abs=1e-9)
    assert ours["mrr@20"] == pytest.approx(theirs[ir_measures.RR @ 20], abs=1e-9)
