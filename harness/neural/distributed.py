"""Data parallelism under torchrun: set-up, a differentiable gather with uneven shards, broadcast."""

from __future__ import annotations

import atexit
import os

import torch
import torch.distributed as dist


def world() -> tuple[int, int, int]:
    """(rank, world size, local rank), initialising the process group under torchrun."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size > 1 and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        dist.init_process_group(backend)
        atexit.register(_leave)
    if size > 1:
        return dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0))
    return 0, 1, 0


def _leave() -> None:
    """Take the process group down before the interpreter does: a rank that exits with the group's
    threads still running can abort (SIGABRT, "terminate called without an active exception")
    while the other ranks finish, failing a job whose work was done."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def world_size() -> int:
    """Processes in the current torchrun job (1 outside one)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def shard(items: list, rank: int, size: int) -> list:
    """Contiguous shards whose sizes differ by at most one."""
    per, extra = divmod(len(items), size)
    start = rank * per + min(rank, extra)
    return items[start : start + per + (rank < extra)]


def gather_rows(x: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Concatenate every rank's rows (rank order), keeping gradients for the local rows.

    The backward of the collective sums each rank's gradient for a shard, so with the same
    loss computed on every rank and DDP's gradient averaging, the update equals the
    single-process update for the same global batch.
    """
    import torch.distributed.nn.functional as dfn

    width = max(sizes)
    if x.shape[0] < width:
        x = torch.cat([x, x.new_zeros((width - x.shape[0], *x.shape[1:]))])
    parts = dfn.all_gather(x)
    return torch.cat([p[:n] for p, n in zip(parts, sizes)])


def broadcast(obj, src: int = 0):
    if not dist.is_initialized():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def is_main() -> bool:
    return not dist.is_initialized() or dist.get_rank() == 0


def sync_grads(wrapped, sync: bool):
    """A context for one backward: DDP reduces gradients only when `sync` (the last backward
    before an optimizer step); otherwise they accumulate locally. A no-op outside DDP."""
    import contextlib

    if sync or not hasattr(wrapped, "no_sync"):
        return contextlib.nullcontext()
    return wrapped.no_sync()
