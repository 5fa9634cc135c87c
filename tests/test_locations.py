"""Where the harness reads and writes (harness.locations): flag > environment > per-user home;
nothing but the read-only record is resolved from the install folder; `where`, `--debug` and
one-line OSErrors in the CLI."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness import locations
from harness.cli import main
from tests.conftest import RECORD, ROOT


@pytest.fixture
def home(tmp_path, monkeypatch):
    for var in (locations.RUNS_ENV, locations.CORPORA_ENV, locations.CACHE_ENV, locations.MODEL_DIR_ENV,
                locations.BENCH_ENV, locations.HRS_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(locations.HOME_ENV, str(tmp_path / "home"))
    return tmp_path / "home"


def test_flag_beats_environment_beats_home(home, tmp_path, monkeypatch):
    assert locations.runs_dir() == home / "runs"
    assert locations.corpora_dir() == home / "corpora"
    assert locations.bench_dir() == home / "bench"
    assert locations.leaderboard_dir() == home / "leaderboards" and locations.export_dir() == home / "export"
    monkeypatch.setenv(locations.RUNS_ENV, str(tmp_path / "env-runs"))
    monkeypatch.setenv(locations.CORPORA_ENV, str(tmp_path / "env-corpora"))
    monkeypatch.setenv(locations.BENCH_ENV, str(tmp_path / "env-bench"))
    assert locations.runs_dir() == tmp_path / "env-runs"
    assert locations.corpora_dir() == tmp_path / "env-corpora" and locations.bench_dir() == tmp_path / "env-bench"
    assert locations.runs_dir(tmp_path / "flag") == tmp_path / "flag"
    assert locations.corpora_dir(tmp_path / "flag") == tmp_path / "flag"
    assert locations.built_splits_dir(tmp_path / "flag") == tmp_path / "flag-splits"


def test_defaults_are_per_user_folders_not_the_install(monkeypatch, tmp_path):
    from platformdirs import user_cache_dir, user_data_dir

    monkeypatch.delenv(locations.HOME_ENV)
    monkeypatch.delenv(locations.CACHE_ENV, raising=False)
    monkeypatch.delenv(locations.MODEL_DIR_ENV, raising=False)
    assert locations.home() == Path(user_data_dir("aa-harness", appauthor=False))
    assert locations.cache_dir() == Path(user_cache_dir("aa-harness", appauthor=False))
    assert locations.model_dirs() == [locations.cache_dir() / "models"]
    package = ROOT / "harness"
    resolved = [Path(loc.path.split(" then ")[0]) for loc in locations.all_locations() if loc.path.startswith("/")]
    inside = [p for p in resolved if p.is_relative_to(package)]
    assert inside == [RECORD]  # the record alone is read from the package


def test_hrs_has_no_default(home):
    assert locations.hrs_dir() is None


def test_where_prints_every_location(home, capsys):
    assert main(["where"]) == 0
    out = capsys.readouterr().out
    for loc in locations.all_locations():
        assert loc.what in out and loc.path in out
    assert str(home / "runs") in out and "AA_HARNESS_RUNS_DIR" in out and "--runs-dir" in out


def test_record_is_read_through_package_resources():
    assert locations.record_splits_dir() == RECORD
    assert (RECORD / "demo" / "seed-0.json").is_file() and (RECORD / "blogs-xtopic" / "topic-labels.json").is_file()
    from harness.data.builtin import topic_labels_path

    assert topic_labels_path("blogs-xtopic") == RECORD / "blogs-xtopic" / "topic-labels.json"


def test_a_run_from_an_empty_folder_writes_only_into_the_home(home, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = sorted(p for p in RECORD.rglob("*"))
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--no-progress"]) == 0
    assert (home / "runs" / "demo" / "bm25" / "seed-0.json").is_file()
    assert not (home / "runs-splits").exists()  # seed 0 of demo is in the record
    assert main(["leaderboard", "--no-plots"]) == 0 and (home / "leaderboards" / "main.md").is_file()
    assert main(["export"]) == 0 and (home / "export" / "leaderboard.csv").is_file()
    assert list(work.iterdir()) == [] and sorted(p for p in RECORD.rglob("*")) == before
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "7", "--no-progress"]) == 0
    assert (home / "runs-splits" / "demo" / "seed-7.json").is_file() and not (RECORD / "demo" / "seed-7.json").exists()


def test_split_overwrite_compares_with_the_record_and_never_writes_it(home, capsys):
    before = (RECORD / "demo" / "seed-0.json").read_bytes()
    assert main(["split", "--collection", "demo", "--seeds", "0", "--overwrite"]) == 0
    assert (RECORD / "demo" / "seed-0.json").read_bytes() == before
    assert not (home / "runs-splits" / "demo" / "seed-0.json").exists()
    assert main(["split", "--collection", "demo", "--seeds", "0", "--overwrite", "--author-fraction", "0.4"]) == 2
    assert "differs from the harness's record" in capsys.readouterr().err
    assert (RECORD / "demo" / "seed-0.json").read_bytes() == before


def test_an_oserror_is_one_line_naming_the_path(home, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    runs = tmp_path / "runs"
    assert main(["run", "bm25", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["export", "--runs-dir", str(runs), "--out", str(blocker / "export")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aa-harness: error: ") and str(blocker) in err[0], err


def test_debug_prints_the_traceback_with_its_cause(home, tmp_path, capsys, monkeypatch):
    args = ["compare", "bm25", "char-ngram", "--collection", "demo", "--runs-dir", str(tmp_path / "none")]
    assert main(args) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert main(["--debug", *args]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("aa-harness: error: ")
    monkeypatch.setenv("AA_HARNESS_DEBUG", "1")
    assert main(args) == 2 and "Traceback" in capsys.readouterr().err


def test_library_messages_go_through_logging(home, tmp_path, capsys):
    runs = tmp_path / "runs"
    args = ["run", "bm25", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]
    assert main(args) == 0 and main(args) == 0
    err = capsys.readouterr().err
    assert "aa-harness: bm25 on demo seed 0: up to date" in err


def test_results_record_the_harness_version(home, tmp_path):
    import json

    assert main(["run", "bm25", "--seeds", "0", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]) == 0
    res = json.loads((tmp_path / "runs" / "demo" / "bm25" / "seed-0.json").read_text())
    assert res["provenance"]["harness_version"] and res["provenance"]["git_commit"]
