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
