"""CUDA graphs for the fused training forward and backward: one graph per padded pack shape.

At the small backbones (0.5B-1.5B) the fused steps are bound by the host: a layer is a few dozen
kernels of tens of microseconds, and launching them takes longer than running them (the
reranker's real training step at 0.5B ran 0.30 s of kernels in a 0.71 s step). A CUDA graph
launches a whole forward, or a whole backward, at once. A graph is fixed in its shapes, so a pack
is padded up to a grain of tokens (`pad_pack`): the padding is appended as short sequences of
their own, which attention keeps apart from the real ones (a pad query reads only pad keys, or
none but zero gradients flow from it), and the callers read only the real tokens, which come
first in the pack; so the real rows' outputs and gradients are the unpadded pack's up to kernel
choice (the products' shapes change). One graph serves every pack of the same padded shape.

Both fused steps run here: the retriever's pack of documents (each sequence's keys its own
tokens) and the reranker's shared-prefix pack (each candidate's keys gathered from its prefix and
itself, the gather index padded to a grain too).

Graphs run where the step allows: CUDA, no checkpointing (recomputation reads the RNG state,
which a capture forbids), training mode with autograd on; elsewhere the eager forward runs.
The gradients of the LoRA tensors come out of a static buffer, so they are accumulated into
`.grad` tensors kept here (one flat buffer, zeroed once a step): never an alias of the graph's
memory, which the next replay overwrites.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from harness.neural.fast.fused_decoder import Attend, Packed, to_device

GRAIN = 1024  # tokens: a pack pads up to a multiple of it (at most a grain of padding, ~10% at 16 authors)
LONGEST_GRAIN = 128  # the longest sequence, rounded up: the attention kernel's block of queries
MAX_GRAPHS = 24  # pack shapes kept; beyond, new shapes run eagerly (each graph holds its buffers)
# Each graph keeps its own activations for its backward, so the graphs' memory is the sum over the
# shapes met, not the largest (the 1.5B retriever without checkpointing reached 111.6 GiB on an
# H200, a figure that also holds what a plain training before it in the process left cached). New
# shapes are captured only while the allocator holds less than this share of the card; later ones
# run eagerly, in what is left.
GRAPH_MEMORY_SHARE = 0.5

_log = logging.getLogger(__name__)


def capture_refused(shapes: int, reserved: int, total: int) -> str | None:
    """Why a new pack shape may not be captured (None: it may): `shapes` graphs held already, the
    allocator holding `reserved` of the card's `total` bytes."""
    if shapes >= MAX_GRAPHS:
        return f"{MAX_GRAPHS} pack shapes graphed already"
    if reserved >= GRAPH_MEMORY_SHARE * total:
        return (
            f"the graphs' memory reached {reserved / 2**30:.1f} GiB of the card's {total / 2**30:.1f} "
            f"(the share graphs may fill is {GRAPH_MEMORY_SHARE:.0%})"
        )
    return None


def _round(n: int, grain: int) -> int:
    return grain * math.ceil(n / grain)


