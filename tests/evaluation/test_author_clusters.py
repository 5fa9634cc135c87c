import pytest

from harness.errors import HarnessError
from harness.evaluation.author_clusters import author_clusters
from harness.evaluation.significance import paired_test
from harness.reports.significance import compare_results, query_author_clusters


def test_one_author_is_one_cluster_whatever_the_seed():
    got = author_clusters({(0, "q1"): ("a",), (1, "q1"): ("a",), (1, "q7"): ("a",), (0, "q2"): ("b",)})
    assert got[(0, "q1")] == got[(1, "q1")] == got[(1, "q7")] == "a" and got[(0, "q2")] == "b"


def test_co_authored_queries_join_their_authors_transitively():
    got = author_clusters({"x": ("c", "b"), "y": ("b",), "z": ("d", "c"), "w": ("e",), "v": ("d",)})
    assert {got[k] for k in "xyzv"} == {"b"} and got["w"] == "e"
    # the name does not depend on the order the queries come in
    assert author_clusters(dict(reversed(list({"z": ("d", "c"), "x": ("c", "b")}.items())))) == {"z": "b", "x": "b"}


def test_an_author_repeated_over_seeds_widens_the_interval_and_the_p():
    # the same 6 authors in 4 seeds: 24 (seed, author) units that are really 6
    a = [1, 1, 1, 1, 0, 0] * 4
    b = [0, 0, 0, 0, 1, 0] * 4
    by_seed = [(s, i) for s in range(4) for i in range(6)]
    by_author = [i for _ in range(4) for i in range(6)]
    naive = paired_test(a, b, by_seed)
    clustered = paired_test(a, b, by_author)
    assert naive.n_clusters == 24 and clustered.n_clusters == 6
    assert clustered.p_value > naive.p_value and clustered.p_value > 0.05 > naive.p_value


def _write_manifest(folder, seed, queries, needles=None):
    from harness.evaluation.manifests import write_manifest
    from harness.evaluation.split import Query, Split

    needles = needles or {}
    split = Split(
        collection="c",
        seed=seed,
        queries=tuple(Query(d, tuple(a), "g") for d, a in queries),
        candidates=tuple(sorted({n for ns in needles.values() for n in ns})),
        needles={q: tuple(ns) for q, ns in needles.items()},
        builder={},
        source_sha256="",
    )
    write_manifest(split, folder.parent)


def _result(seed, ranks):
    return {
        "collection": "c",
        "seed": seed,
        "split_sha256": f"sha{seed}",
        "first_needle_rank": ranks,
    }


def test_compare_counts_authors_across_seeds(tmp_path):
    pytest.importorskip("tabulate")
    _write_manifest(tmp_path / "c", 0, [("q1", ["a"]), ("q2", ["b", "c"])])
    _write_manifest(tmp_path / "c", 1, [("q1", ["a"]), ("q3", ["c"]), ("q4", ["d"])])
    assert len(set(query_author_clusters("c", [0, 1], tmp_path).values())) == 3
    a = [_result(0, {"q1": 1, "q2": 50}), _result(1, {"q1": 3, "q3": 2, "q4": None})]
    b = [_result(0, {"q1": 40, "q2": 2}), _result(1, {"q1": 30, "q3": 60, "q4": 1})]
    res = compare_results(a, b, tmp_path, resamples=200)["success@8"]
    assert res.n_queries == 5 and res.n_clusters == 3


def test_compare_without_a_manifest_is_an_error(tmp_path):
    _write_manifest(tmp_path / "c", 0, [("q1", ["a"])])
    a = [_result(0, {"q1": 1}), _result(1, {"q1": 1})]
    with pytest.raises(HarnessError, match="seed-1.json"):
        compare_results(a, a, tmp_path)


def test_a_needle_shared_by_two_authors_queries_joins_them_across_seeds(tmp_path):
    """n1 is a needle of a's query and of b's (so it is co-authored by a and b): a and b are one
    cluster, in every seed, though no query of theirs is co-authored; c stays apart."""
    from harness.evaluation.author_clusters import needle_ties

    _write_manifest(
        tmp_path / "c",
        0,
        [("q1", ["a"]), ("q2", ["b"]), ("q3", ["c"])],
        {"q1": ["n1", "n2"], "q2": ["n1"], "q3": ["n3"]},
    )
    _write_manifest(tmp_path / "c", 1, [("q1", ["a"]), ("q4", ["b"])], {"q1": ["n2"], "q4": ["n4"]})
    got = query_author_clusters("c", [0, 1], tmp_path)
    assert got[(0, "q1")] == got[(0, "q2")] == got[(1, "q1")] == got[(1, "q4")] == "a"
    assert got[(0, "q3")] == "c"
    assert len(set(query_author_clusters("c", [1], tmp_path).values())) == 2  # seed 1 alone shares no needle
    assert needle_ties({"q1": ["n1"], "q2": ["n1"], "q3": ["n1"]}, {"q1": ["b"], "q2": ["a"], "q3": ["a"]}) == [
        ("a", "b")
    ]
