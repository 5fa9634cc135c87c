"""Progress on a CPU: a time estimate with advice, and one bar per phase."""

from __future__ import annotations

import time

import numpy as np

from harness.data.documents import Document
from harness.plugins import load_registry
from tests.conftest import ROOT


class SlowEncoder:
    """Encodes by length, slowly."""

    def __init__(self, config=None):
        pass

    def encode(self, documents):
        time.sleep(0.002 * len(documents))
        return np.array([[len(d.fullText), 1.0] for d in documents], dtype=np.float32)

    def device_name(self):
        return "cpu: test"


def test_slow_encoding_is_estimated_and_warned_with_advice(monkeypatch, capsys):
    from harness.foundation import progress
    from harness.protocols import DenseRanker

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.05")
    docs = [Document(f"d{i}", ("a",), "x" * i, "g") for i in range(60)]
    with progress.enabled(False), progress.seed_scope(len(docs), what="slow") as timings:
        DenseRanker(SlowEncoder()).rank(docs[:5], docs[5:], 10)
    err = capsys.readouterr().err
    assert err.count("warning: encoding 60 documents with slow on cpu: test will take about") == 1
    assert "GPU" in err and "--author-fraction" in err and "--set model=" not in err  # keeps a trained --model
    assert list(timings) == ["encode candidates", "encode queries", "search"]


def test_a_slow_first_chunk_alone_does_not_warn(monkeypatch, capsys):
    """One-time costs (CUDA start, compilation, dequantization) land in the first chunk: no warning from it."""
    from harness.foundation import progress

    class WarmUpThenFast(SlowEncoder):
        calls = 0

        def encode(self, documents):
            self.calls += 1
            if self.calls == 1:
                time.sleep(0.2)
            return np.ones((len(documents), 2), dtype=np.float32)

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.5")
    docs = [Document(f"d{i}", ("a",), "x", "g") for i in range(200)]
    with progress.enabled(False), progress.seed_scope(len(docs), what="warm"):
        progress.encode_with_progress(WarmUpThenFast().encode, docs, "encode candidates")
    assert "warning" not in capsys.readouterr().err


def test_cached_first_documents_do_not_hide_a_slow_model(monkeypatch, capsys):
    """The first documents come from an embedding cache (instant); the rest are slow: still warned."""
    from harness.foundation import progress

    class CachedThenSlow(SlowEncoder):
        seen = 0

        def encode(self, documents):
            self.seen += len(documents)
            if self.seen > 8:
                time.sleep(0.003 * len(documents))
            return np.ones((len(documents), 2), dtype=np.float32)

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.1")
    docs = [Document(f"d{i}", ("a",), "x", "g") for i in range(200)]
    with progress.enabled(False), progress.seed_scope(len(docs)):
        progress.encode_with_progress(CachedThenSlow().encode, docs, "encode candidates")
    assert capsys.readouterr().err.count("warning: encoding 200 documents") == 1


def test_a_run_shows_one_phase_after_another(tmp_path, small_collection_file, capsys):
    from harness.runs.runner import run_split

    reg = load_registry()
    from harness.evaluation.split_builder import build_split
    from harness.runs.job import open_collection

    collection = open_collection(reg, str(small_collection_file))
    split = build_split(collection, 0)
    out = run_split(
        system_name="slow", system=SlowEncoder(), config={}, collection=collection, split=split, runs_dir=tmp_path
    )
    assert list(out.phases) == ["encode candidates", "encode queries", "search", "score"]
    bars = capsys.readouterr().err
    assert "encode candidates" in bars and "score" in bars
    # a system that ranks by itself: one "rank" phase
    out = run_split(
        system_name="bm25", system=load_bm25(), config={}, collection=collection, split=split, runs_dir=tmp_path
    )
    assert list(out.phases) == ["rank", "score"]


def load_bm25():
    from plugins.bm25.config import BM25Config
    from plugins.bm25.system import BM25System

    return BM25System(BM25Config())


def test_no_library_bar_nests_under_the_harness_bars():
    source = (ROOT / "plugins" / "sbert" / "system.py").read_text()
    assert "show_progress_bar=False" in source
    run_job_source = (ROOT / "harness" / "runs" / "run_job.py").read_text()
    assert "tqdm(" not in run_job_source  # no seed bar for the phase bars to nest under


class _TinyEncoder:
    """A TextEncoder over one linear layer: a 'text' is its length, a feature one number."""

    @staticmethod
    def make():
        import torch

        from harness.neural.encoder import TextEncoder

        class Tiny(TextEncoder):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(1, 4)

            def featurize(self, texts):
                return [[float(len(t))] for t in texts]

            def collate(self, features):
                return {"x": torch.tensor(features, dtype=torch.float32)}

            def embed(self, x):
                return self.layer(x / 100.0)

        return Tiny()


def test_hard_negative_mining_shows_encoding_and_clustering(capsys):
    """The epoch's start embeds every training document: a bar (with the time left) and a line, not silence."""
    from types import SimpleNamespace

    torch = __import__("pytest").importorskip("torch")
    from harness.neural.training import ContrastivePairs

    authors = {f"a{i}": ["x" * (i + 1), "y" * (2 * i + 1)] for i in range(12)}
    recipe = SimpleNamespace(
        seed=0,
        hard_negatives=True,
        encode_max_tokens=8,
        project_for_clustering=False,
        authors_per_batch=4,
        cluster_factor=3.5,
    )
    lines: list[str] = []
    batches = ContrastivePairs(authors, recipe).plan_epoch(_TinyEncoder.make(), 0, torch.device("cpu"), lines.append)
    assert sorted(a for b in batches for a, _, _ in b) == sorted(authors)
    assert lines[0] == "epoch 0: hard negatives: encoding 24 documents on " + lines[0].split(" on ", 1)[1]
    err = capsys.readouterr().err
    assert "epoch 0: hard negatives: encode" in err and "/24 " in err and "epoch 0: hard negatives: cluster" in err


def test_training_without_a_terminal_logs_steps_with_the_time_left(tmp_path, capsys):
    """No terminal (a log file, a job): a line every 10 optimizer steps and at the end, with the time left;
    the step cap sets where the epoch ends."""
    from types import SimpleNamespace

    torch = __import__("pytest").importorskip("torch")
    from harness.neural.training import StepResult, train_loop

    class Task:
        unit = "authors"

        def size(self):
            return 40

        def plan_epoch(self, model, epoch, device, log):
            return [[i] for i in range(40)]

        def step(self, wrapped, model, shard, sizes, device, amp, scale, last):
            time.sleep(0.002)
            loss = wrapped(x=torch.ones(1, 1)).pow(2).sum()
            (loss * scale).backward()
            return StepResult(float(loss.detach()), 1, 1)

    recipe = SimpleNamespace(
        lr=1e-3,
        epochs=1,
        grad_accumulation=1,
        bf16=False,
        grad_checkpointing=False,
        checkpoint_every=0,
        max_steps=12,
        device="cpu",
    )
    lines: list[str] = []
    summary = train_loop(_TinyEncoder.make(), Task(), recipe, tmp_path, save=lambda m, p: None, log=lines.append)
    assert summary["steps"] == 12
    steps = [line for line in lines if line.startswith("epoch 0 batch")]
    assert [s.split(" loss")[0] for s in steps] == [
        "epoch 0 batch 1/40 step 1",
        "epoch 0 batch 11/40 step 11",
        "epoch 0 batch 12/40 step 12",
    ]
    assert "left in this epoch)" in steps[0] and "left" not in steps[-1]  # the cap ends the epoch at batch 12