@dataclass(frozen=True)
class HostPack:
    """A pack laid out on the host as the fused decoder reads it: ids and positions [T]; the
    cu_seqlens of the queries and of the keys [S + 1]; the index gathering each sequence's keys
    from the layer's [cu_k[-1]], or None where every sequence's keys are its own tokens; the
    longest query and key sequence (the attention kernel's bounds)."""

    ids: np.ndarray
    positions: np.ndarray
    cu_q: np.ndarray
    cu_k: np.ndarray
    gather: np.ndarray | None
    max_q: int
    max_k: int

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence[int]]) -> HostPack:
        lengths = [len(r) for r in rows]
        if not lengths or min(lengths) < 1:
            raise ValueError("a pack needs rows of at least one token")
        cu = np.zeros(len(rows) + 1, dtype=np.int32)
        np.cumsum(lengths, out=cu[1:])
        ids = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(cu[-1]))
        positions = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths])
        return cls(ids, positions, cu, cu, None, max(lengths), max(lengths))

    @property
    def key(self) -> tuple:
        """What fixes a graph: every tensor's shape and the kernel's bounds."""
        return (
            len(self.ids),
            len(self.cu_q),
            None if self.gather is None else len(self.gather),
            self.max_q,
            self.max_k,
        )

    def tensors(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        """ids, positions, cu_q, cu_k (and the gather index where there is one) on the device."""
        out = [to_device(a, device) for a in (self.ids, self.positions, self.cu_q, self.cu_k)]
        if self.gather is not None:
            out.append(to_device(self.gather, device))
        return tuple(out)


def pad_pack(pack: HostPack, grain: int = GRAIN) -> HostPack:
    """The pack padded for its graph. Its tokens pad up to a multiple of `grain` with a fixed number
    of pad sequences (fixed by the longest query, so the cu_seqlens shape is the graph's), each of
    at least one token (no empty sequence reaches the kernel) and at most the longest query
    rounded up (the kernel's bound), keys their own tokens. Where keys are gathered, one more pad
    sequence of one token takes the keys that pad the gather index to a multiple of `grain` too
    (its own key, repeated), so the kernel's key bound is at least the grain."""
    longest = _round(pack.max_q, LONGEST_GRAIN)
    pieces = math.ceil(grain / longest) + 1
    gathered = pack.gather is not None
    real = len(pack.ids)
    tokens = _round(real + pieces + gathered, grain)
    pad = tokens - real - gathered  # in [pieces, grain + pieces): each piece <= ceil(pad / pieces) <= longest
    base, extra = divmod(pad, pieces)
    lengths = [base + (i < extra) for i in range(pieces)]
    ids = [pack.ids, np.zeros(tokens - real, dtype=np.int64)]
    positions = [pack.positions, *(np.arange(n, dtype=np.int64) for n in lengths)]
    q, k = [int(pack.cu_q[-1])], [int(pack.cu_k[-1])]
    gather: list[np.ndarray] = [pack.gather] if pack.gather is not None else []
    at = real
    for n in lengths:
        q.append(q[-1] + n)
        k.append(k[-1] + n)
        if gathered:
            gather.append(np.arange(at, at + n, dtype=np.int64))
        at += n
    max_k = _round(pack.max_k, LONGEST_GRAIN) if not gathered else max(_round(pack.max_k, LONGEST_GRAIN), grain)
    if gathered:
        keys = _round(k[-1] + 1, grain) - k[-1]  # 1..grain: the last piece's own key and the padding keys
        positions.append(np.zeros(1, dtype=np.int64))
        gather.append(np.full(keys, at, dtype=np.int64))
        q.append(q[-1] + 1)
        k.append(k[-1] + keys)
    return HostPack(
        np.concatenate(ids),
        np.concatenate(positions),
        np.concatenate([pack.cu_q, np.asarray(q[1:], dtype=np.int32)]),
        np.concatenate([pack.cu_k, np.asarray(k[1:], dtype=np.int32)]),
        np.concatenate(gather) if gathered else None,
        longest,
        max(max_k, longest),
    )


class _Forward(torch.nn.Module):
    """The decoder's forward over one pack shape, as a module whose parameters are the LoRA
    tensors the decoder trains (shared, not copied), so the captured backward yields their grads."""

    def __init__(self, decoder, params: list[torch.nn.Parameter], max_q: int, max_k: int):
        super().__init__()
        self.decoder, self.max_q, self.max_k = decoder, max_q, max_k
        self.lora = torch.nn.ParameterList(params)

    def forward(self, ids, positions, cu_q, cu_k, *gather) -> torch.Tensor:
        attend = Attend(cu_q, cu_k, self.max_q, self.max_k, gather[0] if gather else None)
        return self.decoder.forward(ids, positions, attend)


class TrainGraphs:
    """The graphed training forward of a LoraFusedDecoder: `run(pack)` -> final hidden states of
    the padded pack [padded tokens, hidden], differentiable to the LoRA tensors, the pack's own
    tokens first and in order; `hidden(rows)` for a pack of rows."""

    def __init__(self, decoder, device: torch.device, grain: int = GRAIN):
        self.decoder, self.device, self.grain = decoder, device, grain
        self.params = [p for p in decoder.model.parameters() if p.requires_grad]
        self.graphs: dict[tuple, torch.nn.Module] = {}
        self.pool = None  # one memory pool for all the shapes: only one runs at a time
        self.grads: torch.Tensor | None = None
        self.full_said = False
        self.calls = 0
        self.captured_at: list[int] = []  # the calls (1-based) that captured a new shape

    @staticmethod
    def usable(decoder, device: torch.device) -> bool:
        """Whether a step of this decoder can run graphed now."""
        return device.type == "cuda" and not decoder.checkpoint and decoder.training and torch.is_grad_enabled()

    def hidden(self, rows: Sequence[Sequence[int]]) -> tuple[Packed, torch.Tensor]:
        """(the padded pack of these rows, its final hidden states): the rows first, then the pad."""
        padded = pad_pack(HostPack.of_rows(rows), self.grain)
        hidden, tensors = self._run(padded)
        lengths = np.diff(padded.cu_q).tolist()
        return Packed(tensors[0], tensors[1], tensors[2], lengths, padded.max_q), hidden

    def run(self, pack: HostPack) -> torch.Tensor:
        return self._run(pad_pack(pack, self.grain))[0]

    def _run(self, padded: HostPack) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        tensors = padded.tensors(self.device)
        key = (*padded.key, torch.is_autocast_enabled("cuda"))
        forward = self.graphs.get(key)
        self.calls += 1
        refused = None if forward is not None else self._capture_refused()
        if forward is None and refused is None:
            forward = self.graphs[key] = self._capture(tensors, padded)
            self.captured_at.append(self.calls)
        elif forward is None:
            if not self.full_said:
                _log.info(f"{refused}: new pack shapes run eagerly")
                self.full_said = True
            forward = _Forward(self.decoder, self.params, padded.max_q, padded.max_k)
        self._own_grads()
        return forward(*tensors), tensors

    def _capture_refused(self) -> str | None:
        if self.device.type != "cuda":  # the CPU tests' stand-in captures: no card to fill
            return capture_refused(len(self.graphs), 0, 1)
        total = torch.cuda.get_device_properties(self.device).total_memory
        return capture_refused(len(self.graphs), torch.cuda.memory_reserved(self.device), total)

    def _capture(self, tensors: tuple[torch.Tensor, ...], padded: HostPack) -> torch.nn.Module:
        """Warm up and capture the forward and backward of this pack shape (under the caller's
        autocast, without its weight-cast cache, which a capture cannot hold)."""
        module = _Forward(self.decoder, self.params, padded.max_q, padded.max_k)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        args = tuple(t.clone() for t in tensors)
        if torch.is_autocast_enabled("cuda"):
            dtype = torch.get_autocast_dtype("cuda")
            with torch.autocast("cuda", dtype=dtype, cache_enabled=False):
                return torch.cuda.make_graphed_callables(module, args, allow_unused_input=True, pool=self.pool)
        return torch.cuda.make_graphed_callables(module, args, allow_unused_input=True, pool=self.pool)

    def _own_grads(self) -> None:
        """Give the LoRA tensors without a gradient a zeroed one of their own: the replayed backward
        then adds into it in place (a first gradient would otherwise be taken as is, an alias of
        the graph's static memory that the next replay overwrites). After a step's zero_grad, all
        of them: views into one flat buffer, zeroed in one kernel."""
        missing = [p for p in self.params if p.grad is None]
        if not missing:
            return
        dtypes = {p.dtype for p in self.params}
        if len(missing) < len(self.params) or len(dtypes) > 1:
            for p in missing:
                p.grad = torch.zeros_like(p)
            return
        if self.grads is None:
            self.grads = torch.empty(sum(p.numel() for p in self.params), dtype=dtypes.pop(), device=self.device)
        self.grads.zero_()
        at = 0
        for p in self.params:
            p.grad = self.grads[at : at + p.numel()].view_as(p)
            at += p.numel()
