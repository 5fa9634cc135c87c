"""The FP8 product of the frozen base (harness.neural.fast.fp8_linear) is its definition: e4m3
rounding within half a step, the reference as the fp32 product of the dequantized operands, the
`_scaled_mm` call's layouts and scales (checked through torch's CPU kernel where it has one), and
the input gradient through the dequantized weight. CPU, fp32; every tolerance is derived from
the formats' precision (e4m3: 3 mantissa bits; fp32: unit roundoff 2^-24; bf16: 2^-9)."""

import pytest

torch = pytest.importorskip("torch")

U32 = 2.0**-24  # fp32 unit roundoff
E4M3_HALF_STEP = 2.0**-4  # 3 mantissa bits: a step of 2^-3 relative to the binade, half of it rounding to nearest
E4M3_SUBNORMAL_HALF_STEP = 2.0**-10  # below the smallest normal 2^-6 the step is 2^-9


def _matrix(rows, cols, seed):
    """Rows of very different magnitudes, a zero row and entries deep in e4m3's subnormal range."""
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(rows, cols, generator=g) * torch.logspace(-3, 3, rows)[:, None]
    m[1] = 0.0
    m[2, :8] *= 1e-6  # far below the row's max: subnormal (or zero) after scaling
    return m


def test_e4m3_round_trip_is_within_half_a_step_of_each_row_scale():
    """|dequantize(quantize(w)) - w| <= 2^-4 |w| (normal range) or 2^-10 x the row's scale (subnormal
    range), widened by the two fp32 roundings (w / s, then q * s); the row's largest entry maps to 448."""
    from harness.neural.fast.fp8_linear import E4M3_MAX, dequantize_rows, quantize_rows

    w = _matrix(64, 96, seed=0)
    q, s = quantize_rows(w)
    assert q.dtype == torch.float8_e4m3fn and s.shape == (64, 1) and s.dtype == torch.float32
    back = dequantize_rows(q, s)
    bound = (E4M3_HALF_STEP * w.abs() + E4M3_SUBNORMAL_HALF_STEP * s) * (1 + 4 * U32)
    assert torch.isfinite(back).all() and (back - w).abs().le(bound).all()
    assert torch.equal(back[1], torch.zeros(96))  # a zero row stays zero (its scale is floored, not 0)
    peak = w.abs().argmax(dim=1)
    rows = torch.arange(64)
    assert torch.equal(q.float().abs()[rows, peak][rows != 1], torch.full((63,), E4M3_MAX))
    # the bound is tight: the format really keeps 3 bits, not more
    normal = w.abs() > 2.0**-6 * s
    assert ((back - w).abs() / w.abs())[normal].max() > 2.0**-5


def test_weights_quantize_per_output_channel():
    from harness.neural.fast.fp8_linear import quantize_rows, quantize_weight

    w = _matrix(48, 64, seed=1)
    fp8 = quantize_weight(w)
    q, s = quantize_rows(w)
    assert fp8.data.shape == (48, 64) and fp8.scale.shape == (48,)
    assert torch.equal(fp8.data.float(), q.float()) and torch.equal(fp8.scale, s[:, 0])
    assert torch.equal(fp8.dequantize(), q.float() * s)


def test_reference_product_is_the_fp32_product_of_the_dequantized_operands():
    from harness.neural.fast.fp8_linear import dequantize_rows, quantize_rows, quantize_weight, reference_linear

    x, w, b = _matrix(7, 64, seed=2), _matrix(48, 64, seed=3), torch.randn(48)
    fp8 = quantize_weight(w)
    want = dequantize_rows(*quantize_rows(x)) @ (fp8.data.float() * fp8.scale[:, None]).t() + b
    assert torch.equal(reference_linear(x, fp8, b), want)


def _gamma_bound(x, fp8, extra_roundings=3):
    """|fl(x̂ ŵ^T) - x̂ ŵ^T| in any summation order <= (K + extra) u (|x̂| |ŵ|^T)."""
    from harness.neural.fast.fp8_linear import dequantize_rows, quantize_rows

    k = x.shape[1]
    return (k + extra_roundings) * U32 * (dequantize_rows(*quantize_rows(x)).abs() @ fp8.dequantize().abs().t())


