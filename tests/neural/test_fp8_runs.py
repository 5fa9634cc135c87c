"""fp8 (the frozen base's products in FP8) is opt-in and never mistaken for bf16: off by default, a
recipe setting that the model card records and the model id includes (only when on, so earlier
models keep their ids), named by the run's config and the pages, its vectors cached apart; asked
for where it cannot run (the CPU, a GPU older than compute capability 8.9, the plain paths) it is
one line before any model loads."""

import json

import pytest

from harness.config import build_config, config_sections

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def test_fp8_is_off_by_default_and_a_recipe_setting():
    from plugins.sadiri_v2.config import RerankerConfig, RetrieverConfig

    for cls in (RetrieverConfig, RerankerConfig):
        assert cls().fp8 is False
        assert config_sections(cls())["recipe"]["fp8"] is False  # it decides the weights, as bf16 does
        assert build_config(cls, {"fp8": "true"}).fp8 is True


def _card(**config):
    from harness.runs.model_cards import model_card
    from plugins.sadiri_v2.config import RetrieverConfig

    return model_card(
        system="sadiri-v2-retriever",
        sections=config_sections(RetrieverConfig(**config)),
        data={"sha256": "a" * 64},
        train_log={},
        commit="c",
    )


def test_the_card_records_fp8_and_the_model_id_includes_it_only_when_on():
    from harness.runs.model_cards import model_id

    bf16, fp8 = _card(), _card(fp8=True)
    assert bf16["recipe"]["fp8"] is False and fp8["recipe"]["fp8"] is True
    assert model_id(fp8) != model_id(bf16)
    before = {**bf16, "recipe": {k: v for k, v in bf16["recipe"].items() if k != "fp8"}}  # a card from before fp8
    assert model_id(before) == model_id(bf16)


def test_a_card_and_a_run_that_differ_in_fp8_are_said():
    from harness.runs.model_cards import check_card

    warned = []
    check_card("sadiri-v2-retriever", {"fp8": False}, "m", _card(fp8=True), warn=warned.append)
    assert len(warned) == 1 and "FP8 frozen base" in warned[0] and "--set fp8=true" in warned[0]
    check_card("sadiri-v2-retriever", {"fp8": True}, "m", _card(fp8=True), warn=warned.append)
    check_card("sadiri-v2-retriever", {"fp8": False}, "m", _card(), warn=warned.append)
    check_card("sadiri", {}, "m", {"system": "sadiri", "recipe": {}}, warn=warned.append)  # no fp8 to compare
    assert len(warned) == 1


def test_the_pages_name_an_fp8_run():
    from harness.reports.run_identity import backbone_label, differs_from_paper
    from plugins.sadiri_v2.config import describe_run

    assert describe_run({"strategy": "r", "fp8": True}) == "n(r); frozen base in FP8"

    run = {"system": "sadiri-v2-retriever", "config": {"backbone": "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF"}}
    assert "FP8" not in backbone_label(run) and "FP8" not in differs_from_paper(run)
    fp8 = {**run, "config": {**run["config"], "fp8": True}}
    assert backbone_label(fp8).endswith("dequantized to bf16, its projections in FP8 e4m3)")
    assert "products in FP8 e4m3 (paper: bf16)" in differs_from_paper(fp8)
    trained = {**run, "extra": {"model_card": {"recipe": {"fp8": True}, "training_data": {"sha256": "b" * 64}}}}
    assert "trained over an FP8 e4m3 frozen base (paper: bf16)" in differs_from_paper(trained)


def _one_line(capsys, argv) -> str:
    from harness.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("aa-harness: error: ") and "Traceback" not in err, err
    return err


def test_fp8_where_it_cannot_run_is_one_line_before_any_model_loads(tiny_qwen3_dir, tmp_path, capsys, monkeypatch):
    from plugins.sadiri_v2 import reranker, retriever
    from tests.conftest import RECORD, write_jsonl
    from tests.neural.test_neural_systems import _train_docs

    def no_load(*a, **k):
        raise AssertionError("a model loaded")

    for module in (retriever, reranker):
        monkeypatch.setattr(module, "load_backbone", no_load)
    data = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
            for d in _train_docs()
        ],
    )
    sets = ["--set", "fp8=true", "--set", "device=cpu", "--set", f"backbone={tiny_qwen3_dir}"]
    for system in ("sadiri-v2-retriever", "sadiri-v2-reranker"):
        err = _one_line(capsys, ["train", system, "--train", str(data), "--out", str(tmp_path / system), *sets])
        assert "fp8=true" in err and "device is cpu" in err, err
    runs = tmp_path / "runs"
    err = _one_line(
        capsys,
        ["run", "sadiri-v2-retriever", "--collection", "demo", "--splits-dir", str(RECORD), "--runs-dir", str(runs)]
        + sets,
    )
    assert "fp8=true" in err and "device is cpu" in err, err
    assert not list(runs.rglob("seed-*.json"))
    from harness.neural.fast import fp8_linear

    monkeypatch.setattr(fp8_linear, "fp8_unsupported", lambda device: None)  # as on a GPU that runs them
    err = _one_line(
        capsys,
        ["train", "sadiri-v2-retriever", "--train", str(data), "--out", str(tmp_path / "plain"), *sets]
        + ["--set", "fast_training=false"],
    )
    assert "fused decoder only" in err and "fast_training" in err, err


