"""benchmarks/training_paths.py run from an experiment file's train step: both paths, same recipe,
same number of steps, compared from their logs; a step that is not a training is one line."""

from __future__ import annotations

import json

import pytest

from tests.experiments.conftest import SMOKE


def test_both_paths_run_from_a_train_step_with_the_same_recipe(smoke_curated, tmp_path):
    from benchmarks.training_paths import compare, run_both

    hf, fast = run_both(str(SMOKE), "train.reranker", 2, tmp_path / "work", {"cuda_graphs": "false"})
    logs = [json.loads(p.read_text()) for p in (hf, fast)]
    assert [log["config"]["fast_training"] for log in logs] == [False, True]
    assert [log["config"]["cuda_graphs"] for log in logs] == [False, False]  # --set reaches both runs, typed
    assert [log["config"]["max_steps"] for log in logs] == [2, 2]
    assert [len([e for e in log["log"] if "loss" in e]) for log in logs] == [2, 2]
    record = compare(*logs, "smoke")
    assert record["results"]["steps"] == 2 and record["system"] == "sadiri-v2-reranker"


def test_a_step_that_does_not_train_is_one_line(tmp_path, monkeypatch):
    from benchmarks.training_paths import run_both

    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit, match=r"no train step 'run.bm25' \(train steps: train.reranker, train.retriever"):
        run_both(str(SMOKE), "run.bm25", 2, tmp_path / "work")
    with pytest.raises(SystemExit, match="not curated yet"):
        run_both(str(SMOKE), "train.reranker", 2, tmp_path / "work")
    assert not (tmp_path / "work").exists()
