"""Model cards. Written without training, a card holds the recipe, the training data's fingerprint
and the log, and a model folder is recorded by its content address (the trained path:
test_neural_systems). A trained model's card is checked against the run that uses it: another
system's or another backbone's card is an error, a max-length mismatch a warning naming the value
used, a malformed card one line naming the file."""

from __future__ import annotations

import json

import pytest

from harness.data.documents import Document
from harness.errors import HarnessError
from harness.reports.training import card_lines
from harness.runs.model_cards import (
    addressed_config,
    content_sha256,
    model_card,
    training_data_fingerprint,
    write_model_card,
)
from tests.hostile import committed_splits, hostile, one_line_error, run_cli

SPLITS = committed_splits()
ROBERTA = "FacebookAI/roberta-large"


def _model(tmp_path, card) -> str:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    text = card if isinstance(card, (str, bytes)) else json.dumps(card)
    (folder / "aa_model.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(folder)


def _run(capsys, tmp_path, system, model, *extra):
    verb = ["rerank", system, "--first-stage", "bm25"] if "reranker" in system else ["run", system, "--no-progress"]
    return run_cli(
        capsys,
        *verb,
        "--collection",
        "demo",
        "--seeds",
        "0",
        "--runs-dir",
        tmp_path / "runs",
        "--splits-dir",
        SPLITS,
        "--set",
        f"model={model}",
        *extra,
    )


MISMATCHED = {
    "another system's card": ("sadiri", {"system": "luar", "recipe": {"backbone": ROBERTA}}, "system 'luar'"),
    "another backbone's card": (
        "sadiri",
        {"system": "sadiri", "recipe": {"backbone": "org/other"}},
        "backbone",
        f"backbone={ROBERTA}",
    ),
    "a retriever's card for a reranker": (
        "sadiri-v2-reranker",
        {"system": "sadiri-v2-retriever", "recipe": {}},
        "system 'sadiri-v2-retriever'",
    ),
    "a reranker's card for a retriever": (
        "sadiri-v2-retriever",
        {"system": "sadiri-v2-reranker", "recipe": {}},
        "system 'sadiri-v2-reranker'",
    ),
    "another backbone for the reranker": (
        "sadiri-v2-reranker",
        {"system": "sadiri-v2-reranker", "recipe": {"backbone": "org/other"}},
        "backbone",
        "backbone=mistralai/Mistral-Nemo-Base-2407",
    ),
}


@hostile("model cards", "clear error")
@pytest.mark.parametrize("case", sorted(MISMATCHED))
def test_a_card_of_another_system_or_backbone_is_an_error(tmp_path, capsys, case):
    """A card of another system was once accepted without a word."""
    system, card, says, *backbone = MISMATCHED[case]  # a backbone given explicitly: the card's is not taken
    extra = ("--set", backbone[0]) if backbone else ()
    line = one_line_error(*_run(capsys, tmp_path, system, _model(tmp_path, card), *extra)[::2])
    assert "aa_model.json" in line and says in line
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("seed-*.json"))


MALFORMED = {
    "not JSON": "{",
    "empty": "",
    "a list": "[]",
    "a string": '"card"',
    "system a number": '{"system": 3}',
    "recipe a list": '{"system": "sadiri", "recipe": []}',
    "max_length a string": '{"system": "sadiri", "recipe": {"max_length": "64"}}',
    "max_length 0": '{"system": "sadiri", "recipe": {"max_length": 0}}',
    "max_length negative": '{"system": "sadiri", "recipe": {"max_length": -64}}',
    "max_length true": '{"system": "sadiri", "recipe": {"max_length": true}}',
    "backbone a number": '{"system": "sadiri", "recipe": {"backbone": 7}}',
    "lone surrogate": '{"system": "sadiri\\ud800"}',
    "100,000 deep": "[" * 100000 + "]" * 100000,
    "not UTF-8": b"\xff\xfe\x00",
    "truncated": '{"system": "sadiri", "recipe": {"backb',
}


@hostile("model cards", "clear error")
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_card_is_one_line_naming_the_file(tmp_path, capsys, case):
    """A malformed card was once a traceback."""
    line = one_line_error(*_run(capsys, tmp_path, "sadiri", _model(tmp_path, MALFORMED[case]))[::2])
    assert "aa_model.json" in line


@hostile("model cards", "held")
def test_a_max_length_mismatch_is_a_warning_naming_the_value_used(tmp_path, capsys):
    """A model trained at max_length 64 once ran at 512 without a word."""
    model = _model(tmp_path, {"system": "sadiri", "recipe": {"backbone": ROBERTA, "max_length": 64}})
    _, out, err = _run(capsys, tmp_path, "sadiri", model)
    text = out + err
    assert "trained at max_length 64" in text and "reads 512" in text and "max_length=64" in text
    assert "Traceback" not in err