def test_the_scaled_mm_call_computes_the_reference():
    """The CUDA path's `_scaled_mm` call (row-major e4m3 input, column-major e4m3 weight, rowwise
    scales [M, 1] and [1, N], the bias added) through torch's CPU kernel: fp32 out within fp32
    accumulation of the reference; bf16 out within that plus one bf16 step, 2^-8 (the CPU kernel's
    conversion to bf16 is not round-to-nearest: errors up to a whole step were seen; the GPU test
    holds CUDA's to half a step)."""
    from harness.neural.fast.fp8_linear import quantize_weight, reference_linear, scaled_mm_linear

    x, w = _matrix(33, 64, seed=4), _matrix(48, 64, seed=5)
    b = torch.randn(48).bfloat16().float()  # the model's bias is bf16: the call takes it as it is
    fp8 = quantize_weight(w)
    try:
        got32 = scaled_mm_linear(x, fp8, out_dtype=torch.float32)
    except (RuntimeError, NotImplementedError) as e:
        pytest.skip(f"this torch has no CPU _scaled_mm: {e}")
    acc = _gamma_bound(x, fp8)
    ref = reference_linear(x, fp8)
    assert (got32 - ref).abs().le(acc).all()
    got16 = scaled_mm_linear(x, fp8, b)
    ref_b = reference_linear(x, fp8, b)
    assert got16.dtype == torch.bfloat16
    assert (got16.float() - ref_b).abs().le(2.0**-8 * (ref_b.abs() + acc) + acc + U32 * b.abs()).all()
    assert torch.equal(got16[1].float(), b)  # row 1 of x is zero: its output is the bias, exactly


def test_input_gradient_goes_through_the_dequantized_weight_and_nothing_else_trains():
    """dx = dy ŵ (straight-through for the input's rounding), within fp32 accumulation; the forward
    equals the reference; the FP8 weight and scales get no gradient."""
    from harness.neural.fast.fp8_linear import fp8_linear, quantize_weight, reference_linear

    x = _matrix(9, 64, seed=6).requires_grad_(True)
    fp8 = quantize_weight(_matrix(32, 64, seed=7))
    b = torch.randn(32)
    y = fp8_linear(x.view(3, 3, 64), fp8, b)  # leading dimensions are kept
    assert y.shape == (3, 3, 32)
    assert torch.equal(y.detach().reshape(9, 32), reference_linear(x.detach(), fp8, b))
    dy = torch.randn(3, 3, 32)
    (y * dy).sum().backward()
    want = dy.reshape(9, 32) @ fp8.dequantize()
    bound = (32 + 2) * U32 * (dy.reshape(9, 32).abs() @ fp8.dequantize().abs())
    assert (x.grad - want).abs().le(bound).all()
    assert not fp8.data.requires_grad and not fp8.scale.requires_grad and fp8.scale.grad is None


def test_dimensions_that_are_not_multiples_of_16_are_one_line():
    from harness.errors import HarnessError
    from harness.neural.fast.fp8_linear import quantize_weight

    for shape in [(40, 64), (48, 72)]:
        with pytest.raises(HarnessError) as err:
            quantize_weight(torch.randn(*shape), "layer 0 o")
        text = str(err.value)
        assert "\n" not in text and "multiple of 16" in text and "layer 0 o" in text and "fp8=true" in text


def test_fp8_where_it_cannot_run_is_one_line(monkeypatch):
    from harness.errors import HarnessError
    from harness.neural.fast import fp8_linear

    with pytest.raises(HarnessError) as err:
        fp8_linear.require_fp8("cpu")
    assert "\n" not in str(err.value) and "fp8=true" in str(err.value) and "device is cpu" in str(err.value)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    why = fp8_linear.fp8_unsupported("cuda:0")
    assert why is not None and "8.9" in why and "A100" in why and "8.0" in why
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert fp8_linear.fp8_unsupported("cuda:0") is None
