"""Device and precision choices: bf16 autocast on CUDA, fp32 on CPU."""

from __future__ import annotations

import contextlib
import os

import torch


def pick_device(preference: str = "auto") -> torch.device:
    if preference != "auto":
        return torch.device(preference)
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return torch.device("cpu")


def cpu_backend() -> str:
    """The backend for work on the CPU: "faiss" when it is installed (its CPU kernels), else "torch"."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return "torch"
    return "faiss"


def autocast(device: torch.device, enabled: bool = True):
    """bf16 autocast on CUDA; a no-op on CPU (fp32 there)."""
    if device.type == "cuda" and enabled:
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def device_label(device: torch.device) -> str:
    if device.type == "cuda":
        n = torch.cuda.device_count()
        return f"cuda: {torch.cuda.get_device_name(device)}" + (f" (x{n} visible)" if n > 1 else "")
    from harness.foundation.provenance import device_name

    return device_name()
