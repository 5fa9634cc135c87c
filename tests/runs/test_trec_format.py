"""Rankings in and out in the field's formats: `export --format trec` writes TREC runs and qrels that
the field's tools score exactly as the harness does, and `submit` records a TREC run (or a rankings
file) as a verified result, refusing bad input with one line and writing nothing."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.hostile import committed_splits, hostile, load, one_line_error, run_cli, snapshot

SPLITS = committed_splits()
SEED = 2001  # a seed where bm25 and char-ngram both find needles in the top 8 and 20
COLLECTION = "demo"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """bm25 and char-ngram on demo seed 2001, and their TREC export."""
    from harness.cli import main

    base = tmp_path_factory.mktemp("trec")
    runs, out = base / "runs", base / "export"
    assert (
        main(
            [
                "run",
                "bm25",
                "char-ngram",
                "--collection",
                COLLECTION,
                "--seeds",
                str(SEED),
                "--runs-dir",
                str(runs),
                "--splits-dir",
                str(SPLITS),
                "--no-progress",
            ]
        )
        == 0
    )
    assert main(["export", "--format", "trec", "--runs-dir", str(runs), "--out", str(out)]) == 0
    return runs, out / "trec" / COLLECTION


@pytest.fixture
def runs(made, tmp_path):
    dst = tmp_path / "runs"
    shutil.copytree(made[0], dst)
    return dst


def _run_file(made, run="bm25") -> Path:
    return made[1] / "runs" / run / f"seed-{SEED}.run"


def _qrels_file(made) -> Path:
    return made[1] / "qrels" / f"seed-{SEED}.qrels"


def _split():
    from harness.evaluation.manifests import read_manifest

    return read_manifest(SPLITS / COLLECTION / f"seed-{SEED}.json")


def _submit(capsys, runs: Path, file: Path, name: str = "mine", *extra):
    return run_cli(
        capsys,
        "submit",
        file,
        "--collection",
        COLLECTION,
        "--seed",
        SEED,
        "--name",
        name,
        "--runs-dir",
        runs,
        "--splits-dir",
        SPLITS,
        *extra,
    )


def _ir_measures(run: Path, qrels: Path) -> dict[str, float]:
    import ir_measures
    from ir_measures import RR, Success

    measures = {"success@8": Success @ 8, "success@100": Success @ 100, "mrr@20": RR @ 20}
    got = ir_measures.calc_aggregate(
        list(measures.values()), ir_measures.read_trec_qrels(str(qrels)), ir_measures.read_trec_run(str(run))
    )
    return {name: got[m] for name, m in measures.items()}


# --- export ------------------------------------------------------------------------------------------------


def test_the_export_writes_a_run_per_run_and_seed_and_a_qrels_per_seed(made):
    runs, trec = made
    assert sorted(p.relative_to(trec).as_posix() for p in trec.rglob("*") if p.is_file()) == [
        f"qrels/seed-{SEED}.qrels",
        f"runs/bm25/seed-{SEED}.run",
        f"runs/char-ngram/seed-{SEED}.run",
    ]
    split = _split()
    qrels = [line.split() for line in _qrels_file(made).read_text().splitlines()]
    assert all(q[1] == "0" and q[3] == "1" for q in qrels)
    assert sorted((q, d) for q, d, *_ in [(x[0], x[2]) for x in qrels]) == sorted(
        (q, d) for q, ds in split.needles.items() for d in ds
    )
    for run in ("bm25", "char-ngram"):
        lines = [line.split() for line in _run_file(made, run).read_text().splitlines()]
        assert all(len(f) == 6 and f[1] == "Q0" and f[5] == run for f in lines)
        by_query: dict[str, list[tuple[int, float, str]]] = {}
        for qid, _, doc, rank, score, _ in lines:
            by_query.setdefault(qid, []).append((int(rank), float(score), doc))
        assert set(by_query) == {q.documentID for q in split.queries}  # query ids: the split's, once each
        for ranked in by_query.values():
            assert [r for r, _, _ in ranked] == list(range(1, len(ranked) + 1))
            assert all(a[1] > b[1] for a, b in zip(ranked, ranked[1:])), "scores must strictly decrease"
            assert len({d for _, _, d in ranked}) == len(ranked)


def test_ir_measures_scores_the_export_as_the_harness_does(made):
    runs, _ = made
    for run in ("bm25", "char-ngram"):
        result = load(runs / COLLECTION / run / f"seed-{SEED}.json")
        assert result["n_ranked"] == result["n_queries"]  # TREC tools average over the queries the run ranks
        got = _ir_measures(_run_file(made, run), _qrels_file(made))
        for name, value in got.items():
            assert value == pytest.approx(result["metrics"][name], abs=1e-12), (run, name)
    assert load(runs / COLLECTION / "bm25" / f"seed-{SEED}.json")["metrics"]["success@8"] > 0


def test_tied_scores_are_written_strictly_decreasing_in_the_tie_order():
    from harness.runs.trec import format_run, strictly_decreasing

    assert strictly_decreasing([3.0, 2.5, -1.0]) == ["3.0", "2.5", "-1.0"]  # distinct scores are kept
    tied = [float(x) for x in strictly_decreasing([1.0, 1.0, 1.0, 0.5, 0.5])]
    assert all(a > b for a, b in zip(tied, tied[1:])) and tied[0] == 1.0 and tied[3] == 0.5
    assert strictly_decreasing([-1e39, -1e39, -1e39]) == ["3", "2", "1"]  # past float32's range: ranks
    text = format_run({"q": [("a", 0.0), ("b", 0.0), ("c", -1.0)]}, "t", "x")
    rows = [line.split() for line in text.splitlines()]
    assert [r[2] for r in rows] == ["a", "b", "c"] and [r[3] for r in rows] == ["1", "2", "3"]
    assert float(rows[0][4]) > float(rows[1][4]) > float(rows[2][4])


@pytest.mark.parametrize(
    "scores", [[0.0, 0.0, 0.0, 0.0], [1.0, 1 - 1e-12, 1 - 2e-12, 1 - 3e-12], [5.0, 5.0, 4.9999999999, 1.0]]
)
def test_scores_a_single_precision_reader_would_tie_keep_the_harness_order(tmp_path, scores):
    """trec_eval reads scores as float32: scores apart by less than its precision must not tie there."""
    from harness.evaluation.metrics import evaluate
    from harness.runs.trec import format_qrels, format_run

    ranking = list(zip(["d1", "d2", "d3", "d4"], scores))  # in the harness's order (tie rule: id ascending)
    for needle in ("d2", "d3", "d4"):
        (tmp_path / "r").write_text(format_run({"q": ranking}, "t", "x"))
        (tmp_path / "q").write_text(format_qrels({"q": [needle]}, "x"))
        want = evaluate({"q": ranking}, {"q": [needle]}, {"q": "g"})["metrics"]
        got = _ir_measures(tmp_path / "r", tmp_path / "q")
        assert got == pytest.approx(want, abs=1e-12), needle


def test_an_id_holding_whitespace_cannot_be_written():
    from harness.errors import HarnessError
    from harness.runs.trec import format_qrels, format_run

    with pytest.raises(HarnessError, match="holds whitespace"):
        format_run({"q 1": [("a", 1.0)]}, "t", "x")
    with pytest.raises(HarnessError, match="holds whitespace"):
        format_qrels({"q": ["a\tb"]}, "x")


# --- submit ------------------------------------------------------------------------------------------------

RECOMPUTED = (
    "metrics",
    "ci95",
    "per_genre",
    "success_curve",
    "first_needle_rank",
    "n_queries",
    "n_ranked",
    "n_candidates",
    "split_sha256",
    "depth",
)


@pytest.mark.parametrize("fmt", ["trec", "rankings"])
def test_a_run_submitted_back_gives_identical_metrics(made, runs, capsys, fmt):
    from harness.runs.results import rankings_path, read_rankings
    from harness.runs.verified import verified_results

    original = runs / COLLECTION / "bm25" / f"seed-{SEED}.json"
    file = _run_file(made) if fmt == "trec" else rankings_path(original)
    rc, _, err = _submit(
        capsys,
        runs,
        file,
        "mine",
        "--format",
        fmt,
        "--submitter",
        "A. Person",
        "--description",
        "bm25,\n exported and submitted back",
    )
    assert rc == 0, err
    path = runs / COLLECTION / "mine" / f"seed-{SEED}.json"
    got, want = load(path), load(original)
    assert {k: got[k] for k in RECOMPUTED} == {k: want[k] for k in RECOMPUTED}
    assert got["system"] == "submitted" and got["config"] == {}
    sub = got["submission"]
    assert sub["format"] == fmt and sub["file"] == file.name and sub["submitter"] == "A. Person"
    assert sub["description"] == "bm25, exported and submitted back" and sub["tag"] == ("bm25" if fmt == "trec" else "")
    assert [[c for c, _ in r] for r in read_rankings(path).values()] == [
        [c for c, _ in r] for r in read_rankings(original).values()
    ]
    found = verified_results(runs, SPLITS)  # the one verified reader accepts it, fully recomputed
    assert [r["metrics"] for _, r in found[(COLLECTION, "mine")]] == [want["metrics"]]


def test_a_submission_with_tied_scores_is_put_in_the_tie_order_and_exports_as_scored(runs, tmp_path, capsys):
    """Every score tied: the harness ranks by document id ascending, whatever ranks the file gives, and the
    exported run makes TREC tools see that order (they would break ties by id descending)."""
    split = _split()
    pool = sorted(split.candidates)
    lines = []
    for q in sorted(split.needles):
        for rank, doc in enumerate(reversed(pool[:150]), 1):  # ranked by id descending, all scored 0
            lines.append(f"{q} Q0 {doc} {rank} 0 tied\n")
    file = tmp_path / "tied.run"
    file.write_text("".join(lines))
    rc, out, err = _submit(capsys, runs, file, "tied")
    assert rc == 0, err
    assert "tie order" in out + err and "top 100" in out + err
    from harness.runs.results import read_rankings

    path = runs / COLLECTION / "tied" / f"seed-{SEED}.json"
    assert all([c for c, _ in r] == pool[:100] for r in read_rankings(path).values())
    out_dir = tmp_path / "export"
    assert run_cli(capsys, "export", "--format", "trec", "--runs-dir", runs, "--out", out_dir)[0] == 0
    trec = out_dir / "trec" / COLLECTION
    got = _ir_measures(trec / "runs" / "tied" / f"seed-{SEED}.run", trec / "qrels" / f"seed-{SEED}.qrels")
    result = load(path)
    for name, value in got.items():
        assert value == pytest.approx(result["metrics"][name], abs=1e-12), name


def test_a_seed_already_recorded_or_another_systems_run_name_is_refused(made, runs, capsys):
    before = snapshot(runs)
    line = one_line_error(*_submit(capsys, runs, _run_file(made), "bm25")[::2])
    assert "exists" in line and "--overwrite" in line
    line = one_line_error(*_submit(capsys, runs, _run_file(made), "bm25", "--overwrite")[::2])
    assert "system 'bm25'" in line and "another --name" in line
    assert snapshot(runs) == before
    assert _submit(capsys, runs, _run_file(made), "mine")[0] == 0
    assert _submit(capsys, runs, _run_file(made), "mine", "--overwrite")[0] == 0


def _edit_lines(src: Path, edit) -> str:
    lines = src.read_text().splitlines(keepends=True)
    edit(lines)
    return "".join(lines)


def _swap_field(i: int, value: str, line: int = 0):
    def edit(lines):
        fields = lines[line].split()
        fields[i] = value
        lines[line] = " ".join(fields) + "\n"

    return edit


def _append(text: str):
    return lambda lines: lines.append(text)


def _duplicate_rank(lines):  # the second line takes the first line's rank
    fields = lines[1].split()
    fields[3] = lines[0].split()[3]
    lines[1] = " ".join(fields) + "\n"


def _duplicate_document(lines):  # the second line names the first line's document
    fields = lines[1].split()
    fields[2] = lines[0].split()[2]
    lines[1] = " ".join(fields) + "\n"


def _rising_score(lines):  # rank 2 scored above rank 1
    fields = lines[1].split()
    fields[4] = str(float(lines[0].split()[4]) + 1)
    lines[1] = " ".join(fields) + "\n"


# name -> (edit of the exported bm25 run, the line it breaks, words the error must hold)
BAD_TREC = {
    "unknown query": (_swap_field(0, "no-such-query"), 1, ["'no-such-query'", "not a query of demo seed 2001"]),
    "unknown document": (_swap_field(2, "no-such-doc", line=4), 5, ["'no-such-doc'", "not a candidate"]),
    "duplicate rank": (_duplicate_rank, 2, ["rank 1 again", "line 1", "one document per rank"]),
    "duplicate document": (_duplicate_document, 2, ["again", "line 1", "each document once per query"]),
    "malformed line, 5 fields": (_append("demo-0003 Q0 demo-0000 101 0.5\n"), None, ["6 fields", "got 5"]),
    "malformed line, rank not a number": (_swap_field(3, "first", line=2), 3, ["rank", "'first'"]),
    "malformed line, score not a number": (_swap_field(4, "high", line=2), 3, ["finite score", "'high'"]),
    "score rising down the ranks": (_rising_score, 2, ["rank 2 scores", "above rank 1", "line 1"]),
    "two run tags": (_swap_field(5, "other", line=3), 4, ["run tag 'other'", "line 1", "one run"]),
}


@hostile("submitted rankings", "clear error")
@pytest.mark.parametrize("case", sorted(BAD_TREC))
def test_a_bad_trec_submission_is_one_line_naming_file_and_line_and_writes_nothing(made, runs, tmp_path, capsys, case):
    edit, lineno, words = BAD_TREC[case]
    file = tmp_path / "bad.run"
    file.write_text(_edit_lines(_run_file(made), edit))
    if lineno is None:
        lineno = len(file.read_text().splitlines())
    before = snapshot(runs)
    line = one_line_error(*_submit(capsys, runs, file)[::2])
    assert f"{file}:{lineno}: " in line, line
    assert all(w in line for w in words), line
    assert snapshot(runs) == before  # nothing written, not even the run folder
    assert not (runs / COLLECTION / "mine").exists()


def _rankings_rows(made) -> list[dict]:
    from harness.runs.results import rankings_path

    path = rankings_path(made[0] / COLLECTION / "bm25" / f"seed-{SEED}.json")
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


BAD_RANKINGS = {
    "unknown query": (lambda rows: rows[0].update(queryID="no-such-query"), 1, ["not a query of demo seed 2001"]),
    "unknown document": (lambda rows: rows[1]["ranking"][3].__setitem__(0, "no-such-doc"), 2, ["not a candidate"]),
    "duplicate document": (
        lambda rows: rows[2]["ranking"].__setitem__(1, rows[2]["ranking"][0]),
        3,
        ["again", "each document once per query"],
    ),
    "query twice": (lambda rows: rows.append(rows[0]), 61, ["again (also line 1)", "one line per query"]),
    "malformed item": (lambda rows: rows[0]["ranking"].__setitem__(0, "demo-0000"), 1, ["item 1", "expected"]),
}


@hostile("submitted rankings", "clear error")
@pytest.mark.parametrize("case", sorted(BAD_RANKINGS))
def test_a_bad_rankings_file_submission_is_one_line_and_writes_nothing(made, runs, tmp_path, capsys, case):
    edit, lineno, words = BAD_RANKINGS[case]
    rows = _rankings_rows(made)
    edit(rows)
    file = tmp_path / "bad.rankings.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = snapshot(runs)
    line = one_line_error(*_submit(capsys, runs, file, "mine", "--format", "rankings")[::2])
    assert f"{file}:{lineno}: " in line and all(w in line for w in words), line
    assert snapshot(runs) == before


@hostile("submitted rankings", "clear error")
@pytest.mark.parametrize("case", ["empty file", "missing file", "unknown seed", "depth below 100"])
def test_a_submission_that_names_nothing_to_score_is_one_line(made, runs, tmp_path, capsys, case):
    file = tmp_path / "s.run"
    file.write_text("\n" if case == "empty file" else _run_file(made).read_text())
    args: list = []
    if case == "missing file":
        file = tmp_path / "absent.run"
    if case == "depth below 100":
        args = ["--depth", "50"]
    before = snapshot(runs)
    if case == "unknown seed":
        rc, _, err = run_cli(
            capsys,
            "submit",
            file,
            "--collection",
            COLLECTION,
            "--seed",
            7,
            "--name",
            "mine",
            "--runs-dir",
            runs,
            "--splits-dir",
            SPLITS,
        )
    else:
        rc, _, err = _submit(capsys, runs, file, "mine", *args)
    line = one_line_error(rc, err)
    assert {
        "empty file": "no rankings",
        "missing file": "not found",
        "unknown seed": "seed 7",
        "depth below 100": "--depth",
    }[case] in line
    assert snapshot(runs) == before