def test_an_fp8_training_and_run_record_fp8_and_cache_apart(tiny_qwen3_dir, tmp_path, isolated_cache, monkeypatch):
    """On the CPU (let through: the products compute their fp32 reference) a short fp8 training
    writes fp8 into the card and the model id, and a run with fp8 records it and keeps its vectors
    under another cache key than the bf16 run of the same model."""
    from harness.neural.fast import fp8_linear
    from harness.plugins import load_registry
    from harness.runs.model_cards import model_id
    from harness.runs.results import read_result
    from harness.runs.run_job import RunJob, run_job
    from harness.runs.train_job import train_job
    from tests.conftest import RECORD, write_jsonl
    from tests.neural.test_neural_systems import _train_docs

    monkeypatch.setattr(fp8_linear, "fp8_unsupported", lambda device: None)
    swapped = []
    real = fp8_linear.quantize_frozen_base
    monkeypatch.setattr(fp8_linear, "quantize_frozen_base", lambda m: swapped.append(real(m)) or swapped[-1])
    data = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
            for d in _train_docs()
        ],
    )
    reg = load_registry()
    sets = {
        "backbone": str(tiny_qwen3_dir),
        "max_length": "32",
        "authors_per_batch": "6",
        "max_steps": "2",
        "lr": "1e-3",
        "tau": "0.1",
        "hard_negatives": "false",
        "grad_checkpointing": "false",
        "device": "cpu",
        "fp8": "true",
    }
    model = train_job(reg, "sadiri-v2-retriever", [data], tmp_path / "out", sets)
    assert swapped == [2 * 7]  # the trainer's hook quantized the base once
    card = json.loads((model / "aa_model.json").read_text())
    assert card["recipe"]["fp8"] is True
    assert model_id(card) != model_id({**card, "recipe": {**card["recipe"], "fp8": False}})
    keys = {}
    for fp8 in (True, False):
        out = run_job(
            reg,
            RunJob(
                systems=["sadiri-v2-retriever"],
                collection="demo",
                seeds=[0],
                runs_dir=tmp_path / "runs",
                splits_dir=RECORD,
                run_name=f"fp8-{fp8}".lower(),
                overrides={"model": str(model), "max_length": "32", "device": "cpu", "fp8": str(fp8).lower()},
                progress=False,
            ),
            log=lambda *_: None,
        )
        res = read_result(out[0].path)
        assert res["config"]["fp8"] is fp8 and (res["extra"].get("fp8") == "e4m3 frozen base") is fp8
        assert res["extra"]["model_card"]["recipe"]["fp8"] is True
        keys[fp8] = res["extra"]["model_identity"]
    assert keys[True] == keys[False] + "|fp8-e4m3"
    assert len(list((isolated_cache / "embeddings").iterdir())) == 2  # two cache folders, one per identity


def test_an_untrained_backbone_encodes_through_fp8(tiny_qwen3_dir, monkeypatch):
    """config.model None: the backbone as loaded (its weights not frozen by any adapter) is frozen and
    quantized for encoding."""
    from harness.data.demo import demo_documents
    from harness.neural.fast import fp8_linear
    from plugins.sadiri_v2.config import RetrieverConfig
    from plugins.sadiri_v2.retriever import RetrieverSystem

    monkeypatch.setattr(fp8_linear, "fp8_unsupported", lambda device: None)
    system = RetrieverSystem(
        RetrieverConfig(backbone=str(tiny_qwen3_dir), max_length=32, device="cpu", cache=False, fp8=True)
    )
    assert system.fast_path == "packed" and system.describe()["fp8"] == "e4m3 frozen base"
    assert system.identity.endswith("|fp8-e4m3")
    vecs = system.encode(demo_documents()[:5])
    assert vecs.shape[0] == 5 and torch.isfinite(torch.from_numpy(vecs)).all()
