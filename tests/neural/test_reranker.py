"""The SADIRI-v2 reranker: negative sampling on a toy space, and a tiny decoder cross-encoder."""

import json
import random

import numpy as np
import pytest

from plugins.sadiri_v2.config import RerankerConfig, parse_strategy, strategy_label
from plugins.sadiri_v2.negatives import (
    cached_neighbours,
    draw_negatives,
    nearest_other_author,
    split_counts,
)


def _toy_space():
    """Author A: query (0), positive (1) and one more near the query (30). Docs 2-5 by other
    authors sit near the query, 6-9 near the positive, 10-29 far from both."""
    rng = np.random.default_rng(0)
    q_dir, p_dir = np.array([1.0, 0, 0, 0]), np.array([0, 1.0, 0, 0])
    vecs, authors = [q_dir, p_dir], ["A", "A"]
    for i in range(4):
        vecs.append(q_dir + 0.05 * (i + 1) * np.array([0, 0, 1, 0]))
        authors.append(f"near-q-{i}")
    for i in range(4):
        vecs.append(p_dir + 0.05 * (i + 1) * np.array([0, 0, 1, 0]))
        authors.append(f"near-p-{i}")
    for i in range(20):
        vecs.append(np.array([0, 0, 0, 1.0]) + 0.3 * rng.normal(size=4))
        authors.append(f"far-{i % 7}")
    vecs.append(q_dir + 0.01)
    authors.append("A")
    return np.array(vecs), authors


@pytest.mark.parametrize(
    "strategy,expect",
    [
        ("q", {2, 3, 4, 5}),
        ("p", {6, 7, 8, 9}),
        ("q+p", {2, 3, 6, 7}),
    ],
)
def test_neighbour_strategies_draw_from_the_right_pool(strategy, expect):
    vecs, authors = _toy_space()
    nn = nearest_other_author(vecs, authors, k=10)
    negs = draw_negatives(0, 1, strategy, 4, nn, authors, random.Random(0))
    assert set(negs) == expect


def test_random_and_mixed_strategies_never_use_the_query_author():
    vecs, authors = _toy_space()
    nn = nearest_other_author(vecs, authors, k=10)
    for seed in range(20):
        for strategy in ("r", "q+r", "p+r", "q+p+r"):
            negs = draw_negatives(0, 1, strategy, 12, nn, authors, random.Random(seed))
            assert len(negs) == len(set(negs)) == 12
            assert all(authors[i] != "A" for i in negs)
    mixed = draw_negatives(0, 1, "q+p+r", 12, nn, authors, random.Random(0))
    assert set(mixed[:4]) == {2, 3, 4, 5} and set(mixed[4:8]) == {6, 7, 8, 9}  # 4 + 4 + 4


def test_strategy_names_and_even_split():
    assert parse_strategy("r+q") == ("q", "r") and strategy_label("q+p+r") == "n(d_q) + n(d_q+) + n(r)"
    assert split_counts(12, ("q", "p", "r")) == {"q": 4, "p": 4, "r": 4}
    assert split_counts(12, ("q", "r")) == {"q": 6, "r": 6}
    with pytest.raises(ValueError):
        parse_strategy("q+x")
    with pytest.raises(ValueError):
        RerankerConfig(strategy="")


def test_neighbours_are_computed_once(tmp_path):
    vecs, authors = _toy_space()
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return vecs

    texts = [f"t{i}" for i in range(len(authors))]
    a = cached_neighbours(texts, authors, embed, "toy", 5, tmp_path)
    b = cached_neighbours(texts, authors, embed, "toy", 5, tmp_path)
    assert calls == [len(texts)] and np.array_equal(a, b)


# -- the tiny decoder cross-encoder -----------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _config(backbone, **kw):
    base = dict(
        backbone=str(backbone),
        max_query_tokens=48,
        max_candidate_tokens=48,
        negatives=4,
        strategy="r",
        author_fraction=1.0,
        lr=1e-3,
        queries_per_batch=1,
        grad_accumulation=2,
        epochs=1,
        grad_checkpointing=False,
        device="cpu",
    )
    return RerankerConfig(**{**base, **kw})


def _docs(n_authors=8):
    from tests.neural.test_neural_systems import _train_docs

    return _train_docs(n_authors)


@pytest.mark.slow
def test_pair_scores_ignore_batch_mates_and_padding_side(tiny_qwen3_dir):
    from plugins.sadiri_v2.reranker import new_for_training

    model = new_for_training(_config(tiny_qwen3_dir)).eval()
    docs = _docs()
    feats = model.pair_features(
        docs[0].fullText, [docs[1].fullText, "short one", " ".join(docs[5].fullText.split()[:12])]
    )
    assert len({len(f) for f in feats}) == 3
    delim = model.tokenizer("\u2980", add_special_tokens=False)["input_ids"]
    q = model.tokenizer(docs[0].fullText, add_special_tokens=False, truncation=True, max_length=48)["input_ids"]
    start = len(model.bos) + len(q)
    assert len(q) == 48 and all(f[start : start + len(delim)] == delim for f in feats)  # query | U+2980 | candidate
    assert max(len(f) for f in feats) <= len(model.bos) + 48 + len(delim) + 48 + len(model.eos)
    with torch.no_grad():
        alone = torch.cat([model(**model.collate([f])) for f in feats])[:, 0]
        model.padding_side = "right"
        right = model(**model.collate(feats))[:, 0]
        model.padding_side = "left"
        left = model(**model.collate(feats))[:, 0]
    assert torch.allclose(alone, right, atol=1e-4) and torch.allclose(alone, left, atol=1e-4)


@pytest.mark.slow
def test_reranker_training_lowers_loss_and_round_trips(tiny_qwen3_dir, tmp_path, isolated_cache):
    from plugins.sadiri_v2.reranker import RerankerSystem
    from plugins.sadiri_v2.reranker_training import train

    docs = _docs()
    out = train(_config(tiny_qwen3_dir, epochs=5), docs, tmp_path / "rr", log=lambda *_: None)
    log = json.loads((tmp_path / "rr" / "train_log.json").read_text())
    per_epoch = {}
    for e in log["log"]:
        if "loss" in e:
            per_epoch.setdefault(e["epoch"], []).append(e["loss"])
    first, last = np.mean(per_epoch[0]), np.mean(per_epoch[max(per_epoch)])
    assert last < first, per_epoch
    assert log["unit"] == "queries" and log["examples"] > 0 and "authors" not in log  # what the reranker counts
    assert json.loads((out / "aa_model.json").read_text())["strategy"] == "r"
    a = RerankerSystem(_config(tiny_qwen3_dir, model=str(out)))
    b = RerankerSystem(_config(tiny_qwen3_dir, model=str(out)))
    sa = a.rerank([docs[0], docs[2]], [docs[1:6], docs[3:5]])
    sb = b.rerank([docs[0], docs[2]], [docs[1:6], docs[3:5]])
    assert [len(x) for x in sa] == [5, 2] and all(np.allclose(x, y, atol=1e-5) for x, y in zip(sa, sb))
    pairs = RerankerSystem(_config(tiny_qwen3_dir, model=str(out), prefix_reuse=False))
    assert a.fast_path == "packed" and a.model.fused_decoder is not None and pairs.fast_path is None
    sc = pairs.rerank([docs[0], docs[2]], [docs[1:6], docs[3:5]])  # concatenated pairs, padded
    assert all(np.allclose(x, y, atol=1e-4) for x, y in zip(sa, sc)), (sa, sc)
    with pytest.raises(Exception, match="trained with strategy 'r'"):
        RerankerSystem(_config(tiny_qwen3_dir, model=str(out), strategy="q"))


