"""The accelerator rates under their own names: the dense bf16 peak a share divides by, and the
achievable reference beside it; the performance page states shares of the dense peak."""

from __future__ import annotations

from harness.foundation.hardware import (
    ACHIEVABLE_BF16_TFLOPS,
    DENSE_BF16_PEAK_TFLOPS,
    achievable_bf16_tflops,
    dense_bf16_peak_tflops,
    share_of_dense_peak,
)


def test_the_dense_peak_is_the_datasheet_figure_and_the_achievable_one_is_separate():
    assert DENSE_BF16_PEAK_TFLOPS == 989.0 and ACHIEVABLE_BF16_TFLOPS == 790.0
    for card in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert dense_bf16_peak_tflops(card) == 989.0 and achievable_bf16_tflops(card) == 790.0
    assert dense_bf16_peak_tflops("cpu: AMD EPYC (2 cores)") is None
    assert share_of_dense_peak(494.5, "NVIDIA H100 80GB HBM3") == 0.5
    assert share_of_dense_peak(100.0, "NVIDIA A100") is None


def test_the_training_table_divides_the_measured_rate_by_the_dense_peak():
    """A record that stored a share of the achievable rate (0.527) is shown as a share of 989 (42%)."""
    from aa_harness_bench.performance import train_table

    path = {
        "batch": "packed",
        "checkpointing": True,
        "compiled": True,
        "tokens_per_s": 9882.0,
        "documents_per_s": 28.86,
        "tflops": 416.0,
        "share_of_peak": 0.527,
        "peak_memory_gib": 21.1,
    }
    naive = {**path, "batch": "padded", "compiled": False, "tflops": 168.0, "share_of_peak": 0.213}
    record = {
        "benchmark": "train-retriever",
        "device_name": "NVIDIA H100 80GB HBM3",
        "args": {"arch": "qwen3-8b"},
        "results": {
            "naive": naive,
            "harness": path,
            "speedup": 2.48,
            "projection": {},
            "first_step": {"skipped": True},
        },
    }
    table = train_table([record])
    assert "share of 989 dense peak" in table and "416 (42%)" in table and "168 (17%)" in table
    assert "53%" not in table and "790 TFLOP/s" in table  # the achievable reference is named beside it
