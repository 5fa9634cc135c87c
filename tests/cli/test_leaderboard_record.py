"""`--record FILE`: the leaderboard and the export take every input from one record file, and nothing else."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from tests.conftest import ROOT, write_record
from tests.hostile import COMMITTED, committed_splits, hostile, one_line_error, run_cli, snapshot

BENCH = ROOT / "benchmarks" / "results"


@pytest.fixture
def board(tmp_path):
    """A record folder: the committed demo runs and the record naming them (relative paths), pages not made yet."""
    folder = tmp_path / "board"
    for run in ("bm25", "char-ngram"):
        shutil.copytree(COMMITTED / "demo" / run, folder / "runs" / "demo" / run)
    splits, bench = json.dumps(str(committed_splits())), json.dumps(str(BENCH))
    (folder / "record.toml").write_text(
        f'runs = "runs"\npages = "pages"\nsplits = {splits}\nbench_results = {bench}\n', encoding="utf-8"
    )
    return folder


def test_a_record_gives_the_pages_the_equivalent_flags_give(board, tmp_path, capsys, bench_installed):
    flags = tmp_path / "flags-pages"
    by_flags = [
        "--runs-dir",
        board / "runs",
        "--out",
        flags,
        "--splits-dir",
        committed_splits(),
        "--bench-results",
        BENCH,
    ]
    assert run_cli(capsys, "leaderboard", *by_flags, "--reported")[0] == 0
    rc, out, err = run_cli(capsys, "leaderboard", "--record", board / "record.toml", "--reported")
    assert rc == 0, err
    assert f"the tables: {board / 'pages' / 'main.md'}" in out
    pages = snapshot(board / "pages")
    assert {"main.md", "performance.md", "reported.md", "collections/demo.md", "success-at-k-demo.png"} <= set(pages)
    assert pages == snapshot(flags)


def test_a_folder_holding_record_toml_stands_for_it(board, tmp_path, capsys):
    assert run_cli(capsys, "leaderboard", "--record", board / "record.toml", "--no-plots")[0] == 0
    first = snapshot(board / "pages")
    shutil.rmtree(board / "pages")
    assert run_cli(capsys, "leaderboard", "--record", board, "--no-plots")[0] == 0
    assert snapshot(board / "pages") == first


@hostile("malformed record", "clear error")
@pytest.mark.parametrize(
    "verb, flag",
    [
        ("leaderboard", "--runs-dir"),
        ("leaderboard", "--out"),
        ("leaderboard", "--splits-dir"),
        ("leaderboard", "--bench-results"),
        ("export", "--runs-dir"),
    ],
)
def test_a_flag_the_record_replaces_is_refused_beside_it(board, tmp_path, capsys, verb, flag):
    line = one_line_error(*run_cli(capsys, verb, "--record", board, flag, tmp_path / "x", "--out", tmp_path / "x")[::2])
    assert "--record with" in line and flag in line and "give --record alone" in line
    assert not (board / "pages").exists() and not (tmp_path / "x").exists()


@hostile("malformed record", "clear error")
@pytest.mark.parametrize(
    "text, key",
    [
        ('runs = "runs"\npages = "pages"\nstale = "stale.json"\n', "'stale'"),  # named, not there
        ('runs = "runs"\npages = "pages"\nrun = "runs"\n', "'run'"),  # a typo
        ('pages = "pages"\n', "'runs'"),  # left out
        ('runs = "runs"\npages = "runs"\n', "'pages'"),  # the pages over the data
    ],
)
def test_a_bad_record_is_one_line_and_writes_nothing(board, capsys, text, key):
    (board / "record.toml").write_text(text, encoding="utf-8")
    before = snapshot(board)
    line = one_line_error(*run_cli(capsys, "leaderboard", "--record", board, "--no-plots")[::2])
    assert str(board / "record.toml") in line and key in line
    assert snapshot(board) == before and not (board / "pages").exists()


def test_registries_are_read_from_the_record_alone(board, capsys):
    """A stale.json lying beside the runs is not read unless the record names it."""
    (board / "stale.json").write_text(
        json.dumps({"runs": [{"collection": "demo", "run": "char-ngram", "reason": "made with a defect"}]}),
        encoding="utf-8",
    )
    assert run_cli(capsys, "leaderboard", "--record", board, "--no-plots")[0] == 0
    assert "## Stale runs" not in (board / "pages" / "main.md").read_text(encoding="utf-8")
    write_record(board, runs=board / "runs", pages=board / "pages", stale=board / "stale.json")
    assert run_cli(capsys, "leaderboard", "--record", board, "--no-plots")[0] == 0
    main = (board / "pages" / "main.md").read_text(encoding="utf-8")
    assert "| char-ngram " in main.split("## Stale runs")[1] and "made with a defect" in main


def test_export_from_a_record_leaves_its_stale_runs_out(board, tmp_path, capsys):
    (board / "stale.json").write_text(
        json.dumps({"runs": [{"collection": "demo", "run": "char-ngram", "reason": "made with a defect"}]}),
        encoding="utf-8",
    )
    write_record(board, runs=board / "runs", pages=board / "pages", stale=board / "stale.json")
    assert run_cli(capsys, "export", "--record", board, "--out", tmp_path / "from-record")[0] == 0
    assert run_cli(capsys, "export", "--runs-dir", board / "runs", "--out", tmp_path / "from-flags")[0] == 0
    runs = {
        where: sorted(row["run"] for row in csv.DictReader((tmp_path / where / "leaderboard.csv").open()))
        for where in ("from-record", "from-flags")
    }
    assert runs == {"from-record": ["bm25"], "from-flags": ["bm25", "char-ngram"]}
    assert not (board / "pages").exists(), "the export writes no page"
