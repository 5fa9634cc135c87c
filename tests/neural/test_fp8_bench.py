"""`aa-harness bench encode|rerank --fp8`: the FP8 path timed after bf16 in the same process, with
its agreement against bf16 (top-k neighbours, Spearman of the scores), written as the other bench
results are and shown on the performance page; on a device without FP8 products, one line.
Tiny Qwen3 on the CPU, where the products compute their fp32 reference: the figures are the
code's, not a measurement."""

import pytest

torch = pytest.importorskip("torch")

CPU = torch.device("cpu")


def _model():
    from aa_harness_bench.archs import build_model

    return build_model("tiny-qwen3", CPU, torch.float32, seed=0)


def _rows(n, lo, hi, seed):
    from aa_harness_bench.workload import random_rows

    return random_rows(n, lo, hi, 512, seed)


def test_encode_times_fp8_beside_bf16_and_compares_it_with_bf16():
    from aa_harness_bench.encode import bench_encode
    from harness.neural.fast.fp8_linear import Fp8Linear

    model = _model()
    figures = bench_encode(model, _rows(24, 5, 40, seed=1), CPU, warmup_rows=4, fp8=True, log=lambda *_: None)
    f = figures["fp8"]
    assert f["path"] == "packed" and f["tokens_per_s"] > 0 and f["speedup_vs_bf16"] > 0
    vs = f["agreement_vs_bf16"]
    assert {"rel_error_median", "top10_overlap", "spearman_median", "spearman_min"} <= set(vs)
    # FP8's rounding (a relative half step of 2^-4 an operand) moves the vectors, but not past recognition
    assert 0 < vs["rel_error_median"] < 2.0**-3 and -1 <= vs["spearman_min"] <= vs["spearman_median"] <= 1
    assert isinstance(model.layers[0].mlp.down_proj, Fp8Linear)  # quantized in place, after the bf16 paths
    assert "fp8" not in bench_encode(_model(), _rows(8, 5, 20, seed=2), CPU, warmup_rows=2, log=lambda *_: None)


def test_score_spearman_is_one_for_the_same_ranking_and_falls_when_it_changes():
    import numpy as np

    from aa_harness_bench.encode import score_spearman

    v = np.random.default_rng(0).normal(size=(30, 8))
    same = score_spearman(v, v * 3.0, queries=5)
    assert same == {"spearman_median": pytest.approx(1.0), "spearman_min": pytest.approx(1.0)}
    other = score_spearman(v, np.random.default_rng(1).normal(size=(30, 8)), queries=5)
    assert other["spearman_median"] < 0.9


def test_rerank_times_fp8_beside_bf16():
    from aa_harness_bench.rerank import bench_rerank

    model = _model()
    queries = _rows(2, 10, 20, seed=3)
    cands = [_rows(6, 3, 15, seed=4 + i) for i in range(2)]
    figures = bench_rerank(model, queries, cands, CPU, also_aa_causal=False, fp8=True, log=lambda *_: None)
    f = figures["fp8"]
    assert f["path"] == "packed" and f["pairs_per_s"] > 0
    assert {"spearman_min", "top8_overlap", "max_abs_diff_over_score_sd"} <= set(f["agreement_vs_bf16"])