@pytest.mark.slow
def test_reranker_resume_equals_uninterrupted(tiny_qwen3_dir, tmp_path, isolated_cache, monkeypatch):
    """Stopped after 5 optimizer steps (inside the second epoch) and resumed from its N-step
    checkpoint, a run ends with the uninterrupted run's weights and losses (LoRA dropout on;
    negatives sampled from neighbourhoods, here of a stand-in embedder)."""
    from safetensors.torch import load_file

    import plugins.sbert.embedder

    def fake_embedder(model, device, batch_size):
        return lambda texts: np.array(
            [[len(t) % 7, len(t) % 11, t.count("e") % 5 + 1.0] for t in texts], dtype=np.float32
        )

    monkeypatch.setattr(plugins.sbert.embedder, "sbert_embedder", fake_embedder)

    from harness.neural.training import losses
    from plugins.sadiri_v2.reranker_training import train

    docs = _docs()
    kw = dict(epochs=2, queries_per_batch=2, grad_accumulation=1, checkpoint_every=1, strategy="q+r", negative_pool=6)
    quiet = dict(log=lambda *_: None)
    straight = train(_config(tiny_qwen3_dir, **kw), docs, tmp_path / "a", **quiet)
    train(_config(tiny_qwen3_dir, max_steps=5, **kw), docs, tmp_path / "b", **quiet)
    progress = json.loads((tmp_path / "b" / "checkpoint" / "progress.json").read_text())
    assert progress["steps_done"] == 5 and progress["epoch"] == 1
    resumed = train(_config(tiny_qwen3_dir, **kw), docs, tmp_path / "b", **quiet)
    for name in ("adapter/adapter_model.safetensors", "head.safetensors"):
        wa, wb = load_file(straight / name), load_file(resumed / name)
        assert wa.keys() == wb.keys() and all(torch.allclose(wa[k], wb[k], atol=1e-6) for k in wa), name
    la = losses(json.loads((tmp_path / "a" / "train_log.json").read_text()))
    lb = losses(json.loads((tmp_path / "b" / "train_log.json").read_text()))
    assert len(la) == 8 and np.allclose(la, lb, atol=1e-5)


def test_pair_parts_split_each_pair_where_pair_features_joins_it(tiny_qwen3_dir):
    """The shared-prefix training step reads a pair as `pair_parts` splits it: the prefix is BOS
    (when the tokenizer has one) + the query's first max_query_tokens tokens + the delimiter, a
    candidate its first max_candidate_tokens tokens + EOS, and prefix + candidate is exactly
    `pair_features`' row; with the tiny Qwen3 tokenizer (no BOS) and with a BOS added to it."""
    from transformers import AutoTokenizer

    from plugins.sadiri_v2.reranker import PairScorer, new_for_training

    cfg = _config(tiny_qwen3_dir, max_query_tokens=20, max_candidate_tokens=12)
    model = new_for_training(cfg)
    with_bos = AutoTokenizer.from_pretrained(tiny_qwen3_dir)
    with_bos.add_special_tokens({"bos_token": "<test-bos>"})
    docs = _docs()
    query, cands = docs[0].fullText, [docs[1].fullText, "short one", docs[3].fullText]
    for tok in (model.tokenizer, with_bos):
        scorer = PairScorer(model.backbone, tok, model.head, cfg, "test")
        prefix, parts = scorer.pair_parts(query, cands)
        assert scorer.pair_features(query, cands) == [prefix + part for part in parts]
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
        q = tok(query, add_special_tokens=False)["input_ids"]
        delimiter = tok(cfg.delimiter, add_special_tokens=False)["input_ids"]
        assert len(q) > 20 and delimiter and prefix == bos + q[:20] + delimiter
        full = [tok(c, add_special_tokens=False)["input_ids"] for c in cands]
        assert len(full[0]) > 12 and len(full[1]) < 12  # one candidate truncated, one not
        assert parts == [ids[:12] + [tok.eos_token_id] for ids in full]
    assert model.bos == [] and scorer.bos == [with_bos.bos_token_id]


