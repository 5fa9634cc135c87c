"""The bi-encoder plugins on tiny models built from configs: training lowers the loss,
save/load round trips, the embedding cache, resume, LUAR's released layout, DDP."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from harness.data.demo import demo_documents  # noqa: E402
from harness.neural.training import losses  # noqa: E402

pytestmark = pytest.mark.slow


def _same_weights(a, b) -> bool:
    """Weights after the same optimizer steps: equal to float tolerance, but for the few elements whose gradient
    is ~0, where Adam's first step (about lr * sign(gradient)) follows the last bits of a sum that threads or
    batching order differently: at most 1e-4 of the elements."""
    import torch

    if a.keys() != b.keys():
        return False
    off = sum(int((~torch.isclose(a[k], b[k], rtol=1e-4, atol=1e-5)).sum()) for k in a)
    return off <= 1e-4 * sum(v.numel() for v in a.values())


def _train_docs(n_authors=12):
    """Two documents per author, from the synthetic demo's foreground authors."""
    by = {}
    for d in demo_documents():
        if d.authorIDs[0].startswith("demo:fg"):
            by.setdefault(d.authorIDs[0], []).append(d)
    return [d for a in sorted(by)[:n_authors] for d in by[a][:2]]


def _sadiri_config(backbone, **kw):
    from plugins.sadiri.config import SADIRIConfig

    base = dict(
        backbone=str(backbone),
        max_length=64,
        authors_per_batch=12,
        epochs=1,
        lr=1e-3,
        tau=0.1,
        hard_negatives=False,
        grad_checkpointing=False,
        device="cpu",
    )
    return SADIRIConfig(**{**base, **kw})


def test_sadiri_training_lowers_loss_and_round_trips(tiny_bert_dir, tmp_path, isolated_cache):
    from plugins.sadiri.system import SADIRISystem, train

    docs = _train_docs()
    cfg = _sadiri_config(tiny_bert_dir, epochs=8)
    out = train(cfg, docs, tmp_path / "run")
    log = json.loads((tmp_path / "run" / "train_log.json").read_text())
    curve = losses(log)
    assert len(curve) == 8 and curve[-1] < curve[0] * 0.8, curve
    assert log["unit"] == "authors" and log["examples"] == len({d.authorIDs[0] for d in docs})
    trained = SADIRISystem(_sadiri_config(tiny_bert_dir, model=str(out)))
    again = SADIRISystem(_sadiri_config(tiny_bert_dir, model=str(out), cache=False))
    untrained = SADIRISystem(_sadiri_config(tiny_bert_dir))
    probe = docs[:5]
    a, b = trained.encode(probe), again.encode(probe)
    assert np.allclose(a, b, atol=1e-6)
    assert not np.allclose(a, untrained.encode(probe), atol=1e-3)
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)


def test_hard_negative_training_runs_each_epoch(tiny_bert_dir, tmp_path, isolated_cache):
    from plugins.sadiri.system import train

    train(
        _sadiri_config(tiny_bert_dir, epochs=2, authors_per_batch=4, hard_negatives=True),
        _train_docs(),
        tmp_path / "hn",
    )
    log = json.loads((tmp_path / "hn" / "train_log.json").read_text())
    assert {e["epoch"] for e in log["log"] if "loss" in e} == {0, 1}
    assert sum(1 for e in log["log"] if "loss" in e) == 2 * 3  # 12 authors / 4 a batch, twice


def test_embedding_cache_encodes_each_text_once(tiny_bert_dir, isolated_cache, monkeypatch):
    from plugins.sadiri.system import SADIRISystem

    system = SADIRISystem(_sadiri_config(tiny_bert_dir))
    calls = []
    real = system.model.embed
    monkeypatch.setattr(system.model, "embed", lambda **b: calls.append(b["input_ids"].shape[0]) or real(**b))
    docs = _train_docs()[:10]
    first = system.encode(docs)
    assert sum(calls) == 10
    second = system.encode(docs + [docs[0]])  # same texts, plus a repeat: nothing new to encode
    assert sum(calls) == 10 and np.allclose(second[:10], first)
    fresh = SADIRISystem(_sadiri_config(tiny_bert_dir))  # a new process would read the shards from disk
    assert len(fresh.cache) == 10


