"""benchmarks/profile_training.py on an experiment's train step (here the smoke reranker on a
CPU): the optimizer's steps drive the profiled window, so it holds exactly the steps asked for."""

from __future__ import annotations

import json

import pytest

from tests.experiments.conftest import SMOKE


def test_the_window_holds_the_steps_asked_for_after_the_skipped_ones(smoke_curated, tmp_path, capsys):
    from benchmarks.profile_training import main as profile_main

    out = tmp_path / "fig.json"
    args = ["--experiment", str(SMOKE), "--step", "train.reranker", "--path", "plain", "--skip", "2"]
    assert (
        profile_main([*args, "--steps", "1", "--work", str(tmp_path / "work"), "--name", "smoke", "--out", str(out)])
        == 0
    )
    fig = json.loads(out.read_text())
    r = fig["results"]
    assert fig["path"] == "plain" and fig["config"]["fast_training"] is False and fig["config"]["max_steps"] == 4
    assert r["optimizer_steps"] == 4 and r["steps_profiled"] == 1
    assert r["step_seconds_profiled_median"] > 0 and r["step_seconds_unprofiled_median"] > 0
    assert r["kernels"] and all(k["seconds_per_step"] > 0 for k in r["kernels"])
    # the marked ranges (the profiler's and the optimizer's steps) span the work, never counted as it
    names = [k["name"] for k in r["kernels"] + r["host_ops"]]
    assert not any(n.startswith(("ProfilerStep", "Optimizer.step")) for n in names), names
    assert r["device_busy_seconds_per_step"] <= r["step_seconds_profiled_median"]
    assert "1 steps profiled of 4" in capsys.readouterr().out


def test_a_run_that_ends_before_the_window_is_one_line(smoke_curated, tmp_path):
    from benchmarks.profile_training import profile_training

    with pytest.raises(
        SystemExit, match=r"train.reranker: the run ended after \d+ optimizer steps, before the profiled"
    ):
        profile_training(str(SMOKE), "train.reranker", "plain", tmp_path / "work", skip=10_000, steps=1)