def _fast_and_plain_step(tiny_qwen3_dir, fast: bool, checkpoint: bool = False, **kw):
    """One optimizer step of the training task on 3 queries x (1 + 4) candidates, queries and
    candidates truncated, micro-batches of 2 queries; LoRA B drawn at random (PEFT starts it at
    zero, which would leave every LoRA A gradient zero), dropout off. checkpoint: the fast step's
    layers recomputed in the backward pass."""
    from harness.neural.fast.prefix_train import shared_prefix_score_groups
    from plugins.sadiri_v2.reranker import new_for_training
    from plugins.sadiri_v2.reranker_training import QueryNegatives

    cfg = _config(
        tiny_qwen3_dir,
        max_query_tokens=24,
        max_candidate_tokens=16,
        lora_dropout=0.0,
        queries_per_batch=3,
        micro_batch=2,
        **kw,
    )
    torch.manual_seed(0)
    model = new_for_training(cfg)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)
    model.train()
    task = QueryNegatives(
        _docs(), cfg, score_groups=shared_prefix_score_groups(checkpoint=checkpoint) if fast else None
    )
    batch = task.examples(0, lambda *_: None)[:3]
    optimizer = torch.optim.Adam(model.trainable_parameters(), lr=cfg.lr)
    out = task.step(model, model, batch, [len(batch)], torch.device("cpu"), False, 1.0, True)
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    optimizer.step()
    weights = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return out, grads, weights, task, model, batch


def test_fast_training_step_equals_the_concatenated_pairs_step(tiny_qwen3_dir, monkeypatch):
    """`fast_training`'s score_groups hook (the shared-prefix step) gives the concatenated pairs'
    step: the same loss, documents and tokens, LoRA and head gradients, and weights after Adam
    (fp32); it ran, on each query's pairs split as `pair_parts` splits them, whose prefix +
    candidate rows are `pair_features`'."""
    from harness.neural.fast import prefix_train

    seen, real = [], prefix_train.shared_prefix_scores

    def recording(decoder, head, groups, device, graphs=None):
        seen.append(groups)
        assert graphs is None  # on the CPU the layers run eagerly
        return real(decoder, head, groups, device, graphs)

    monkeypatch.setattr(prefix_train, "shared_prefix_scores", recording)
    plain, plain_grads, plain_weights, *_ = _fast_and_plain_step(tiny_qwen3_dir, fast=False)
    assert not seen
    fast, fast_grads, fast_weights, task, model, batch = _fast_and_plain_step(tiny_qwen3_dir, fast=True)
    assert [len(g) for g in seen] == [2, 1]  # one pack per micro-batch of queries
    groups = [g for piece in seen for g in piece]
    for (q, *cands), (prefix, parts) in zip(batch, groups):
        rows = model.pair_features(task.docs[q].fullText, [task.docs[i].fullText for i in cands])
        assert [list(prefix) + list(part) for part in parts] == rows and len(rows) == 5
    assert any(len(prefix) == 24 + len(model.delimiter_ids) for prefix, _ in groups)  # a truncated query
    assert fast.loss == pytest.approx(plain.loss, rel=1e-5) and (fast.documents, fast.tokens) == (
        plain.documents,
        plain.tokens,
    )
    assert plain_grads.keys() == fast_grads.keys() and any("head" in n for n in plain_grads)
    assert sum("lora_A" in n or "lora_B" in n for n in plain_grads) == 2 * 7 * 2
    g = torch.cat([plain_grads[n].flatten() for n in plain_grads])
    h = torch.cat([fast_grads[n].flatten() for n in plain_grads])
    assert float((g - h).norm() / g.norm()) < 1e-5  # measured 7e-7; the worst tensor 1e-6
    assert max(float((fast_grads[n] - plain_grads[n]).norm() / plain_grads[n].norm()) for n in plain_grads) < 1e-4
    # Adam's first step moves a weight by about lr * sign(gradient), so where a gradient is ~0 the last bits of
    # the sum decide the sign: allow those few elements, not more.
    off = sum(
        int((~torch.isclose(fast_weights[n], plain_weights[n], rtol=1e-4, atol=1e-6)).sum()) for n in plain_weights
    )
    assert off <= 1e-4 * sum(w.numel() for w in plain_weights.values()), off