def test_resume_from_checkpoint_gives_the_same_model(tiny_bert_dir, tmp_path, isolated_cache):
    from plugins.sadiri.system import train

    docs = _train_docs()
    straight = train(
        _sadiri_config(tiny_bert_dir, epochs=2, authors_per_batch=4, checkpoint_every=1), docs, tmp_path / "a"
    )
    train(
        _sadiri_config(tiny_bert_dir, epochs=2, authors_per_batch=4, checkpoint_every=1, max_steps=4),
        docs,
        tmp_path / "b",
    )
    progress = json.loads((tmp_path / "b" / "checkpoint" / "progress.json").read_text())
    assert progress["steps_done"] == 4 and progress["epoch"] == 1  # stopped inside the second epoch
    resumed = train(
        _sadiri_config(tiny_bert_dir, epochs=2, authors_per_batch=4, checkpoint_every=1), docs, tmp_path / "b"
    )
    from safetensors.torch import load_file

    wa, wb = load_file(straight / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa)
    la = losses(json.loads((tmp_path / "a" / "train_log.json").read_text()))
    lb = losses(json.loads((tmp_path / "b" / "train_log.json").read_text()))
    assert np.allclose(la, lb, atol=1e-5)


def _v2_config(backbone, **kw):
    from plugins.sadiri_v2.config import RetrieverConfig

    base = dict(
        backbone=str(backbone),
        max_length=64,
        authors_per_batch=12,
        epochs=6,
        lr=1e-3,
        tau=0.1,
        hard_negatives=False,
        grad_checkpointing=True,
        device="cpu",
    )
    return RetrieverConfig(**{**base, **kw})


