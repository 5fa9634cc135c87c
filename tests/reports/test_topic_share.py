"""The same-genre share of a ranking's top k: the figure, its chance level, and bad input."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.errors import DataError
from harness.reports.topic_share import same_genre_share

GENRES = {"q1": "a", "q2": "b", "c1": "a", "c2": "a", "c3": "b", "c4": "c"}
CANDIDATES = ("c1", "c2", "c3", "c4")


def test_share_counts_the_top_k_in_the_query_genre_against_the_pool():
    rankings = {"q1": [("c1", 3.0), ("c3", 2.0), ("c2", 1.0)], "q2": [("c4", 1.0), ("c3", 0.5)]}
    share = same_genre_share(rankings, {"q1": "a", "q2": "b"}, CANDIDATES, GENRES, k=2, where="run x")
    # q1's top 2: c1 (a), c3 (b) -> 1/2; q2's top 2: c4 (c), c3 (b) -> 1/2
    assert share.top_k == pytest.approx(0.5)
    # pool: genre a is 2 of 4 candidates, genre b 1 of 4
    assert share.chance == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert share.n_queries == 2
    top1 = same_genre_share(rankings, {"q1": "a", "q2": "b"}, CANDIDATES, GENRES, k=1, where="run x")
    assert top1.top_k == pytest.approx(0.5)  # q1: c1 is genre a; q2: c4 is not genre b


def test_bad_input_names_the_run_and_the_document():
    with pytest.raises(DataError, match="run x: query 'q1' ranks 'zz'"):
        same_genre_share({"q1": [("zz", 1.0)]}, {"q1": "a"}, CANDIDATES, GENRES, k=8, where="run x")
    with pytest.raises(DataError, match="ranked query 'q9' is not a query"):
        same_genre_share({"q9": [("c1", 1.0)]}, {"q1": "a"}, CANDIDATES, GENRES, k=8, where="run x")
    with pytest.raises(DataError, match="candidate.*not in the collection"):
        same_genre_share({"q1": [("c1", 1.0)]}, {"q1": "a"}, ("c1", "nope"), GENRES, k=8, where="run x")
    with pytest.raises(DataError, match="k must be at least 1"):
        same_genre_share({"q1": [("c1", 1.0)]}, {"q1": "a"}, CANDIDATES, GENRES, k=0, where="run x")


def test_cli_prints_a_row_per_run_and_names_a_missing_run(tmp_path, capsys):
    runs, splits = tmp_path / "runs", tmp_path / "s"
    for system in ("bm25", "char-ngram"):
        assert main(["run", system, "--runs-dir", str(runs), "--splits-dir", str(splits), "--no-progress"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "topic-share",
                "bm25",
                "char-ngram",
                "--collection",
                "demo",
                "--runs-dir",
                str(runs),
                "--splits-dir",
                str(splits),
            ]
        )
        == 0
    )
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(("| bm25", "| char-ngram"))]
    assert len(lines) == 2
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == "4"  # four seeds
        share, chance = float(cells[2].split(" ± ")[0]), float(cells[3])
        assert 0.0 <= share <= 100.0 and 0.0 < chance < 100.0
    assert (
        main(
            [
                "topic-share",
                "nothing-here",
                "--collection",
                "demo",
                "--runs-dir",
                str(runs),
                "--splits-dir",
                str(splits),
            ]
        )
        == 2
    )
    assert "no results for run 'nothing-here'" in capsys.readouterr().err