def test_checkpointed_fast_training_step_on_the_gpu_attention_path(tiny_qwen3_dir, cpu_varlen_kernel):
    """The fast step as the trainer runs it by default (grad_checkpointing on), on the GPU's attention
    path (torch 2.11's varlen kernel, emulated on the CPU): the first backward runs (it raised a
    CheckpointError on an H100) and loss and gradients are the concatenated pairs' step's."""
    plain, plain_grads, *_ = _fast_and_plain_step(tiny_qwen3_dir, fast=False)
    calls = cpu_varlen_kernel()
    fast, fast_grads, *_ = _fast_and_plain_step(tiny_qwen3_dir, fast=True, checkpoint=True)
    assert calls  # the kernel path ran
    assert fast.loss == pytest.approx(plain.loss, rel=1e-5)
    assert plain_grads.keys() == fast_grads.keys()
    g = torch.cat([plain_grads[n].flatten() for n in plain_grads])
    h = torch.cat([fast_grads[n].flatten() for n in plain_grads])
    assert float((g - h).norm() / g.norm()) < 1e-5


def test_fast_training_takes_the_plain_path_where_the_fused_step_cannot_run(caplog):
    """The fused steps bypass DDP's gradient sync and know only the Llama family: under DDP, or
    on another backbone, the hooks hand the batch to the plain path and say so once; without a
    plain path to hand it to, they refuse."""
    from types import SimpleNamespace

    from torch.nn.parallel import DistributedDataParallel

    from harness.errors import HarnessError
    from harness.neural.fast.lora_train import fused_embed_batch
    from harness.neural.fast.prefix_train import shared_prefix_score_groups

    ddp = object.__new__(DistributedDataParallel)
    bert = SimpleNamespace(backbone=torch.nn.Linear(2, 2))  # no decoder config: not a fused family
    with pytest.raises(HarnessError, match="DDP"):
        shared_prefix_score_groups()(ddp, bert, [], torch.device("cpu"))
    with pytest.raises(HarnessError, match="no fused training path"):
        fused_embed_batch()(None, bert, [], torch.device("cpu"))
    seen = []
    plain = lambda wrapped, model, rows, device: seen.append((wrapped, len(rows))) or "plain"  # noqa: E731
    with caplog.at_level("INFO"):
        assert shared_prefix_score_groups(fallback=plain)(ddp, bert, [1, 2], torch.device("cpu")) == "plain"
        hook = fused_embed_batch(fallback=plain)
        assert hook(None, bert, [1], torch.device("cpu")) == hook(None, bert, [1, 2, 3], torch.device("cpu")) == "plain"
    assert [n for _, n in seen] == [2, 1, 3]
    notes = [r.getMessage() for r in caplog.records if "plain Hugging Face forward" in r.getMessage()]
    assert len(notes) == 2  # once per hook and model, not once per batch


@pytest.mark.slow
def test_reranker_fast_training_equals_the_plain_training(tiny_qwen3_dir, tmp_path, isolated_cache, monkeypatch):
    """`--set fast_training=true` trains as the concatenated pairs do: 3 optimizer steps over two
    epochs (8 queries an epoch, 2 a batch, accumulation 2, micro-batches of 1 query) give the same
    losses and the same LoRA and head weights (fp32, LoRA dropout off), and the shared-prefix
    step ran. lr 2e-4: Adam divides each gradient by its own size, so float noise in gradients
    near zero moves weights in proportion to lr (at 1e-3 the worst weight used half the tolerance)."""
    from safetensors.torch import load_file

    from harness.neural.fast import prefix_train
    from harness.neural.training import losses
    from plugins.sadiri_v2.reranker_training import train

    calls, real = [], prefix_train.shared_prefix_scores

    def counted(decoder, head, groups, device, graphs=None):
        calls.append(len(groups))
        return real(decoder, head, groups, device, graphs)

    monkeypatch.setattr(prefix_train, "shared_prefix_scores", counted)
    runs = {}
    for fast in (False, True):
        cfg = _config(
            tiny_qwen3_dir,
            max_query_tokens=32,
            max_candidate_tokens=24,
            lora_dropout=0.0,
            queries_per_batch=2,
            micro_batch=1,
            epochs=2,
            max_steps=3,
            lr=2e-4,
            fast_training=fast,
        )
        out = train(cfg, _docs(), tmp_path / str(fast), log=lambda *_: None)
        runs[fast] = (
            losses(json.loads((tmp_path / str(fast) / "train_log.json").read_text())),
            load_file(out / "adapter" / "adapter_model.safetensors"),
            load_file(out / "head.safetensors"),
        )
    (la, wa, ha), (lb, wb, hb) = runs[False], runs[True]
    assert calls == [1] * 12  # 3 steps x 2 batches x 2 queries, one query a forward
    assert len(la) == 3 and np.allclose(la, lb, rtol=1e-4), (la, lb)
    for a, b in ((wa, wb), (ha, hb)):
        assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=1e-4, atol=1e-6) for k in a)


