"""benchmarks/training_paths.py run from an experiment file's train step: both paths, same recipe,
same number of steps, compared from their logs; one path at a time into one folder compares the
same; a step that is not a training is one line."""

from __future__ import annotations

import json

import pytest

from tests.experiments.conftest import SMOKE


def test_both_paths_run_from_a_train_step_with_the_same_recipe(smoke_curated, tmp_path):
    from benchmarks.training_paths import compare, log_paths, run_paths

    run_paths(str(SMOKE), "train.reranker", 2, tmp_path / "work", {"cuda_graphs": "false"})
    logs = [json.loads(p.read_text()) for p in log_paths(tmp_path / "work")]
    assert [log["config"]["fast_training"] for log in logs] == [False, True]
    assert [log["config"]["cuda_graphs"] for log in logs] == [False, False]  # --set reaches both runs, typed
    assert [log["config"]["max_steps"] for log in logs] == [2, 2]
    assert [len([e for e in log["log"] if "loss" in e]) for log in logs] == [2, 2]
    record = compare(*logs, "smoke")
    assert record["results"]["steps"] == 2 and record["system"] == "sadiri-v2-reranker"


def test_a_step_that_does_not_train_is_one_line(tmp_path, monkeypatch):
    from benchmarks.training_paths import run_paths

    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit, match=r"no train step 'run.bm25' \(train steps: train.reranker, train.retriever"):
        run_paths(str(SMOKE), "run.bm25", 2, tmp_path / "work")
    with pytest.raises(SystemExit, match="not curated yet"):
        run_paths(str(SMOKE), "train.reranker", 2, tmp_path / "work")
    assert not (tmp_path / "work").exists()


def test_one_path_at_a_time_then_compared_from_the_work_folder(smoke_curated, tmp_path, capsys, monkeypatch):
    """Each path can run in its own process (on its own GPU); the comparison then reads both logs from
    --work, and writes what the single run would have written."""
    import benchmarks.training_paths as tp

    work = tmp_path / "work"
    for path in ("fast", "hf"):
        args = ["--experiment", str(SMOKE), "--step", "train.reranker", "--max-steps", "2", "--path", path]
        assert tp.main([*args, "--work", str(work), "--name", "smoke", "--set", "cuda_graphs=false"]) == 0
    assert sorted(p.name for p in work.iterdir()) == ["fast", "hf"]
    assert "the hf path's log" in capsys.readouterr().out
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(tp, "RESULTS", results)
    assert tp.main(["--work", str(work), "--name", "smoke"]) == 0
    (out,) = results.iterdir()
    record = json.loads(out.read_text())
    assert record["results"]["steps"] == 2 and record["results"]["hf"]["fast_training"] is False
