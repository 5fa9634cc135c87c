import json

import pytest

from harness.hookspecs import hookimpl
from harness.plugins import load_registry, plugin_manager
from harness.runs.results import read_rankings, read_result
from harness.runs.run_job import RunJob, run_job
from harness.specs import SystemSpec

REQUIRED = {
    "schema_version",
    "system",
    "config",
    "collection",
    "seed",
    "split_sha256",
    "metrics",
    "n_queries",
    "n_candidates",
    "provenance",
}


def _job(tmp_path, **kw):
    base = dict(
        systems=["bm25"],
        collection="demo",
        seeds=[0, 1001],
        runs_dir=tmp_path / "runs",
        splits_dir=tmp_path / "splits",
        progress=False,
    )
    return RunJob(**{**base, **kw})


def test_result_schema_and_rankings(tmp_path):
    out = run_job(load_registry(), _job(tmp_path), log=lambda *_: None)
    assert [o.skipped for o in out] == [False, False]
    res = read_result(out[0].path)
    assert REQUIRED <= set(res)
    assert set(res["metrics"]) == {"success@8", "success@100", "mrr@20"}
    assert {"packages", "git_commit", "device", "wall_seconds"} <= set(res["provenance"])
    assert res["config"] == {"k1": 0.25, "b": 0.75, "epsilon": 0.25}
    rankings = read_rankings(out[0].path)
    assert len(rankings) == res["n_queries"]
    assert all(len(r) == 100 for r in rankings.values())
    first = next(iter(rankings.values()))
    assert [s for _, s in first] == sorted((s for _, s in first), reverse=True)
    assert not list(tmp_path.rglob("*.tmp"))


def test_up_to_date_results_are_skipped_unless_overwrite(tmp_path):
    reg = load_registry()
    run_job(reg, _job(tmp_path), log=lambda *_: None)
    again = run_job(reg, _job(tmp_path), log=lambda *_: None)
    assert all(o.skipped for o in again)
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=r"k1 \(0\.5 vs 0\.25\)"):  # another config under one name: refused
        run_job(reg, _job(tmp_path, overrides={"k1": "0.5"}), log=lambda *_: None)
    forced = run_job(reg, _job(tmp_path, overwrite=True, overrides={"k1": "0.5"}), log=lambda *_: None)
    assert not any(o.skipped for o in forced)


class Flaky:
    """A ranker that crashes on its second split, like a run killed half-way."""

    calls = 0

    def __init__(self, config):
        pass

    def rank(self, queries, candidates, k):
        Flaky.calls += 1
        if Flaky.calls == 2:
            raise RuntimeError("boom")
        return {q.documentID: [(c.documentID, 1.0) for c in candidates[:k]] for q in queries}


class FlakyPlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("flaky", f"{__name__}:Flaky", "plugins.bm25.config:BM25Config"))


def test_rerun_after_crash_resumes_at_the_missing_seed(tmp_path):

    reg = load_registry(plugin_manager(entrypoints=False, extra=(FlakyPlugin(),)))
    Flaky.calls = 0
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="system 'flaky': rank\\(\\) failed: RuntimeError: boom"):
        run_job(reg, _job(tmp_path, systems=["flaky"]), log=lambda *_: None)
    done = sorted(p.name for p in (tmp_path / "runs" / "demo" / "flaky").iterdir())
    assert done == ["seed-0.json", "seed-0.rankings.jsonl.gz"]  # nothing half-written for seed 1001
    out = run_job(reg, _job(tmp_path, systems=["flaky"]), log=lambda *_: None)
    assert [o.skipped for o in out] == [True, False]


class Cheater:
    def __init__(self, config):
        pass

    def rank(self, queries, candidates, k):
        return {q.documentID: [(q.documentID, 1.0)] for q in queries}


class CheaterPlugin:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec("cheater", f"{__name__}:Cheater", "plugins.bm25.config:BM25Config"))


def test_ranking_a_non_candidate_is_an_error_and_writes_nothing(tmp_path):
    from harness.errors import HarnessError

    reg = load_registry(plugin_manager(entrypoints=False, extra=(CheaterPlugin(),)))
    with pytest.raises(HarnessError, match="which is not a candidate"):
        run_job(reg, _job(tmp_path, systems=["cheater"]), log=lambda *_: None)
    assert not (tmp_path / "runs").exists()


def test_committed_demo_results_reproduce(tmp_path):
    """The committed BM25 and char-ngram demo results are exactly what the code computes now."""
    from tests.conftest import RECORD, ROOT

    reg = load_registry()
    for system in ("bm25", "char-ngram"):
        run_job(reg, _job(tmp_path, systems=[system], seeds=[0], splits_dir=RECORD), log=lambda *_: None)
        mine = read_result(tmp_path / "runs" / "demo" / system / "seed-0.json")
        theirs = read_result(ROOT / "leaderboards" / "runs" / "demo" / system / "seed-0.json")
        assert mine["split_sha256"] == theirs["split_sha256"]
        assert mine["metrics"] == theirs["metrics"]
        assert mine["first_needle_rank"] == theirs["first_needle_rank"]


HOLD_LOCK = """
import fcntl, os, shutil, sys, time
run_dir, other = sys.argv[1], sys.argv[2]
fd = os.open(run_dir, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(1.5)
for name in os.listdir(other):  # another writer's seed, made with another config
    shutil.copy(os.path.join(other, name), run_dir)
"""


def test_a_second_writer_of_a_run_folder_waits_then_refuses_another_config(tmp_path, capsys):
    """Two runs under one name with different configs once both exited 0, one left without results."""
    import subprocess
    import sys
    import time

    from harness.cli import main

    other = tmp_path / "other"
    assert (
        main(
            [
                "run",
                "bm25",
                "--collection",
                "demo",
                "--seeds",
                "0",
                "--runs-dir",
                str(other),
                "--set",
                "k1=0.9",
                "--no-progress",
            ]
        )
        == 0
    )
    run_dir = tmp_path / "runs" / "demo" / "bm25"
    run_dir.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(run_dir), str(other / "demo" / "bm25")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        capsys.readouterr()
        start = time.monotonic()
        assert (
            main(
                [
                    "run",
                    "bm25",
                    "--collection",
                    "demo",
                    "--seeds",
                    "0",
                    "--runs-dir",
                    str(tmp_path / "runs"),
                    "--no-progress",
                ]
            )
            == 2
        )
        waited = time.monotonic() - start
    finally:
        holder.wait(timeout=30)
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].startswith("aa-harness: error:") and "one config" in err, err
    assert waited > 0.5  # it waited for the other writer rather than write beside it
    assert json.loads((run_dir / "seed-0.json").read_text())["config"]["k1"] == 0.9  # the other's result, intact