class LengthReranker:
    """Scores a candidate by its text length: an obvious order to check the rerank plumbing."""

    def __init__(self, config):
        pass

    def rerank(self, queries, candidate_lists):
        return [np.array([float(len(c.fullText)) for c in cands]) for cands in candidate_lists]


def test_rerank_reorders_a_first_stage_as_the_scores_say(tmp_path):
    from harness.hookspecs import hookimpl
    from harness.plugins import load_registry, plugin_manager
    from harness.runs.rerank_job import RerankJob, rerank_job
    from harness.runs.results import read_rankings, read_result
    from harness.runs.run_job import RunJob, run_job
    from harness.specs import SystemSpec
    from tests.conftest import RECORD

    class Plugin:
        @hookimpl
        def register_systems(self, register):
            register(
                SystemSpec(
                    "by-length",
                    f"{__name__}:LengthReranker",
                    "plugins.bm25.config:BM25Config",
                    capabilities=("rerank",),
                )
            )

    reg = load_registry(plugin_manager(entrypoints=False, extra=(Plugin(),)))
    common = dict(collection="demo", seeds=[0], runs_dir=tmp_path, splits_dir=RECORD)
    run_job(reg, RunJob(systems=["bm25"], progress=False, **common), log=lambda *_: None)
    out = rerank_job(reg, RerankJob(system="by-length", first_stage="bm25", **common), log=lambda *_: None)
    assert out[0].path.parent.name == "bm25+by-length"
    first, second = read_rankings(tmp_path / "demo" / "bm25" / "seed-0.json"), read_rankings(out[0].path)
    from harness.data.demo import demo_collection

    docs = demo_collection().documents
    for q, ranking in second.items():
        assert {c for c, _ in ranking} == {c for c, _ in first[q]}  # the same 100 candidates
        lengths = [len(docs[c].fullText) for c, _ in ranking]
        assert lengths == sorted(lengths, reverse=True)
    res, fs = read_result(out[0].path), read_result(tmp_path / "demo" / "bm25" / "seed-0.json")
    assert res["metrics"]["success@100"] == fs["metrics"]["success@100"]
    assert res["config"]["first_stage"] == "bm25"
    again = rerank_job(reg, RerankJob(system="by-length", first_stage="bm25", **common), log=lambda *_: None)
    assert again[0].skipped


def test_a_batch_is_described_by_its_queries_and_candidates_document_ids(tiny_qwen3_dir):
    """What a stopped training names for its step: each query's document id and its candidates'."""
    from plugins.sadiri_v2.reranker_training import QueryNegatives

    task = QueryNegatives(_docs(), _config(tiny_qwen3_dir))
    batch = task.examples(0, lambda *_: None)[:2]
    text = task.describe(batch)
    ids = [[task.docs[i].documentID for i in example] for example in batch]
    assert text == "queries " + "; ".join(f"{q} (candidates {', '.join(cands)})" for q, *cands in ids)


def test_neighbours_of_float16_vectors_are_those_of_their_float32_values():
    """An embedder may hand back float16 (a half-precision SBERT): the similarities are still
    float32 products of the same values, not float16 ones, which round differently and have no
    BLAS behind them."""
    rng = np.random.default_rng(0)
    half = rng.standard_normal((400, 768)).astype(np.float16)
    authors = [f"a{i // 2}" for i in range(400)]
    got = nearest_other_author(half, authors, k=20)
    assert np.array_equal(got, nearest_other_author(half.astype(np.float32), authors, k=20))