@hostile("model cards", "held")
@pytest.mark.parametrize(
    "card",
    [
        {"system": "sadiri", "recipe": {"backbone": ROBERTA, "max_length": 512}},
        {"system": "sadiri", "recipe": {}},
        {"hidden_size": 8},  # a plugin's own fields, no card fields yet
        None,
    ],
)
def test_a_matching_or_silent_card_passes(card):
    from harness.runs.model_cards import check_card

    warnings = []
    check_card("sadiri", {"backbone": ROBERTA, "max_length": 512}, "m", card, warn=warnings.append)
    assert not warnings


def test_check_card_names_what_differs():
    from harness.runs.model_cards import check_card

    with pytest.raises(HarnessError, match="--set backbone=org/x"):
        check_card("sadiri", {"backbone": ROBERTA}, "m", {"system": "sadiri", "recipe": {"backbone": "org/x"}})
    warned = []
    check_card("sadiri", {"max_length": 128}, "m", {"recipe": {"max_length": 64}}, warn=warned.append)
    assert "the run's value is used" in warned[0]


def test_a_trained_model_brings_its_backbone_from_its_card(tmp_path, capsys, monkeypatch):
    """`run --model DIR` once needed `--set backbone=…` although the card records it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing is fetched
    model = _model(tmp_path, {"system": "sadiri", "recipe": {"backbone": "org/card-backbone"}})
    code, out, err = _run(capsys, tmp_path, "sadiri", model)
    assert "backbone org/card-backbone (from the model card" in err
    assert "trained on backbone" not in err  # no mismatch: the card's backbone is the run's
    one_line_error(code, err)  # then this stand-in folder fails to load: it holds no weights


@pytest.mark.parametrize(
    "overrides, card, expected",
    [
        ({}, {"system": "sadiri", "recipe": {"backbone": "org/a"}}, "org/a"),
        (
            {"backbone": "org/b"},
            {"system": "sadiri", "recipe": {"backbone": "org/a"}},
            "org/b",
        ),  # explicit wins (then refused)
        ({}, {"system": "luar", "recipe": {"backbone": "org/a"}}, None),  # another system's card gives nothing
        ({}, {"system": "sadiri", "recipe": {}}, None),
    ],
)
def test_with_card_backbone(tmp_path, overrides, card, expected):
    from harness.runs.model_cards import with_card_backbone
    from plugins.sadiri.config import SADIRIConfig

    out = with_card_backbone("sadiri", SADIRIConfig, {**overrides, "model": _model(tmp_path, card)})
    assert out.get("backbone") == expected
    assert with_card_backbone("sadiri", SADIRIConfig, {"model": "org/hub-id"}) == {"model": "org/hub-id"}


def test_card_from_sections_data_and_log(tmp_path):
    docs = [Document("b", ("x",), "two", "g"), Document("a", ("y",), "one", "g"), Document("c", ("x",), "three", "h")]
    data = training_data_fingerprint(docs, ["/somewhere/train.jsonl.gz"])
    assert data == training_data_fingerprint(list(reversed(docs)), ["train.jsonl.gz"])  # order-free, no paths
    assert (data["documents"], data["authors"], data["files"]) == (3, 2, ["train.jsonl.gz"])
    sections = {
        "recipe": {"queries_per_batch": 4, "grad_accumulation": 10, "author_fraction": 0.1, "seed": 7},
        "training run": {"max_steps": 0},
        "inference": {"prefix_reuse": True},
    }
    log = {
        "device": "cpu: test",
        "world_size": 2,
        "steps": 3,
        "log": [{"loss": 2.5}, {"epoch": 0, "epoch_seconds": 1}, {"loss": 2.0}],
    }
    card = model_card(system="sadiri-v2-reranker", sections=sections, data=data, train_log=log, commit="abc")
    assert card["global_batch"] == {
        "unit": "queries",
        "per_batch": 4,
        "grad_accumulation": 10,
        "per_optimizer_step": 40,
    }
    assert (card["author_fraction"], card["seed"], card["final_loss"], card["steps"], card["world_size"]) == (
        0.1,
        7,
        2.0,
        3,
        2,
    )
    assert "prefix_reuse" not in json.dumps(card["recipe"])  # inference settings are not the recipe

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "aa_model.json").write_text(json.dumps({"hidden_size": 8, "strategy": "q"}))
    (folder / "head.safetensors").write_bytes(b"weights")
    write_model_card(folder, card)
    merged = json.loads((folder / "aa_model.json").read_text())
    assert merged["hidden_size"] == 8 and merged["strategy"] == "q" and merged["system"] == "sadiri-v2-reranker"
    recorded, address = addressed_config({"model": str(folder), "tau": 1.0})
    assert recorded == {"model": f"sha256:{content_sha256(folder)}", "tau": 1.0} and address["card"]["seed"] == 7
    assert addressed_config({"model": None}) == ({"model": None}, None)
    assert addressed_config({"model": "org/hub-id"})[0] == {"model": "org/hub-id"}

    lines = card_lines({"rr": {"card": card}, "old": {}})
    assert "- rr: sadiri-v2-reranker at commit abc, training data sha256 " + data["sha256"][:16] in lines
    assert "global batch 4 queries × 10" in lines and "old" not in lines
    assert card_lines({"old": {}}) == ""
