"""Where the harness reads and writes (harness.foundation.locations): flag > environment > per-user home;
nothing but the read-only record is resolved from the install folder; `where`, `--debug` and
one-line OSErrors in the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.foundation import locations
from tests.conftest import RECORD, ROOT


@pytest.fixture
def home(tmp_path, monkeypatch):
    for var in (
        locations.RUNS_ENV,
        locations.CORPORA_ENV,
        locations.CACHE_ENV,
        locations.MODEL_DIR_ENV,
        locations.BENCH_ENV,
        locations.HRS_ENV,
    ):
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
    inside = [p for p in resolved if p.is_relative_to(package) or p.is_relative_to(RECORD)]
    assert inside == [RECORD]  # the record alone is read from where the harness is


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


def test_a_file_named_like_a_registered_collection_is_refused(home, tmp_path, capsys):
    from tests.conftest import doc, write_jsonl

    path = write_jsonl(tmp_path / "pan19-en.jsonl.gz", [doc(i, f"a{i % 3}", f"g{i % 2}") for i in range(12)], gz=True)
    runs = tmp_path / "runs"
    assert (
        main(["run", "bm25", "--collection", str(path), "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'pan19-en'" in err[0] and "--name-collection" in err[0]
    assert not runs.exists() and not (tmp_path / "runs-splits").exists()
    assert (
        main(
            [
                "run",
                "bm25",
                "--collection",
                str(path),
                "--name-collection",
                "my-pan",
                "--seeds",
                "0",
                "--runs-dir",
                str(runs),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (runs / "my-pan" / "bm25" / "seed-0.json").is_file() and not (runs / "pan19-en").exists()


def test_compare_and_topic_share_without_manifests_are_one_line(home, tmp_path, small_collection_file, capsys):
    import shutil

    runs = tmp_path / "runs"
    for system in ("bm25", "char-ngram"):
        assert (
            main(
                [
                    "run",
                    system,
                    "--collection",
                    str(small_collection_file),
                    "--seeds",
                    "0",
                    "--runs-dir",
                    str(runs),
                    "--no-progress",
                ]
            )
            == 0
        )
    shutil.rmtree(tmp_path / "runs-splits")
    capsys.readouterr()
    assert main(["compare", "bm25", "char-ngram", "--collection", "small", "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "split manifest" in err[0] and "--splits-dir" in err[0], err
    assert main(["topic-share", "bm25", "--collection", str(small_collection_file), "--runs-dir", str(runs)]) == 2


def test_collections_finds_the_one_file_collections(home, tmp_path, monkeypatch, capsys):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    for name in ("reddit-xsub", "blogs-xtopic"):
        (corpora / f"{name}.jsonl.gz").write_bytes(b"")
    monkeypatch.setenv(locations.CORPORA_ENV, str(corpora))
    assert main(["collections"]) == 0
    rows = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines() if line.startswith("|")}
    for name in ("reddit-xsub", "blogs-xtopic"):
        assert "| yes " in rows[name] and str(corpora) in rows[name]
    assert "None.jsonl.gz" not in "".join(rows.values()) and "| NO " in rows["pan19-en"]


def test_recorded_commit_is_the_harness_own_inside_another_repository(tmp_path, monkeypatch):
    import subprocess
    import sys
    import types

    from harness.foundation import provenance

    user = tmp_path / "user-repo"
    user.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=user, check=True)
    subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@e", "commit", "-q", "--allow-empty", "-m", "u"],
        cwd=user,
        check=True,
    )
    theirs = subprocess.run(["git", "rev-parse", "HEAD"], cwd=user, capture_output=True, text=True).stdout.strip()
    ours = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(user)
    monkeypatch.delenv("AA_HARNESS_GIT_COMMIT", raising=False)
    assert provenance.git_commit().removesuffix("-dirty") == ours != theirs  # a development checkout: its HEAD
    # installed (no checkout above the package): the commit written at build time, never live git
    monkeypatch.setattr(provenance, "development_checkout", lambda: None)
    monkeypatch.setitem(
        sys.modules, "harness._version", types.SimpleNamespace(__version__="9.9", __commit__="gabc1234")
    )
    assert provenance.git_commit() == "abc1234" and provenance.harness_version() == "9.9"
    monkeypatch.setenv("AA_HARNESS_GIT_COMMIT", "override")
    assert provenance.git_commit() == "override"


def test_a_workspace_that_is_a_file_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    home.write_text("not a folder")
    monkeypatch.setenv(locations.HOME_ENV, str(home))
    assert main(["run", "bm25", "--seeds", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(home) in err[0] and err[0].startswith("aa-harness: error: ")
    assert home.read_text() == "not a folder"


def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(home, tmp_path, monkeypatch, capsys):
    import errno
    import os

    runs = tmp_path / "runs"

    def full(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(os, "replace", full)
    assert main(["run", "bm25", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and os.strerror(errno.ENOSPC) in err[0] and str(runs) in err[0], err
    assert not [p for p in runs.rglob("*") if p.is_file()]  # no result, no rankings, no temporary file


def test_pages_and_exports_show_the_plugin_version_beside_each_row(home, tmp_path):
    import csv
    import json

    from harness.reports.leaderboard import plugin_version

    runs = tmp_path / "runs"
    assert main(["run", "bm25", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
    res = json.loads((runs / "demo" / "bm25" / "seed-0.json").read_text())
    assert res["provenance"]["plugin"]["name"] == "plugins.bm25"
    shown = plugin_version(res) or "–"
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(tmp_path / "lb"), "--no-plots"]) == 0
    rows = [line for line in (tmp_path / "lb" / "main.md").read_text().splitlines() if line.startswith("| demo ")]
    assert rows and all(line.rstrip(" |").endswith(shown) for line in rows), rows
    assert main(["export", "--runs-dir", str(runs), "--out", str(tmp_path / "ex")]) == 0
    with open(tmp_path / "ex" / "leaderboard.csv", encoding="utf-8") as f:
        assert [r["plugin"] for r in csv.DictReader(f)] == [plugin_version(res)]


@pytest.mark.parametrize(
    "env, inside",
    [
        ("AA_HARNESS_HOME", RECORD),
        ("AA_HARNESS_HOME", ROOT / "leaderboards" / "h"),
        ("AA_HARNESS_CACHE", ROOT / "harness" / "c"),
        ("AA_HARNESS_STORE", ROOT / "plugins" / "s"),
    ],
)
def test_a_per_user_folder_inside_the_package_or_the_checkouts_files_is_one_line(
    env, inside, home, monkeypatch, capsys
):
    monkeypatch.setenv(env, str(inside))
    assert main(["where"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"(${env}) {inside} is inside" in err and "choose a folder" in err
    assert not inside.exists() or inside == RECORD


def test_results_may_go_to_the_checkouts_runs_record_but_never_into_the_package(home, tmp_path, capsys):
    assert locations.runs_dir(ROOT / "leaderboards" / "runs") == ROOT / "leaderboards" / "runs"
    out = ROOT / "harness" / "runs-here"
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--runs-dir", str(out)]) == 2
    assert "is inside the harness package" in capsys.readouterr().err and not out.exists()
    out = RECORD / "runs"
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--runs-dir", str(out)]) == 2
    assert "is inside the checkout's split manifests" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "--input", "{i}", "--out", "{pkg}/labels.json"],
        ["leaderboard", "--runs-dir", "{runs}", "--out", "{pkg}/pages"],
        ["export", "--runs-dir", "{runs}", "--out", "{pkg}/export"],
        ["stage", "unpack", "{runs}", "--dest", "{pkg}/staged"],
        ["curate", "--input", "{i}", "--out", "{pkg}/c.jsonl.gz", "--ner", "none"],
    ],
)
def test_an_output_inside_the_package_is_one_line_and_writes_nothing(
    argv, home, tmp_path, small_collection_file, capsys
):
    pkg = ROOT / "harness" / "out-test"
    args = [a.format(i=small_collection_file, pkg=pkg, runs=tmp_path / "runs") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is inside the harness package" in err, err
    assert not pkg.exists()
