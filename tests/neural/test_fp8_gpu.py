"""FP8 products on the GPU (marked gpu: `pytest -m gpu`; skipped without CUDA or below compute
capability 8.9, where `torch._scaled_mm` has no FP8 kernels). The measured errors are printed.

The CUDA product is the fp32 reference rounded to bf16: the epilogue rounds to nearest (2^-9
relative an element), and the tensor cores' accumulation, promoted to fp32 at intervals, adds
errors of random sign far below that over the whole output; so the output's relative Frobenius
error is held to 2^-8, and no element may differ by more than its own rounding plus 2^-7 of
sum |x̂| |ŵ| (the accumulation's worst case at Hopper's ~14-bit FP8 accumulator over a promotion
interval of 128 products). The input gradient rounds dy * sw to bf16 and its output to bf16 (2^-9
each), with cuBLAS free to reduce in bf16: 2^-7 Frobenius. Two correct FP8 paths over a deep
random model (compiled or not) are held to agree with each other at least as well as FP8 agrees
with bf16."""

import pytest

torch = pytest.importorskip("torch")


def _fp8_gpu() -> bool:
    if not torch.cuda.is_available():
        return False
    from harness.neural.fast.fp8_linear import fp8_unsupported

    return fp8_unsupported("cuda") is None


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _fp8_gpu(), reason="needs CUDA at compute capability 8.9 or newer"),
]
CUDA = torch.device("cuda")


@pytest.fixture(autouse=True)
def fp32_reference(monkeypatch):
    """The fp32 reference in fp32, not TF32 (10 mantissa bits would swamp the bounds)."""
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)


def _frobenius(a, b) -> float:
    return float(torch.linalg.norm(a.float() - b.float()) / torch.linalg.norm(b.float()))


def test_cuda_product_is_the_reference_rounded_to_bf16():
    from harness.neural.fast.fp8_linear import (
        dequantize_rows,
        fp8_linear,
        quantize_rows,
        quantize_weight,
        reference_linear,
    )

    g = torch.Generator(device=CUDA).manual_seed(0)
    x = torch.randn(257, 1024, device=CUDA, generator=g).bfloat16()  # rows need not be a multiple of 16
    fp8 = quantize_weight(torch.randn(3072, 1024, device=CUDA, generator=g).bfloat16() * 0.02)
    bias = torch.randn(3072, device=CUDA, generator=g).bfloat16()
    y = fp8_linear(x, fp8, bias)
    ref = reference_linear(x, fp8, bias)
    assert y.dtype == torch.bfloat16 and y.shape == (257, 3072)
    spread = dequantize_rows(*quantize_rows(x)).abs() @ fp8.dequantize().abs().t() + bias.float().abs()
    worst = float(((y.float() - ref).abs() - 2.0**-9 * ref.abs()).div(spread).max())
    print(
        f"FP8 product: Frobenius {_frobenius(y, ref):.2e}; worst element beyond its rounding {worst:.2e} of sum|x||w|"
    )
    assert _frobenius(y, ref) <= 2.0**-8 and worst <= 2.0**-7


def test_cuda_input_gradient_goes_through_the_fp8_weight():
    from harness.neural.fast.fp8_linear import fp8_linear, quantize_weight

    g = torch.Generator(device=CUDA).manual_seed(1)
    x = torch.randn(300, 1024, device=CUDA, generator=g).bfloat16().requires_grad_(True)
    fp8 = quantize_weight(torch.randn(2048, 1024, device=CUDA, generator=g).bfloat16() * 0.02)
    dy = torch.randn(300, 2048, device=CUDA, generator=g).bfloat16()
    fp8_linear(x, fp8).backward(dy)
    want = dy.float() @ fp8.dequantize()
    print(f"FP8 input gradient: Frobenius {_frobenius(x.grad, want):.2e}")
    assert x.grad.dtype == torch.bfloat16 and _frobenius(x.grad, want) <= 2.0**-7


