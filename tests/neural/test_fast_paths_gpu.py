"""The fast paths at real shapes on a GPU (marked gpu: `pytest -m gpu`; skipped without CUDA).

fp32: the harness paths and the plain Hugging Face forward agree to ~1e-5 relative. bf16:
two correct paths differ by rounding that deep random-weight models amplify (different
kernels, batch shapes and reduction orders), so they are held to agreeing rankings and a
per-vector relative error under 5e-2, the size a 40-layer random 12B showed between two
correct paths; the measured errors are printed.
"""

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _setup(arch, dtype, n, lo, hi, seed=0):
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.workload import random_rows

    model = build_model(arch, torch.device("cuda"), dtype, seed=seed)
    return model, random_rows(n, lo, hi, model.config.vocab_size, seed)


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)])
def test_encoding_matches_hf_forward_at_qwen3_06b_shape(dtype, tolerance):
    from aa_harness_bench.encode import bench_encode

    model, rows = _setup("qwen3-0.6b", dtype, 256, 150, 512)
    figures = bench_encode(
        model,
        rows,
        torch.device("cuda"),
        warmup_rows=8,
        variants=[(65536, "aa_causal"), (65536, "padded")],
        log=lambda *_: None,
    )
    assert figures["harness"]["path"] == "packed"
    for agreement in (figures["agreement"], *[v["agreement"] for v in figures["variants"]]):
        print(dtype, agreement)
        assert agreement["rel_error_median"] < tolerance
        assert agreement["top10_overlap"] >= (0.999 if dtype == torch.float32 else 0.9)


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, 1e-4), (torch.bfloat16, 5e-2)])
def test_prefix_reuse_matches_concatenation_at_qwen3_06b_shape(dtype, tolerance):
    from aa_harness_bench.rerank import bench_rerank
    from aa_harness_bench.workload import random_rows

    model, queries = _setup("qwen3-0.6b", dtype, 2, 300, 512)
    cands = [random_rows(40, 150, 512, model.config.vocab_size, 10 + i) for i in range(2)]
    figures = bench_rerank(model, queries, cands, torch.device("cuda"), log=lambda *_: None)
    assert figures["harness"]["path"] == "packed"
    for agreement in (figures["agreement"], figures["variants"][0]["agreement"]):
        print(dtype, agreement)
        assert agreement["max_abs_diff_over_score_sd"] < tolerance * 10
        assert agreement["spearman_min"] > (0.9999 if dtype == torch.float32 else 0.9)