def test_v2_retriever_trains_lora_and_projection_only_and_round_trips(tiny_qwen3_dir, tmp_path, isolated_cache):
    from plugins.sadiri_v2.retriever import RetrieverSystem, new_for_training, train

    model = new_for_training(_v2_config(tiny_qwen3_dir))
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n or n.startswith("projection.") for n in names)
    hidden = model.backbone.get_base_model().config.hidden_size
    assert model.projection.out_features == hidden // 2 and model.projection.bias is not None
    lora = model.backbone.peft_config["default"]
    assert (lora.r, lora.lora_alpha, lora.lora_dropout, lora.bias) == (16, 32, 0.05, "none")
    assert set(lora.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

    out = train(
        _v2_config(tiny_qwen3_dir, hard_negatives=True, project_for_clustering=True, authors_per_batch=6),
        _train_docs(),
        tmp_path / "v2",
    )
    curve = losses(json.loads((tmp_path / "v2" / "train_log.json").read_text()))
    assert curve[-1] < curve[0], curve
    assert (out / "adapter" / "adapter_config.json").is_file() and (out / "projection.safetensors").is_file()
    probe = _train_docs()[:4]
    a = RetrieverSystem(_v2_config(tiny_qwen3_dir, model=str(out))).encode(probe)
    b = RetrieverSystem(_v2_config(tiny_qwen3_dir, model=str(out), cache=False)).encode(probe)
    assert a.shape == (4, hidden // 2) and np.allclose(a, b, atol=1e-5)


def test_v2_embedding_does_not_depend_on_batch_mates(tiny_qwen3_dir, isolated_cache):
    from plugins.sadiri_v2.retriever import RetrieverSystem

    system = RetrieverSystem(_v2_config(tiny_qwen3_dir, cache=False))
    docs = _train_docs()[:6]
    together = system.encode(docs)
    alone = np.stack([system.encode([d])[0] for d in docs])
    assert np.allclose(together, alone, atol=1e-5)


def _luar(tiny_bert_dir, seed=0):
    from transformers import AutoModel

    from harness.neural.hf import load_tokenizer
    from plugins.luar.model import LUAR

    torch.manual_seed(seed)
    return LUAR(AutoModel.from_pretrained(tiny_bert_dir), load_tokenizer(str(tiny_bert_dir)), 512, 32, 16)


def test_luar_loads_a_checkpoint_in_the_released_layout(tiny_bert_dir, tmp_path):
    """A randomly initialised LUAR saved as the released checkpoints are (config.json with
    embedding_size; weights named transformer.* and linear.*) loads to the same function."""
    from safetensors.torch import save_file

    from plugins.luar.system import load_released

    model = _luar(tiny_bert_dir, seed=1)
    folder = tmp_path / "LUAR-MUD-like"
    folder.mkdir()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    assert {k.split(".")[0] for k in state} == {"transformer", "linear"}
    save_file(state, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({"model_type": "LUAR", "embedding_size": 512}))
    loaded = load_released(folder, str(tiny_bert_dir))
    texts = [d.fullText for d in _train_docs()[:3]]
    with torch.no_grad():
        a = model.embed(**model.collate(model.featurize(texts)))
        b = loaded.embed(**loaded.collate(loaded.featurize(texts)))
    assert a.shape == (3, 512) and torch.allclose(a, b, atol=1e-6)


def test_luar_episode_is_masked_not_padded(tiny_bert_dir):
    model = _luar(tiny_bert_dir).eval()
    short, long = "a short text.", " ".join(d.fullText for d in _train_docs()[:2])
    feats = model.featurize([short, long])
    assert len(feats[0]) == 1 and len(feats[1]) == 16 and all(len(c) <= 32 for c in feats[1])
    with torch.no_grad():
        both = model.embed(**model.collate(feats))
        alone = model.embed(**model.collate(feats[:1]))
    assert torch.allclose(both[0], alone[0], atol=1e-5)


def test_luar_training_lowers_loss(tiny_bert_dir, tmp_path, isolated_cache):
    from plugins.luar.config import LUARConfig
    from plugins.luar.system import LUARSystem, train

    cfg = LUARConfig(
        backbone=str(tiny_bert_dir),
        checkpoint=None,
        max_chunks=2,
        authors_per_batch=12,
        epochs=8,
        lr=1e-3,
        tau=0.1,
        grad_checkpointing=False,
        device="cpu",
    )
    out = train(cfg, _train_docs(), tmp_path / "luar")
    curve = losses(json.loads((tmp_path / "luar" / "train_log.json").read_text()))
    assert curve[-1] < curve[0] * 0.8, curve
    vecs = LUARSystem(LUARConfig(backbone=str(tiny_bert_dir), model=str(out), max_chunks=2, device="cpu")).encode(
        _train_docs()[:3]
    )
    assert vecs.shape == (3, 512)


@pytest.mark.parametrize(
    "system,weights",
    [
        ("sadiri", ["model.safetensors"]),
        ("sadiri-v2", ["adapter/adapter_model.safetensors", "projection.safetensors"]),
        ("sadiri-v2-reranker", ["adapter/adapter_model.safetensors", "head.safetensors"]),
    ],
)
def test_ddp_step_equals_single_process_step(system, weights, tiny_bert_dir, tiny_qwen3_dir, tmp_path):
    """Two processes (gloo, CPU) with the global batch split between them give the same loss
    and the same updated weights as one process with the whole batch (SADIRI-v2: fresh LoRA
    and projection too, which every process must draw alike; the reranker: its queries split
    between the processes, with gradient accumulation over two global batches)."""
    import socket
    import subprocess
    import sys

    from safetensors.torch import load_file

    from tests.conftest import ROOT

    backbone = tiny_bert_dir if system == "sadiri" else tiny_qwen3_dir

    def run(nproc, out):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={nproc}",
            f"--master_port={port}",
            "--master_addr=127.0.0.1",
            str(ROOT / "tests" / "ddp_worker.py"),
            system,
            str(backbone),
            str(out),
            "2",
        ]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        state = {f"{w}:{k}": v for w in weights for k, v in load_file(out / "model" / w).items()}
        return losses(json.loads((out / "train_log.json").read_text())), state

    one_loss, one_w = run(1, tmp_path / "one")
    two_loss, two_w = run(2, tmp_path / "two")
    assert json.loads((tmp_path / "two" / "train_log.json").read_text())["world_size"] == 2
    assert np.allclose(one_loss, two_loss, atol=1e-5), (one_loss, two_loss)
    assert _same_weights(one_w, two_w)


def test_gradient_cache_micro_batches_equal_the_whole_batch(tiny_bert_dir, tmp_path, isolated_cache):
    """One process, the global batch embedded in micro-batches of 5 authors through the gradient
    cache, ends with the weights and losses of the whole batch at once (no dropout here)."""
    from safetensors.torch import load_file

    from plugins.sadiri.system import train

    docs = _train_docs()
    whole = train(_sadiri_config(tiny_bert_dir, max_steps=2, epochs=2), docs, tmp_path / "whole")
    micro = train(_sadiri_config(tiny_bert_dir, max_steps=2, epochs=2, micro_batch=5), docs, tmp_path / "micro")
    wa, wb = load_file(whole / "model.safetensors"), load_file(micro / "model.safetensors")
    assert _same_weights(wa, wb)
    la = losses(json.loads((tmp_path / "whole" / "train_log.json").read_text()))
    lb = losses(json.loads((tmp_path / "micro" / "train_log.json").read_text()))
    assert len(la) == 2 and np.allclose(la, lb, atol=1e-5)
    assert not torch.allclose(wa[next(iter(wa))], load_file(tiny_bert_dir / "model.safetensors")[next(iter(wa))])


def test_train_writes_a_model_card_and_runs_record_the_model_by_content(tiny_bert_dir, tmp_path, isolated_cache):
    """`aa-harness train` leaves aa_model.json (system, recipe, data hash, steps, final loss, ...);
    a run with that model records its content hash and card, not its path."""
    from harness.data.documents import Document
    from harness.plugins import load_registry
    from harness.runs.model_cards import content_sha256, training_data_fingerprint
    from harness.runs.results import read_result
    from harness.runs.run_job import RunJob, run_job
    from harness.runs.train_job import train_job
    from tests.conftest import RECORD, write_jsonl

    docs = _train_docs()
    data = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
            for d in docs
        ],
    )
    reg = load_registry()
    sets = {
        "backbone": str(tiny_bert_dir),
        "max_length": "32",
        "authors_per_batch": "6",
        "epochs": "1",
        "lr": "1e-3",
        "tau": "0.1",
        "hard_negatives": "false",
        "grad_checkpointing": "false",
        "device": "cpu",
        "cache": "false",
    }
    model = train_job(reg, "sadiri", [data], tmp_path / "out", sets)
    card = json.loads((model / "aa_model.json").read_text())
    assert card["system"] == "sadiri" and card["pooling"] == "mean"  # the plugin's own fields stay
    assert card["recipe"]["authors_per_batch"] == 6 and "encode_max_tokens" not in card["recipe"]
    assert (
        card["training_data"]["sha256"]
        == training_data_fingerprint([Document(d.documentID, d.authorIDs, d.fullText, d.genre) for d in docs])["sha256"]
    )
    assert card["training_data"]["authors"] == 12 and card["author_fraction"] == 1.0 and card["seed"] == 0
    assert card["steps"] == 2 and isinstance(card["final_loss"], float) and card["device"].startswith("cpu")
    assert card["global_batch"] == {"unit": "authors", "per_batch": 6, "grad_accumulation": 1, "per_optimizer_step": 6}
    assert card["commit"]
    out = run_job(
        reg,
        RunJob(
            systems=["sadiri"],
            collection="demo",
            seeds=[0],
            runs_dir=tmp_path / "runs",
            splits_dir=RECORD,
            overrides={**sets, "model": str(model)},
            progress=False,
        ),
        log=lambda *_: None,
    )
    res = read_result(out[0].path)
    assert res["config"]["model"] == f"sha256:{content_sha256(model)}"
    assert res["extra"]["model_card"]["training_data"] == card["training_data"] and str(tmp_path) not in json.dumps(res)


