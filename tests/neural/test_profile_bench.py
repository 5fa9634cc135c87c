"""benchmarks/profile_bench.py on a CPU with a tiny architecture: each workload's record holds its
unprofiled rate and a window whose families add up to the device's busy seconds; kernels are sorted
into families by name, Hopper's cuBLAS and compiled elementwise kernels included."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "name, family",
    [
        ("nvjet_sm90_tst_256x160_64x4_1x2_h_bz_coopA_TNT", "matrix products"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matrix products"),
        ("aten::addmm", "matrix products"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4", "attention"),
        ("triton_poi_fused_add_cat_mul_neg_slice_split_with_sizes_unsqueeze_view_1", "elementwise and norms"),
        ("triton_per_fused__fused_rms_norm__to_copy_mul_0", "elementwise and norms"),
        ("Memcpy DtoD (Device -> Device)", "copies and gathers"),
        ("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*", "copies and gathers"),
        ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor", "optimizer"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float", "other"),
    ],
)
def test_kernels_fall_into_their_family_by_name(name, family):
    from benchmarks.profiler_rows import kernel_class

    assert kernel_class(name) == family


@pytest.mark.slow
@pytest.mark.parametrize("workload, extra", [("train", ["--authors", "2"]), ("encode", ["--docs", "8"])])
def test_a_workload_profile_is_written_with_families_that_sum_to_the_busy_time(workload, extra, tmp_path, capsys):
    from benchmarks.profile_bench import main

    out = tmp_path / "profile.json"
    assert main([workload, "--arch", "tiny-qwen3", *extra, "--top", "5", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["benchmark"] == "bench-profile" and record["name"] == f"{workload}-tiny-qwen3"
    unprofiled, window = record["results"]["unprofiled"], record["results"]["window"]
    assert unprofiled["tokens_per_s"] > 0 and unprofiled["tflops"] >= 0
    families = window["seconds_by_class"]
    assert set(families) == {
        "attention",
        "matrix products",
        "optimizer",
        "elementwise and norms",
        "copies and gathers",
        "other",
    }
    # each family is rounded to 1e-5 s: six of them sum to the busy seconds within that rounding
    assert sum(families.values()) == pytest.approx(window["device_busy_seconds"], abs=6e-5 + 1e-4)
    assert 0 < len(window["kernels"]) <= 5
    assert window["kernels"] == sorted(window["kernels"], key=lambda k: -k["seconds"])
    if workload == "train":
        assert families["optimizer"] >= 0 and record["args"]["checkpointing"] is False  # auto: off below 2B
    assert f"wrote {out}" in capsys.readouterr().out


def test_the_performance_page_gives_each_family_its_share_of_the_busy_time():
    from aa_harness_bench.performance import bench_profile_table

    families = {
        "matrix products": 0.6,
        "attention": 0.2,
        "elementwise and norms": 0.1,
        "copies and gathers": 0.05,
        "optimizer": 0.05,
        "other": 0.0,
    }
    record = {
        "name": "train-qwen3-8b",
        "device_name": "NVIDIA H200",
        "git_commit": "0123456789",
        "args": {"authors": 16, "checkpointing": True, "compiled": True},
        "results": {
            "unprofiled": {"tokens_per_s": 10479.2, "tflops": 441.4, "share_of_peak": 0.446},
            "window": {
                "device_busy_seconds": 1.0,
                "device_busy_share": 0.95,
                "launches": 1234,
                "seconds_by_class": families,
            },
        },
    }
    row = next(line for line in bench_profile_table([record]).splitlines() if "train-qwen3-8b" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:6] == ["train-qwen3-8b", "16 authors × 2 docs, ckpt, compiled", "10,479", "441 (45%)", "95%", "1,234"]
    assert cells[6:12] == ["60%", "20%", "10%", "5%", "5%", "0%"]
