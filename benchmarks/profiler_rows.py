"""The rows of a torch.profiler run that the profiles report: the device's own work (its kernels,
or on a CPU the ops' own time) and the host's ops by their own CPU time, without the ranges a
program marks (the profiler's step, the optimizer's step), whose device rows span their kernels
and would count them twice."""

from __future__ import annotations


def _marked(e) -> bool:
    return bool(getattr(e, "is_user_annotation", False)) or e.key.startswith("ProfilerStep")


def device_rows(events, cuda: bool) -> list:
    """The device's own work: CUDA kernel rows, or on a CPU every op's own time; busiest first."""
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    rows = [e for e in events if (e.device_type.name == "CUDA") == cuda and not _marked(e) and getattr(e, attr) > 0]
    return sorted(rows, key=lambda e: -getattr(e, attr))


def busy_seconds(events, cuda: bool) -> float:
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    return sum(getattr(e, attr) for e in device_rows(events, cuda)) / 1e6


def host_rows(events) -> list:
    """The host's ops by their own CPU time, busiest first (on a GPU run)."""
    rows = [e for e in events if e.device_type.name != "CUDA" and not _marked(e) and e.self_cpu_time_total > 0]
    return sorted(rows, key=lambda e: -e.self_cpu_time_total)


# Kernel families by name, first match wins: cuBLAS's Hopper kernels are `nvjet_*`, flash and the
# varlen kernels name their attention, compiled elementwise work is `triton_*` (whose names list the
# ops fused, `cat` and `copy` among them, so it is matched before the copies).
KERNEL_CLASSES = (
    ("attention", ("flash", "fmha", "attention", "attn")),
    ("matrix products", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "wgmma", "scaled_mm", "::mm", "addmm", "bmm")),
    ("optimizer", ("adam", "foreach", "multi_tensor")),
    ("elementwise and norms", ("triton", "elementwise", "norm", "silu", "rotary", "unrolled")),
    ("copies and gathers", ("memcpy", "memset", "copy", "gather", "scatter", "index", "cat")),
)


def kernel_class(name: str) -> str:
    low = name.lower()
    return next((c for c, keys in KERNEL_CLASSES if any(k in low for k in keys)), "other")


def seconds_by_class(events, cuda: bool) -> dict[str, float]:
    """The device's busy seconds per kernel family, every class named (0 where none ran)."""
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    out = {c: 0.0 for c, _ in KERNEL_CLASSES} | {"other": 0.0}
    for e in device_rows(events, cuda):
        out[kernel_class(e.key)] += getattr(e, attr) / 1e6
    return {c: round(s, 5) for c, s in out.items()}


LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")


def launches(events) -> int:
    """Kernel launches the host made (a graph's replay counts once)."""
    return sum(e.count for e in events if e.key in LAUNCHES)


def profile_figures(events, wall: float, cuda: bool, top: int = 20) -> dict:
    """A profiled window's figures: wall seconds, the device's busy seconds and share, launches, busy
    seconds per kernel family, and the top kernels."""
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    busy = busy_seconds(events, cuda)
    return {
        "wall_seconds": round(wall, 4),
        "device_busy_seconds": round(busy, 4),
        "device_busy_share": round(busy / wall, 3) if cuda and wall > 0 else None,
        "launches": launches(events),
        "seconds_by_class": seconds_by_class(events, cuda),
        "kernels": [
            {
                "name": e.key[:90],
                "class": kernel_class(e.key),
                "seconds": round(getattr(e, attr) / 1e6, 5),
                "calls": e.count,
            }
            for e in device_rows(events, cuda)[:top]
        ],
    }