def test_v2_centered_unit_projection_starts_the_dot_product_loss_at_cosine_scale(tiny_qwen3_dir, isolated_cache):
    """The fitted projection maps the sample's pooled states to mean norm 1 around 0, and refits identically."""
    import torch

    from harness.neural.device import pick_device
    from harness.neural.encoder import embed_features
    from plugins.sadiri_v2.retriever import new_for_training

    docs = _train_docs()
    cfg = _v2_config(tiny_qwen3_dir, projection_init="centered-unit", init_sample=16)
    torch.manual_seed(0)  # the trainer seeds before it builds
    model = new_for_training(cfg, docs)
    sample = sorted(docs, key=lambda d: d.documentID)[:16]
    z = torch.from_numpy(embed_features(model, model.featurize([d.fullText for d in sample]), pick_device("cpu")))
    assert abs(float(z.norm(dim=1).mean()) - 1.0) < 0.1  # the fit is on the trainer's sample, this is another 16
    assert float(z.mean(0).norm()) < 1e-3
    torch.manual_seed(0)
    again = new_for_training(cfg, docs)
    assert torch.equal(model.projection.weight, again.projection.weight)


def test_v2_fast_training_gives_the_plain_paths_losses_and_weights(
    tiny_qwen3_dir, tmp_path, isolated_cache, monkeypatch
):
    """--set fast_training=true (the fused, packed LoRA step) trains as the Hugging Face forward does (fp32, no dropout)."""
    from safetensors.torch import load_file

    import harness.neural.fast.lora_train as lora_train
    from plugins.sadiri_v2.retriever import train

    calls, real = [], lora_train.embed_for_training

    def counted(decoder, rows, device, **kw):
        calls.append(len(rows))
        return real(decoder, rows, device, **kw)

    monkeypatch.setattr(lora_train, "embed_for_training", counted)
    runs = {}
    for fast in (False, True):
        cfg = _v2_config(
            tiny_qwen3_dir,
            authors_per_batch=6,
            max_steps=3,
            lora_dropout=0.0,
            grad_checkpointing=False,
            fast_training=fast,
        )
        out = train(cfg, _train_docs(), tmp_path / str(fast))
        log = json.loads((tmp_path / str(fast) / "train_log.json").read_text())
        runs[fast] = (
            losses(log),
            load_file(out / "adapter" / "adapter_model.safetensors"),
            load_file(out / "projection.safetensors"),
        )
    (la, wa, pa), (lb, wb, pb) = runs[False], runs[True]
    assert calls and all(n == 12 for n in calls)  # the fused step ran: 6 authors x 2 documents a batch
    assert len(la) == 3 and np.allclose(la, lb, rtol=1e-4), (la, lb)
    for a, b in ((wa, wb), (pa, pb)):
        assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for k in a)


