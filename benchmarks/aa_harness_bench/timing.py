"""Wall time of device work: synchronise before and after, so queued kernels are counted."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

import torch

T = TypeVar("T")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device: torch.device) -> tuple[T, float]:
    """(result, seconds) of one call, device work included."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return result, time.perf_counter() - start


def device_facts(device: torch.device) -> dict:
    import platform

    facts = {"device": str(device), "torch": torch.__version__}
    try:
        import transformers

        facts["transformers"] = transformers.__version__
    except ImportError:
        pass
    if device.type == "cuda":
        facts["device_name"] = torch.cuda.get_device_name(device)
        facts["cuda"] = torch.version.cuda
    else:
        from harness.foundation.provenance import device_name

        facts["device_name"] = device_name()
    facts["python"] = platform.python_version()
    return facts
