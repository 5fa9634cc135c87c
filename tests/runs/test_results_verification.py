"""Every verb that shows a result reads it through one verified reader: published fields are
recomputed from the rankings and the manifest or checked against them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hostile import (
    COMMITTED,
    committed_splits,
    hostile,
    load,
    one_line_error,
    read_rankings_lines,
    run_cli,
    save,
    snapshot,
    write_rankings_lines,
)

SPLITS = committed_splits()
SEAL = "result_sha256"


@pytest.fixture(scope="module")
def made_runs(tmp_path_factory):
    """bm25 and char-ngram on demo seeds 0 and 1001, written by this harness (sealed)."""
    from harness.cli import main

    base = tmp_path_factory.mktemp("made") / "runs"
    assert (
        main(
            [
                "run",
                "bm25",
                "char-ngram",
                "--collection",
                "demo",
                "--seeds",
                "0",
                "1001",
                "--runs-dir",
                str(base),
                "--splits-dir",
                str(SPLITS),
                "--no-progress",
            ]
        )
        == 0
    )
    return base


@pytest.fixture
def runs(made_runs, tmp_path):
    dst = tmp_path / "runs"
    shutil.copytree(made_runs, dst)
    return dst


def _result(runs: Path, run="bm25", seed=0) -> Path:
    return runs / "demo" / run / f"seed-{seed}.json"


def _verbs(runs: Path, out: Path):
    return {
        "leaderboard": ["leaderboard", "--runs-dir", runs, "--out", out, "--splits-dir", SPLITS, "--no-plots"],
        "export": ["export", "--runs-dir", runs, "--out", out],
        "compare": [
            "compare",
            "bm25",
            "char-ngram",
            "--collection",
            "demo",
            "--runs-dir",
            runs,
            "--splits-dir",
            SPLITS,
            "--resamples",
            "200",
        ],
        "topic-share": [
            "topic-share",
            "bm25",
            "char-ngram",
            "--collection",
            "demo",
            "--runs-dir",
            runs,
            "--splits-dir",
            SPLITS,
        ],
    }


def _set(path, value):
    def edit(obj):
        node = obj
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value(node[path[-1]]) if callable(value) else value

    return edit


def _first_query(obj):
    return min(obj["first_needle_rank"])


# Recomputed or checked fields: an edit is found even when the seal is recomputed after it.
RESEALED = {
    "metrics.success@8": _set(("metrics", "success@8"), lambda v: min(1.0, v + 0.25)),
    "metrics.success@100": _set(("metrics", "success@100"), lambda v: v / 2),
    "metrics.mrr@20": _set(("metrics", "mrr@20"), lambda v: v + 0.01),
    "ci95.success@8": _set(("ci95", "success@8"), [0.0, 1.0]),
    "ci95.mrr@20": _set(("ci95", "mrr@20"), lambda v: [v[0], v[1] + 0.1]),
    "per_genre": lambda o: o["per_genre"][min(o["per_genre"])].update({"success@8": 1.0}),
    "per_genre n_queries": lambda o: o["per_genre"][min(o["per_genre"])].update({"n_queries": 999}),
    "success_curve": _set(("success_curve",), lambda v: [1.0] * len(v)),
    "success_curve shorter": _set(("success_curve",), lambda v: v[:50]),
    "first_needle_rank all 1": _set(("first_needle_rank",), lambda v: {q: 1 for q in v}),
    "first_needle_rank one query": lambda o: o["first_needle_rank"].update({_first_query(o): 1}),
    "first_needle_rank query dropped": lambda o: o["first_needle_rank"].pop(_first_query(o)),
    "n_queries": _set(("n_queries",), lambda v: v + 1),
    "n_ranked": _set(("n_ranked",), lambda v: v - 1),
    "n_candidates": _set(("n_candidates",), lambda v: v * 10),
    "depth 5": _set(("depth",), 5),
    "split_sha256": _set(("split_sha256",), "0" * 64),
    "system unregistered": _set(("system",), "no-such-system"),
    "config unknown key": lambda o: o["config"].update({"no_such_key": 1}),
    "rankings_sha256": _set(("rankings_sha256",), "f" * 64),
    "seed": _set(("seed",), 2001),
    "run_name": _set(("run_name",), "other"),
    "collection": _set(("collection",), "pan19-en"),
}
# Fields nothing can recompute: the seal of a result written by this harness covers them.
SEALED_ONLY = {
    "depth 200": _set(("depth",), 200),
    "provenance.device": _set(("provenance", "device"), "NVIDIA H100"),
    "provenance.git_commit": _set(("provenance", "git_commit"), "0" * 40),
    "provenance.wall_seconds": _set(("provenance", "wall_seconds"), 0.001),
    "extra": lambda o: o["extra"].update({"note": "edited"}),
    "system (another registered one)": _set(("system",), "char-ngram"),
    "config value": lambda o: o["config"].update({"k1": 0.1}),
}


@hostile("tampered result, resealed", "clear error")
@pytest.mark.parametrize("verb", ["leaderboard", "export", "compare"])
@pytest.mark.parametrize("field", sorted(RESEALED))
def test_an_edit_that_recomputation_finds_is_refused_even_resealed(runs, tmp_path, capsys, field, verb):
    path = _result(runs)
    obj = load(path)
    RESEALED[field](obj)
    save(path, obj, reseal=True)
    out = tmp_path / "out"
    line = one_line_error(*run_cli(capsys, *_verbs(runs, out)[verb])[::2])
    assert "seed-0" in line or "demo" in line
    assert not out.exists()


@hostile("tampered result, sealed", "clear error")
@pytest.mark.parametrize("verb", ["leaderboard", "export", "compare", "topic-share"])
@pytest.mark.parametrize("field", sorted(SEALED_ONLY))
def test_an_edit_of_a_sealed_field_is_refused(runs, tmp_path, capsys, field, verb):
    path = _result(runs)
    obj = load(path)
    SEALED_ONLY[field](obj)
    save(path, obj)  # not resealed
    out = tmp_path / "out"
    line = one_line_error(*run_cli(capsys, *_verbs(runs, out)[verb])[::2])
    assert SEAL in line or "config" in line or "mixes" in line
    assert not out.exists()


def _legacy(tmp_path, run="bm25") -> Path:
    """A committed demo run copied without its seal, as results written before sealing are."""
    dst = tmp_path / "runs" / "demo" / run
    shutil.copytree(COMMITTED / "demo" / run, dst)
    for path in dst.glob("seed-*.json"):
        obj = load(path)
        obj.pop(SEAL, None)
        save(path, obj)
    assert SEAL not in load(dst / "seed-0.json")
    return tmp_path / "runs"


@hostile("tampered result, unsealed (committed)", "clear error")
@pytest.mark.parametrize("field", sorted(k for k in RESEALED if k not in ("rankings_sha256",)))
def test_an_unsealed_committed_result_is_verified_by_recomputation(tmp_path, capsys, field):
    runs = _legacy(tmp_path)
    path = runs / "demo" / "bm25" / "seed-0.json"
    obj = load(path)
    RESEALED[field](obj)
    save(path, obj)
    one_line_error(
        *run_cli(
            capsys, "leaderboard", "--runs-dir", runs, "--out", tmp_path / "lb", "--splits-dir", SPLITS, "--no-plots"
        )[::2]
    )
    assert not (tmp_path / "lb").exists()


@hostile("tampered result, unsealed (committed)", "clear error")
@pytest.mark.parametrize("verb", ["compare", "topic-share"])
def test_compare_and_topic_share_verify_what_they_read(tmp_path, capsys, verb):
    """Every first-needle rank of a bm25 result set to 1 once made compare report 100.0 vs 67.1."""
    runs = _legacy(tmp_path, "bm25")
    _legacy(tmp_path, "char-ngram")
    for path in (runs / "demo" / "bm25").glob("seed-*.json"):
        obj = load(path)
        obj["first_needle_rank"] = {q: 1 for q in obj["first_needle_rank"]}
        save(path, obj)
    line = one_line_error(*run_cli(capsys, *_verbs(runs, tmp_path / "x")[verb])[::2])
    assert "first_needle_rank" in line


@hostile("tampered result, unsealed (committed)", "held")
def test_a_result_without_ci95_is_exported_with_the_recomputed_interval(tmp_path, capsys):
    runs = _legacy(tmp_path)
    fresh = run_cli(capsys, "export", "--runs-dir", runs, "--out", tmp_path / "before", "--format", "json")
    assert fresh[0] == 0
    for path in (runs / "demo" / "bm25").glob("seed-*.json"):
        obj = load(path)
        del obj["ci95"]
        save(path, obj)
    rc, _, err = run_cli(capsys, "export", "--runs-dir", runs, "--out", tmp_path / "ex", "--format", "json")
    assert rc == 0, err
    assert snapshot(tmp_path / "ex") == snapshot(tmp_path / "before")


RANKINGS = {
    "a candidate outside the split": lambda rows: rows[0]["ranking"].insert(0, ["not-a-candidate", 99.0]),
    "a candidate twice": lambda rows: rows[0]["ranking"].append(list(rows[0]["ranking"][0])),
    "a query outside the split": lambda rows: rows.append({"queryID": "not-a-query", "ranking": []}),
    "deeper than depth": lambda rows: rows[0]["ranking"].extend([[f"x{i}", -1.0] for i in range(150)]),
    "order reversed (scores negated)": lambda rows: [
        r.update(ranking=[[c, -s] for c, s in r["ranking"]]) for r in rows
    ],
    "a query dropped": lambda rows: rows.pop(0),
    "scores replaced": lambda rows: [r.update(ranking=[[c, 0.0] for c, _ in r["ranking"]]) for r in rows],
    "empty": lambda rows: rows.clear(),
}


@hostile("tampered rankings, result resealed", "clear error")
@pytest.mark.parametrize("case", sorted(RANKINGS))
def test_tampered_rankings_are_refused(runs, tmp_path, capsys, case):
    import hashlib

    path = _result(runs)
    rpath = path.with_name("seed-0.rankings.jsonl.gz")
    rows = read_rankings_lines(rpath)
    RANKINGS[case](rows)
    write_rankings_lines(rpath, rows)
    obj = load(path)
    obj["rankings_sha256"] = hashlib.sha256(rpath.read_bytes()).hexdigest()
    save(path, obj, reseal=True)
    rc, _, err = run_cli(capsys, *_verbs(runs, tmp_path / "lb")["leaderboard"])
    if case == "scores replaced" and rc == 0:  # the tie rule orders equal scores by id: the metrics change
        pytest.fail("scores replaced, metrics unchanged: not a tampering this test can see")
    one_line_error(rc, err)


MALFORMED = {
    "a list": "[]",
    "truncated": '{"schema_version": 1,',
    "empty": "",
    "not UTF-8": b"\xff\xfe{}",
    "lone surrogate": None,
    "100,000 deep": "[" * 100000 + "]" * 100000,
    "ci95 of the wrong shape": None,
    "provenance a list": None,
}


@hostile("malformed result file", "clear error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_result_is_one_line(runs, tmp_path, capsys, case):
    path = _result(runs)
    obj = load(path)
    if case == "lone surrogate":
        path.write_text(json.dumps(obj).replace('"bm25"', '"bm25\\ud800"', 1))
    elif case == "ci95 of the wrong shape":
        obj["ci95"]["success@8"] = 0.5
        save(path, obj, reseal=True)
    elif case == "provenance a list":
        obj["provenance"] = []
        save(path, obj, reseal=True)
    else:
        data = MALFORMED[case]
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    for verb in ("leaderboard", "export", "compare"):
        out = tmp_path / f"out-{verb}"
        line = one_line_error(*run_cli(capsys, *_verbs(runs, out)[verb])[::2])
        assert "seed-0.json" in line
        assert not out.exists()


@hostile("mistyped runs folder", "clear error")
@pytest.mark.parametrize("kind", ["missing", "empty", "a file"])
def test_export_over_an_export_from_a_mistyped_runs_folder_keeps_the_old_export(runs, tmp_path, capsys, kind):
    """Once wrote three 0-byte files over a good export, exit 0."""
    out = tmp_path / "ex"
    assert run_cli(capsys, "export", "--runs-dir", runs, "--out", out)[0] == 0
    before = snapshot(out)
    assert all(before.values())
    wrong = tmp_path / "runz"
    if kind == "empty":
        wrong.mkdir()
    elif kind == "a file":
        wrong.write_text("x")
    line = one_line_error(*run_cli(capsys, "export", "--runs-dir", wrong, "--out", out)[::2])
    assert "runz" in line
    assert snapshot(out) == before


@hostile("tampered result, resealed", "clear error")
def test_run_recomputes_a_seed_whose_result_does_not_verify(runs, capsys):
    path = _result(runs)
    obj = load(path)
    good = obj["metrics"]["success@8"]
    obj["metrics"]["success@8"] = 1.0
    save(path, obj, reseal=True)
    rc, out, err = run_cli(
        capsys,
        "run",
        "bm25",
        "--collection",
        "demo",
        "--seeds",
        "0",
        "--runs-dir",
        runs,
        "--splits-dir",
        SPLITS,
        "--no-progress",
    )
    assert rc == 0 and "recomputing" in out + err
    assert load(path)["metrics"]["success@8"] == good


def _submitted(runs: Path, capsys) -> Path:
    """bm25's seed-0 rankings submitted back as the run `mine` (system `submitted`)."""
    from harness.runs.results import rankings_path

    rc, _, err = run_cli(
        capsys,
        "submit",
        rankings_path(_result(runs)),
        "--format",
        "rankings",
        "--collection",
        "demo",
        "--seed",
        0,
        "--name",
        "mine",
        "--submitter",
        "A. Person",
        "--runs-dir",
        runs,
        "--splits-dir",
        SPLITS,
    )
    assert rc == 0, err
    return _result(runs, "mine")