@pytest.mark.parametrize("poison", ["loss", "gradient"])
def test_a_non_finite_step_stops_training_before_it_is_taken(
    tiny_bert_dir, tmp_path, isolated_cache, monkeypatch, poison
):
    """A NaN loss or gradient at the second step: one line naming where, no optimizer step with it, no
    model or log written; the steps before it are in the checkpoint, each with its gradient norm."""
    from harness.errors import HarnessError
    from harness.neural.training import ContrastivePairs
    from plugins.sadiri.system import train

    step, calls = ContrastivePairs.step, []

    def poisoned(self, wrapped, model, *a, **kw):
        out = step(self, wrapped, model, *a, **kw)
        calls.append(1)
        if len(calls) == 2:
            if poison == "loss":
                return type(out)(float("nan"), out.documents, out.tokens)
            next(p for p in model.trainable_parameters() if p.grad is not None).grad.fill_(float("inf"))
        return out

    monkeypatch.setattr(ContrastivePairs, "step", poisoned)
    cfg = _sadiri_config(tiny_bert_dir, authors_per_batch=4, checkpoint_every=1, max_steps=3)
    with pytest.raises(
        HarnessError, match=f"epoch 0, batch 2 \\(optimizer step 2\\): the {poison} is not finite"
    ) as stopped:
        train(cfg, _train_docs(), tmp_path / "run")
    assert not (tmp_path / "run" / "model").exists() and not (tmp_path / "run" / "train_log.json").exists()
    progress = json.loads((tmp_path / "run" / "checkpoint" / "progress.json").read_text())
    assert progress["steps_done"] == 1 and progress["log"][0]["grad_norm"] > 0
    # the line names what the step held, so the batch can be found again
    authors = [row[0] for row in progress["plan"][1]]
    assert str(stopped.value).endswith(f"the step's authors {', '.join(authors)}")
