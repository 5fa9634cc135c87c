"""benchmarks/replay_step.py on the smoke reranker (a CPU): the step's batch is replayed from the
weights and random state it met, so the whole-batch replay is the training's own step, and a
query whose scores are poisoned is found, with what anomaly mode names."""

from __future__ import annotations

import json

import pytest

from tests.experiments.conftest import SMOKE

pytest.importorskip("torch")


def test_the_replay_is_the_step_the_training_took(smoke_curated, tmp_path, capsys):
    from benchmarks.replay_step import main

    work = tmp_path / "work"
    assert main(["--experiment", str(SMOKE), "--step", "train.reranker", "--at", "3", "--work", str(work)]) == 0
    report = json.loads((work / "replay-step-3.json").read_text())
    assert report["optimizer_step"] == 3 and report["path"] == "plain"
    assert report["batch"].startswith("queries ") and len(report["examples"]) == 2  # queries_per_batch 2
    assert report["whole"]["nonfinite_gradients"] == 0 and report["first_nonfinite_example"] is None
    assert "kernels" not in report and "anomaly" not in report
    assert "train.reranker step 3 (plain)" in capsys.readouterr().out


def _poison(monkeypatch, poisoned) -> None:
    """Make the reranker's scores NaN in every step call where `poisoned(call, shard)` holds (calls
    count from 1: the training's steps, then the replay's runs)."""
    import torch

    from plugins.sadiri_v2.reranker_training import QueryNegatives

    step, score = QueryNegatives.step, QueryNegatives.score_pairs
    calls = [0]

    def poisoned_step(self, wrapped, model, shard, *rest):
        calls[0] += 1
        self.poison = poisoned(calls[0], shard)
        return step(self, wrapped, model, shard, *rest)

    def poisoned_scores(self, *args):
        out = score(self, *args)
        return [s * torch.tensor(float("nan")) for s in out] if self.poison else out

    monkeypatch.setattr(QueryNegatives, "step", poisoned_step)
    monkeypatch.setattr(QueryNegatives, "score_pairs", poisoned_scores)


def test_a_poisoned_query_is_named_with_its_backward(smoke_curated, tmp_path, monkeypatch):
    from benchmarks.replay_step import replay_step

    target = []

    def last_query_of_step_3(call, shard):
        if call == 3:  # the replay's first run: the whole batch of step 3
            target.append(shard[-1][0])
        return bool(target) and any(ex[0] == target[0] for ex in shard)

    _poison(monkeypatch, last_query_of_step_3)
    report = replay_step(str(SMOKE), "train.reranker", 3, tmp_path / "work")
    assert report["whole"]["loss"] == "nan" and report["whole"]["nonfinite_gradients"] > 0
    assert report["first_nonfinite_example"] == 1 and report["kernels_replay"] == "example 1"
    assert report["examples"][0]["nonfinite_gradients"] == 0
    assert set(report["kernels"]) == {"cudnn_attention", "flash_attention", "efficient_attention", "math", "eager"}
    assert report["kernels"]["math"].get("nonfinite_gradients"), report["kernels"]["math"]
    assert all(len(s) == 2 for s in report["padded_shapes"])  # (rows, length) of each padded batch
    assert "LogSoftmaxBackward0' returned nan values" in report["anomaly"]  # the loss over the NaN scores


def test_a_batch_not_finite_only_as_a_whole_is_replayed_whole(smoke_curated, tmp_path, monkeypatch):
    from benchmarks.replay_step import replay_step

    _poison(monkeypatch, lambda call, shard: call >= 3 and len(shard) > 1)  # from step 3, only with batch mates
    report = replay_step(str(SMOKE), "train.reranker", 3, tmp_path / "work")
    assert report["first_nonfinite_example"] is None and report["kernels_replay"] == "the whole batch"
    assert all(e["nonfinite_gradients"] == 0 for e in report["examples"])
    assert report["kernels"]["math"]["loss"] == "nan"


def test_a_step_past_the_training_is_one_line(smoke_curated, tmp_path):
    from benchmarks.replay_step import replay_step

    with pytest.raises(SystemExit, match="the training ended before optimizer step 10000"):
        replay_step(str(SMOKE), "train.reranker", 10_000, tmp_path / "work")