# Submitted rankings are read by the same reader: recomputed like any result, their metadata sealed.
SUBMITTED_EDITS = {
    "metrics, resealed": (lambda o: o["metrics"].update({"success@8": 0.5}), True, "differ"),
    "submitter, not resealed": (lambda o: o["submission"].update({"submitter": "Someone Else"}), False, SEAL),
    "a config key, resealed": (lambda o: o["config"].update({"k1": 0.1}), True, "empty config"),
    "submission dropped, resealed": (lambda o: o.pop("submission"), True, "needs a submission"),
    "another system, resealed": (lambda o: o.update(system="bm25"), True, "submission field"),
}


@hostile("tampered result, resealed", "clear error")
@pytest.mark.parametrize("case", sorted(SUBMITTED_EDITS))
def test_submitted_rankings_are_verified_like_any_result(runs, tmp_path, capsys, case):
    from harness.runs.verified import verified_results

    path = _submitted(runs, capsys)
    assert [r["system"] for _, r in verified_results(runs, SPLITS)[("demo", "mine")]] == ["submitted"]
    edit, reseal, words = SUBMITTED_EDITS[case]
    obj = load(path)
    edit(obj)
    save(path, obj, reseal=reseal)
    out = tmp_path / "out"
    line = one_line_error(*run_cli(capsys, *_verbs(runs, out)["leaderboard"])[::2])
    assert "mine" in line and words in line, line
    assert not out.exists()


def test_new_results_are_sealed_and_verify(runs):
    from harness.runs.results import seal
    from harness.runs.verified import verified_results

    obj = load(_result(runs))
    assert obj[SEAL] == seal(obj)
    found = verified_results(runs, SPLITS)
    assert sorted(found) == [("demo", "bm25"), ("demo", "char-ngram")]
    assert all(len(v) == 2 for v in found.values())


@pytest.mark.slow
def test_every_committed_result_verifies_as_it_is():
    """The committed results are read as they are on disk: no rewrite, no seal needed."""
    from harness.reports.board import load_runs

    before = {p: p.stat().st_mtime_ns for p in COMMITTED.rglob("*") if p.is_file()}
    # current runs on the record's manifests; stale ones (stale.json) on the manifests they were made on
    stale = COMMITTED.parent / "stale.json"
    found = [load_runs(COMMITTED, stale_registry=stale), load_runs(COMMITTED, stale=True, stale_registry=stale)]
    assert sum(len(v) for runs in found for v in runs.values()) == len(list(COMMITTED.glob("*/*/seed-*.json")))
    assert before == {p: p.stat().st_mtime_ns for p in COMMITTED.rglob("*") if p.is_file()}