def test_bench_fp8_on_the_cpu_is_one_line(bench_installed, capsys):
    from harness.cli import main

    for kind in ("encode", "rerank"):
        argv = ["bench", kind, "--arch", "tiny-qwen3", "--random-weights", "--device", "cpu", "--fp8", "--no-save"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("aa-harness: error: fp8=true:") and err.count("\n") == 1 and "device is cpu" in err


def test_the_performance_page_shows_fp8_beside_bf16(tmp_path):
    from aa_harness_bench.performance import performance_page
    from aa_harness_bench.results import write_result

    entry = {"seconds": 1.0, "tokens_per_s": 1000.0, "documents_per_s": 3.0, "tflops": 1.5, "max_tokens": 4096}
    agreement = {"rel_error_median": 1e-3, "rel_error_max": 2e-3, "top10_overlap": 0.99, "top1_agreement": 1.0}
    results = {
        "naive": {"tokens_per_s": 250.0, "tflops": 0.4},
        "harness": {**entry, "path": "packed"},
        "speedup": 4.0,
        "agreement": agreement,
        "variants": [],
    }
    facts = {"device_name": "Test Card", "torch": "x"}
    write_result("encode", "tiny", facts, {"arch": "tiny"}, results, tmp_path / "a.json")
    assert "FP8" not in performance_page(tmp_path)
    fp8 = {
        **entry,
        "tokens_per_s": 1700.0,
        "path": "packed",
        "speedup": 6.8,
        "speedup_vs_bf16": 1.7,
        "agreement": agreement,
        "agreement_vs_bf16": {
            "rel_error_median": 3.1e-2,
            "rel_error_max": 6e-2,
            "top10_overlap": 0.912,
            "top1_agreement": 0.9,
            "spearman_median": 0.9876,
            "spearman_min": 0.95,
        },
    }
    write_result("encode", "qwen2.5-coder-fp8", facts, {"backbone": "x"}, {**results, "fp8": fp8}, tmp_path / "b.json")
    page = performance_page(tmp_path)
    assert "## FP8 frozen base beside bf16" in page
    row = next(line for line in page.splitlines() if line.startswith("| encode ") and "qwen2.5-coder" in line)
    assert "| real " in row and "1,000.0" in row and "1,700.0" in row and "1.70" in row
    assert "3.1e-02 / 6.0e-02" in row and "top-10 0.912; ρ 0.9876 / 0.9500" in row
    bf16_rows = [line for line in page.splitlines() if line.startswith("| qwen2.5-coder")]
    assert bf16_rows and all(line.startswith("| qwen2.5-coder ") for line in bf16_rows)  # the bf16 paths: no "-fp8"


def test_bench_train_adds_an_fp8_path_compared_with_the_bf16_harness(tmp_path, monkeypatch):
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.performance import performance_page
    from aa_harness_bench.results import write_result
    from aa_harness_bench.train import bench_train_reranker, bench_train_retriever
    from harness.neural.fast import fp8_linear

    monkeypatch.setattr(fp8_linear, "fp8_unsupported", lambda device: None)  # the CPU runs the reference

    def build(arch):
        return lambda: build_model(arch, CPU, torch.float32, seed=0)

    quiet = dict(steps=1, warmup=1, log=lambda *_: None, fp8=True)
    r = bench_train_retriever(build("tiny-qwen3"), _rows(16, 5, 20, seed=9), CPU, authors=4, **quiet)
    f = r["fp8"]
    assert f["fp8"] == "e4m3 frozen base" and f["documents_per_s"] > 0 and f["speedup_vs_bf16"] > 0
    # against the bf16 harness's first step: a measurement of FP8's rounding (here against fp32), no bound
    check = f["first_step_vs_bf16"]
    assert check["loss_rel_error"] > 0 and check["gradients"]["tensors"] == r["first_step"]["gradients"]["tensors"]
    assert set(r["projection"]) == {"naive", "harness", "fp8"}
    groups = [(_rows(1, 8, 8, seed=10 + i)[0], _rows(5, 8, 8, seed=20 + i)) for i in range(2)]
    rr = bench_train_reranker(build("tiny-qwen3"), groups, CPU, **quiet)
    assert rr["fp8"]["first_step_vs_bf16"]["gradients"]["tensors"] == rr["first_step"]["gradients"]["tensors"]
    facts = {"device_name": "Test Card"}
    write_result("train-retriever", "tiny-qwen3-fp8", facts, {"arch": "tiny-qwen3"}, r, tmp_path / "a.json")
    page = performance_page(tmp_path)
    row = next(line for line in page.splitlines() if "harness, FP8 base" in line)
    assert "vs bf16 harness: loss" in row