def test_compiled_fp8_encoding_agrees_with_uncompiled_at_qwen3_06b_shape():
    """The FusedDecoder compiles its layers on CUDA, `_scaled_mm` and the input quantizer inside:
    compiled and eager FP8 encodings are two correct paths. They quantize the same weights; they
    differ where bf16 rounding of an activation (2^-8 relative) moves it across an e4m3 rounding
    boundary (2^-3 apart): about one element in 2^5, by one e4m3 step, which is smaller than what
    e4m3 itself does to every element against bf16 (up to half a step each). So the two FP8 paths
    are held to agree with each other at least as well as FP8 agrees with bf16 on the same rows
    (median per-vector relative error and top-10 neighbours), whatever a deep random model
    amplifies both to."""
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.encode import agreement
    from aa_harness_bench.workload import random_rows
    from harness.neural.encoder import TokenEncoder, embed_features
    from harness.neural.fast.fp8_linear import quantize_frozen_base
    from harness.neural.fast.fused_decoder import FusedDecoder
    from harness.neural.fast.fused_paths import embed_fused

    model = build_model("qwen3-0.6b", CUDA, torch.bfloat16, seed=0).requires_grad_(False)
    rows = random_rows(256, 150, 512, model.config.vocab_size, 0)

    def encode(compile: bool):
        enc = TokenEncoder(model, None, max_length=1 << 20, pad_id=0).eval()
        decoder = FusedDecoder(model, compile=compile)
        enc.fast_embed = lambda f, d, max_tokens, decoder=decoder: embed_fused(decoder, f, d, max_tokens=max_tokens)
        return embed_features(enc, rows, CUDA, amp=False)

    bf16 = encode(False)
    quantize_frozen_base(model)
    compiled, eager = encode(True), encode(False)
    paths, vs_bf16 = agreement(compiled, eager), agreement(eager, bf16)
    print("FP8 compiled vs eager:", paths, "; FP8 eager vs bf16:", vs_bf16)
    assert paths["rel_error_median"] <= vs_bf16["rel_error_median"]
    assert paths["top10_overlap"] >= vs_bf16["top10_overlap"]


def test_fp8_encoding_beside_bf16_is_measured_at_qwen3_06b_shape():
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.encode import bench_encode
    from aa_harness_bench.workload import random_rows

    model = build_model("qwen3-0.6b", CUDA, torch.bfloat16, seed=0)
    rows = random_rows(512, 150, 512, model.config.vocab_size, 0)
    figures = bench_encode(model, rows, CUDA, warmup_rows=16, fp8=True, log=print)
    f = figures["fp8"]
    print("FP8 vs bf16:", f["speedup_vs_bf16"], f["agreement_vs_bf16"])
    assert f["tokens_per_s"] > 0 and -1 <= f["agreement_vs_bf16"]["spearman_median"] <= 1


def test_fp8_lora_step_agrees_with_peft_over_the_same_fp8_base_on_the_gpu():
    """Under bf16 autocast both paths round differently, and e4m3's rounding can turn that into a
    whole step on single elements: the loss is held to e4m3's half step, the LoRA gradient's
    direction to cosine 0.99."""
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import first_step_check, naive_retriever_loss, with_lora
    from aa_harness_bench.workload import random_rows
    from harness.neural.fast.fp8_linear import quantize_frozen_base
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    peft = with_lora(build_model("qwen3-0.6b", CUDA, torch.bfloat16, seed=0))
    quantize_frozen_base(peft)
    proj = torch.nn.Linear(1024, 512).to(CUDA)
    rows = random_rows(16, 150, 512, 151936, 1)
    a, b = rows[:8], rows[8:]
    dec = LoraFusedDecoder(peft, compile=False, checkpoint=True)
    check = first_step_check(
        peft,
        lambda: naive_retriever_loss(peft, lambda v: proj(v.float()), a, b, CUDA, tau=0.05),
        lambda: retriever_loss(dec, lambda v: proj(v.float()), a, b, CUDA, tau=0.05),
        extra=list(proj.parameters()),
    )
    print("FP8 LoRA step vs PEFT over the FP8 base:", check["loss_rel_error"], check["gradients"])
    assert check["loss_rel_error"] < 2.0**-4 and check["gradients"]["cosine"] > 0.99
