"""Published bf16 rates of the accelerators the benchmarks ran on, each under the name of what it is.

- the dense peak: the datasheet's dense (no 2:4 sparsity) bf16 tensor-core rate, ~989 TFLOP/s for an
  H100 or H200 SXM; a "share of peak" divides by this;
- the achievable reference: ~790 TFLOP/s, about what large bf16 matmuls sustain on these cards in
  practice (80% of the dense peak); a step near it is as fast as dense matmuls get.
"""

from __future__ import annotations

DENSE_BF16_PEAK_TFLOPS = 989.0
ACHIEVABLE_BF16_TFLOPS = 790.0
CARDS = ("H100", "H200")  # the SXM cards these two figures describe


def _known(device_name: str) -> bool:
    return any(card in str(device_name) for card in CARDS)


def dense_bf16_peak_tflops(device_name: str) -> float | None:
    """The card's dense bf16 peak (None for a card this table does not know, or a CPU)."""
    return DENSE_BF16_PEAK_TFLOPS if _known(device_name) else None


def achievable_bf16_tflops(device_name: str) -> float | None:
    """The achievable bf16 reference of the card (None for a card this table does not know, or a CPU)."""
    return ACHIEVABLE_BF16_TFLOPS if _known(device_name) else None


def share_of_dense_peak(tflops: float, device_name: str) -> float | None:
    peak = dense_bf16_peak_tflops(device_name)
    return tflops / peak if peak else None
