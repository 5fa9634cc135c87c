"""`aa-harness train` then `aa-harness run --model` end to end, on a tiny model."""

import json

import pytest

pytest.importorskip("torch")

from harness.cli import main  # noqa: E402
from harness.runs.results import read_result  # noqa: E402
from tests.conftest import RECORD, write_jsonl  # noqa: E402

pytestmark = pytest.mark.slow


def test_train_then_run_sadiri_from_the_cli(tiny_bert_dir, tmp_path, isolated_cache):
    from tests.neural.test_neural_systems import _train_docs

    train = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
            for d in _train_docs()
        ],
    )
    common = ["--set", f"backbone={tiny_bert_dir}", "--set", "max_length=64", "--set", "device=cpu"]
    assert (
        main(
            [
                "train",
                "sadiri",
                "--train",
                str(train),
                "--out",
                str(tmp_path / "m"),
                *common,
                "--set",
                "authors_per_batch=4",
                "--set",
                "max_steps=2",
                "--set",
                "grad_checkpointing=false",
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "m" / "train_config.json").read_text())["config"]["max_steps"] == 2
    assert (
        main(
            [
                "run",
                "sadiri",
                "--model",
                str(tmp_path / "m" / "model"),
                *common,
                "--collection",
                "demo",
                "--seeds",
                "0",
                "--name",
                "sadiri-tiny",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--splits-dir",
                str(RECORD),
                "--no-progress",
            ]
        )
        == 0
    )
    res = read_result(tmp_path / "runs" / "demo" / "sadiri-tiny" / "seed-0.json")
    # the model is recorded by content hash and card, never by the machine path it was read from
    assert res["system"] == "sadiri" and res["config"]["model"].startswith("sha256:")
    assert str(tmp_path) not in json.dumps(res["config"])
    assert res["extra"]["model_card"]["system"] == "sadiri" and res["extra"]["model_card"]["steps"] == 2
    assert res["extra"]["trained"] is True and res["n_queries"] == 60


def test_training_a_system_that_cannot_train(tmp_path, capsys):
    assert main(["train", "bm25", "--train", "x.jsonl", "--out", str(tmp_path)]) == 2
    assert "cannot be trained" in capsys.readouterr().err
