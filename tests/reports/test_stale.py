"""Stale runs: kept in place, verified against the manifests they were made on, shown apart with their reason."""

import json
import shutil

import pytest

from harness.errors import DataError
from harness.plugins import load_registry, plugin_manager
from harness.reports.board import load_board
from harness.reports.leaderboard import render_pages
from harness.reports.record import Registries
from harness.reports.stale import load_stale
from harness.runs.run_job import RunJob, run_job


def _run(runs, splits, system, fraction):
    reg = load_registry(plugin_manager(entrypoints=False))
    run_job(
        reg,
        RunJob(
            systems=[system],
            collection="demo",
            seeds=[0],
            runs_dir=runs,
            splits_dir=splits,
            author_fraction=fraction,
            progress=False,
        ),
        log=lambda *_: None,
    )


def _registry(runs):
    """The stale-runs registry written beside the runs folder, named outright."""
    return Registries(stale=runs.parent / "stale.json")


@pytest.fixture
def board_dirs(tmp_path):
    runs, splits = tmp_path / "lb" / "runs", tmp_path / "splits"
    _run(runs, splits, "char-ngram", 0.5)  # made on the old manifest
    shutil.copytree(splits / "demo", splits / "demo-v1")
    shutil.rmtree(splits / "demo")
    _run(runs, splits, "bm25", 1.0)  # the corrected one
    (tmp_path / "lb" / "stale.json").write_text(
        json.dumps(
            {
                "runs": [
                    {
                        "collection": "demo",
                        "run": "char-ngram",
                        "manifests": "demo-v1",
                        "reason": "made on demo v1; rerun pending",
                    }
                ]
            }
        )
    )
    return runs, splits


def test_a_stale_run_verifies_on_its_own_manifests_and_stays_out_of_the_tables(
    board_dirs,
):
    runs, splits = board_dirs
    board = load_board(runs, splits_dir=splits, plots=False, registries=_registry(runs))
    assert list(board.runs) == [("demo", "bm25")] and list(board.stale_runs) == [("demo", "char-ngram")]
    pages = render_pages(board)
    main = pages["main.md"]
    table, stale = main.split("## Stale runs")
    assert "| char-ngram " not in table and "| char-ngram " in stale and "made on demo v1; rerun pending" in stale
    assert "## Stale runs" in pages["collections/demo.md"]


def test_without_the_registry_the_two_splits_of_a_seed_are_an_error(board_dirs):
    runs, splits = board_dirs
    (runs.parent / "stale.json").unlink()
    with pytest.raises(DataError, match="another split"):
        load_board(runs, splits_dir=splits, plots=False)


def test_a_registry_is_read_from_the_path_named_never_from_beside_the_runs(board_dirs):
    """A stale.json that happens to lie beside the runs folder (the current folder, /tmp for
    /tmp/runs) must not move runs out of the tables: a registry is read only where it is named."""
    runs, splits = board_dirs
    with pytest.raises(DataError, match="another split"):  # the registry beside is not read: two splits of a seed
        load_board(runs, splits_dir=splits, plots=False)
    with pytest.raises(DataError, match="stale-runs registry not found"):
        load_board(runs, splits_dir=splits, plots=False, registries=Registries(stale=runs.parent / "nowhere.json"))


def test_a_malformed_registry_is_one_error(tmp_path):
    (tmp_path / "stale.json").write_text('{"runs": [{"run": "x"}]}')
    with pytest.raises(DataError, match="not a stale-runs registry"):
        load_stale(tmp_path / "stale.json")


def test_a_run_made_with_a_defect_since_fixed_is_stale_on_the_current_manifests(tmp_path):
    """An entry without `manifests` (a run made on today's data, with code since corrected) keeps
    the run out of the tables and verifies it against the collection's current manifests."""
    runs, splits = tmp_path / "lb" / "runs", tmp_path / "splits"
    _run(runs, splits, "char-ngram", 1.0)
    _run(runs, splits, "bm25", 1.0)
    (tmp_path / "lb" / "stale.json").write_text(
        json.dumps(
            {"runs": [{"collection": "demo", "run": "char-ngram", "reason": "made with a defect; rerun pending"}]}
        )
    )
    board = load_board(runs, splits_dir=splits, plots=False, registries=_registry(runs))
    assert list(board.runs) == [("demo", "bm25")] and list(board.stale_runs) == [("demo", "char-ngram")]
    assert board.stale_entries[("demo", "char-ngram")].manifests == ""
    assert "made with a defect; rerun pending" in render_pages(board)["main.md"].split("## Stale runs")[1]
