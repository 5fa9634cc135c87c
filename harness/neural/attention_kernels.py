"""Which of PyTorch's attention kernels a training forward may run.

The Hugging Face forward of a padded batch calls `scaled_dot_product_attention` with an explicit
mask. On H100 and H200 with PyTorch 2.11, the default pick for that is cuDNN, whose backward
returns NaN in the query gradient when the padded length is 64 modulo 128 and a row's
log-sum-exp is below ln(FLT_MAX) = -88.7 (pytorch/pytorch#196678): Qwen2.5's massive-activation
heads make such rows. The forward is right, so scoring and encoding keep every kernel; training
leaves cuDNN out, and PyTorch picks among flash, memory-efficient and math as usual.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def training_attention() -> Iterator[None]:
    """Scaled-dot-product attention without the cuDNN kernel inside the block. The kernel is
    chosen in the forward, and the backward runs the chosen kernel's own backward, so the
    forward alone needs the block."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield
