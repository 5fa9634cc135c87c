"""The fast paths compute the plain Hugging Face function: mask-free causal attention on
right-padded rows, query prefix reuse in the reranker, sharded encoding, compressed search.
CPU, fp32, tiny models; tests/neural/test_fast_paths_gpu.py repeats the checks at real shapes in bf16."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _model(arch, seed=0):
    from aa_harness_bench.archs import build_model

    return build_model(arch, "cpu", torch.float32, seed=seed)


def _rows(n, lo, hi, seed=0, vocab=512):
    from aa_harness_bench.workload import random_rows

    return random_rows(n, lo, hi, vocab, seed)


@pytest.mark.parametrize("arch", ["tiny-qwen3", "tiny-mistral"])
def test_mask_free_attention_on_right_padding_equals_each_row_alone(arch):
    from harness.neural.fast import causal_attention

    ref, fast = _model(arch), _model(arch)
    assert causal_attention.enable(fast) and not causal_attention.is_enabled(ref)
    rows = _rows(5, 3, 40, seed=1)
    width = max(map(len, rows))
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    with torch.no_grad():
        out = fast(input_ids=ids).last_hidden_state
        for i, r in enumerate(rows):
            alone = ref(input_ids=torch.tensor([r])).last_hidden_state[0]
            assert torch.linalg.norm(out[i, : len(r)] - alone) / torch.linalg.norm(alone) < 1e-5


@pytest.mark.slow
def test_harness_encoding_equals_naive_hf_encoding():
    from aa_harness_bench.encode import bench_encode

    model = _model("tiny-qwen3")
    figures = bench_encode(
        model,
        _rows(48, 5, 120, seed=2),
        torch.device("cpu"),
        max_tokens=1024,
        naive_batch=8,
        warmup_rows=4,
        variants=[(700, "aa_causal"), (900, "padded")],
        log=lambda *_: None,
    )
    assert figures["harness"]["path"] == "packed"
    assert [v["path"] for v in figures["variants"]] == ["aa_causal", "padded"]
    for agreement in (figures["agreement"], *[v["agreement"] for v in figures["variants"]]):
        assert agreement["rel_error_max"] < 1e-5 and agreement["top1_agreement"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["tiny-qwen3", "tiny-mistral"])
def test_prefix_reuse_scores_equal_concatenated_pairs(arch):
    from aa_harness_bench.rerank import bench_rerank

    model = _model(arch)
    queries = _rows(2, 10, 40, seed=3)
    cands = [_rows(9, 1, 30, seed=4 + i) for i in range(2)]  # a one-token candidate too
    cands[0][0] = cands[0][0][:1]
    figures = bench_rerank(
        model, queries, cands, torch.device("cpu"), max_tokens=64, naive_batch=4, log=lambda *_: None
    )
    assert figures["harness"]["path"] == "packed" and figures["variants"][0]["path"] == "aa_causal"
    for agreement in (figures["agreement"], figures["variants"][0]["agreement"]):
        assert agreement["max_abs_diff_over_score_sd"] < 1e-5 and agreement["spearman_min"] > 0.9999


def test_bidirectional_encoders_keep_their_attention(tiny_bert_dir):
    from harness.neural.fast import causal_attention
    from harness.neural.hf import load_backbone

    bert, _, _ = load_backbone(str(tiny_bert_dir))
    assert not causal_attention.supports(bert) and not causal_attention.enable(bert)


def test_sliding_window_longer_than_window_is_refused():
    from transformers import MistralConfig, MistralModel

    from harness.neural.fast import causal_attention

    torch.manual_seed(0)
    model = MistralModel(
        MistralConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            sliding_window=8,
        )
    )
    assert causal_attention.enable(model)
    with torch.no_grad():
        model(input_ids=torch.arange(8)[None])  # within the window: fine
        with pytest.raises(ValueError, match="sliding window of 8"):
            model(input_ids=torch.arange(9)[None])


@pytest.mark.slow
def test_retriever_system_fast_and_plain_encodings_agree(tiny_qwen3_dir, isolated_cache):
    from harness.data.demo import demo_documents
    from plugins.sadiri_v2.config import RetrieverConfig
    from plugins.sadiri_v2.retriever import RetrieverSystem

    docs = demo_documents()[:12]
    fast = RetrieverSystem(RetrieverConfig(backbone=str(tiny_qwen3_dir), max_length=64, device="cpu", cache=False))
    plain = RetrieverSystem(
        RetrieverConfig(backbone=str(tiny_qwen3_dir), max_length=64, device="cpu", cache=False, fast_path=False)
    )
    assert fast.fast_path == "packed" and plain.fast_path is None
    assert fast.describe()["fast_path"] == "packed"
    a, b = fast.encode(docs), plain.encode(docs)
    assert np.allclose(a, b, atol=1e-5), np.abs(a - b).max()


@pytest.mark.slow
def test_sharded_encoding_under_torchrun_equals_one_process(tmp_path):
    import socket
    import subprocess
    import sys

    from tests.conftest import ROOT

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "shard.npz"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        f"--master_port={port}",
        "--master_addr=127.0.0.1",
        str(ROOT / "tests" / "shard_worker.py"),
        str(out),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    z = np.load(out)
    assert z["sharded"].shape == z["single"].shape == (23, 64)
    assert np.allclose(z["sharded"], z["single"], atol=1e-6)


def test_exact_search_keeps_the_tie_rule_when_ties_reach_past_the_fetched_scores():
    from harness.neural.search import search_torch

    rng = np.random.default_rng(0)
    cands = rng.standard_normal((100, 8)).astype(np.float32) * 0.01
    cands[10:70] = 1.0  # 60 tied best candidates, more than k + margin
    ids = [f"d{i:03d}" for i in range(100)]
    got = search_torch(np.ones((1, 8), dtype=np.float32), cands, ids, k=5, margin=4)[0]
    assert [c for c, _ in got] == [f"d{i:03d}" for i in range(10, 15)]


@pytest.mark.slow
def test_compressed_index_recall_on_clustered_vectors():
    pytest.importorskip("faiss")
    from aa_harness_bench.search import clustered_vectors, exact_topk_indices
    from harness.neural.fast.compressed_search import build_index, index_search

    cands = clustered_vectors(4000, 32, seed=0, clusters=32)
    queries = clustered_vectors(50, 32, seed=1, clusters=32)
    exact, _ = exact_topk_indices(queries, cands, 10, torch.device("cpu"))
    ids = [f"d{i:05d}" for i in range(len(cands))]
    got = index_search(build_index(cands, "IVF64,Flat"), queries, ids, 10, nprobe=64)  # every list: exact
    assert [[int(c[1:]) for c, _ in row] for row in got] == [
        sorted(r, key=lambda i: (-float(cands[i] @ q), i)) for r, q in zip(exact.tolist(), queries)
    ]
    approx = index_search(build_index(cands, "IVF64,PQ8"), queries, ids, 10, nprobe=8)
    recall = np.mean([len({int(c[1:]) for c, _ in row} & set(r)) / 10 for row, r in zip(approx, exact.tolist())])
    assert 0.2 < recall < 1.0  # compressed: approximate, but far from random (10 / 4000)


def test_fusing_holds_no_second_copy_of_the_weights():
    from harness.neural.fast.fused_decoder import FusedDecoder

    model = _model("tiny-qwen3")
    count = sum(p.numel() for p in model.parameters())
    decoder = FusedDecoder(model)
    attn, mlp = model.layers[0].self_attn, model.layers[0].mlp
    assert attn.q_proj.weight.data_ptr() == decoder.layers[0]["w_qkv"].data_ptr()
    assert mlp.gate_proj.weight.data_ptr() == decoder.layers[0]["w_gu"].data_ptr()
    assert sum(p.numel() for p in model.parameters()) == count


@pytest.mark.slow
def test_bench_reads_real_texts_through_a_tokenizer(tiny_qwen3_dir, tmp_path):
    from aa_harness_bench.workload import text_rows
    from harness.data.demo import demo_documents
    from harness.errors import HarnessError
    from tests.conftest import write_jsonl

    docs = [
        {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
        for d in demo_documents()[:12]
    ]
    path = write_jsonl(tmp_path / "texts.jsonl", docs)
    rows = text_rows([path], str(tiny_qwen3_dir), 5, skip=2, max_tokens=40)
    assert len(rows) == 5 and all(0 < len(r) <= 40 for r in rows)
    with pytest.raises(HarnessError, match="outside this architecture's vocabulary"):
        text_rows([path], str(tiny_qwen3_dir), 5, vocab=3)
    with pytest.raises(HarnessError, match="12 documents after the first 0, 20 needed"):
        text_rows([path], str(tiny_qwen3_dir), 20)


@pytest.mark.slow
def test_bench_on_real_texts_writes_its_result_with_the_files_it_read(tiny_qwen3_dir, bench_installed, tmp_path):
    import json

    from harness.cli import main
    from harness.data.demo import demo_documents
    from tests.conftest import write_jsonl

    docs = [
        {"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText, "genre": d.genre}
        for d in demo_documents()[:12]
    ]
    texts = write_jsonl(tmp_path / "texts.jsonl", docs)
    out = tmp_path / "encode.json"
    argv = [
        "bench",
        "encode",
        "--backbone",
        str(tiny_qwen3_dir),
        "--texts",
        str(texts),
        "--docs",
        "6",
        "--device",
        "cpu",
    ]
    assert main([*argv, "--naive-batch", "2", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["args"]["texts"] == [str(texts)] and record["args"]["backbone"] == str(tiny_qwen3_dir)
