"""Model cards and content addresses, without training (the trained path: test_neural_systems)."""

import json

from harness.data.documents import Document
from harness.reports.training import card_lines
from harness.runs.models import (
    addressed_config,
    content_sha256,
    model_card,
    training_data_fingerprint,
    write_model_card,
)


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
