"""CUDA graphs for the fused training forward and backward: one graph per pack shape.

At the small backbones (0.5B-1.5B) the fused step is bound by the host: a layer is a few dozen
kernels of tens of microseconds, and launching them takes longer than running them (the
Qwen3-0.6B step profiled at 0.13 s of kernels in 0.44 s of wall). A CUDA graph launches a whole
forward, or a whole backward, at once. A graph is fixed in its shapes, so a pack is padded up to
a grain of tokens (`pad_layout`): the padding is appended as short sequences of their own, which
attention keeps apart from the real ones, and pooling reads only the real rows, so the real rows'
outputs and gradients are the unpadded pack's up to kernel choice (the products' shapes change).
One graph serves every pack with the same number of rows, padded length and longest row.

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

import torch

from harness.neural.fast.fused_decoder import Packed

GRAIN = 1024  # tokens: a pack pads up to a multiple of it (at most a grain of padding, ~10% at 16 authors)
LONGEST_GRAIN = 128  # the longest row, rounded up: the attention kernel's block of queries
MAX_GRAPHS = 24  # pack shapes kept; beyond, new shapes run eagerly (each graph holds its buffers)

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PadLayout:
    """How a pack of rows is padded for its graph: the padded total, the longest row the attention
    kernel is sized for, and the lengths of the pad sequences appended (each 1..longest)."""

    tokens: int
    longest: int
    pads: tuple[int, ...]

    @property
    def key(self) -> tuple[int, int, int]:
        return self.tokens, self.longest, len(self.pads)


def pad_layout(lengths: Sequence[int], grain: int = GRAIN) -> PadLayout:
    """The padded layout of rows of these lengths. The pad is split into a fixed number of pieces
    (fixed by the longest row, so the cu_seqlens shape is the graph's), each at least one token
    (no empty sequence reaches the kernel) and at most the longest row (the kernel's bound)."""
    if not lengths or min(lengths) < 1:
        raise ValueError("a pack needs rows of at least one token")
    longest = LONGEST_GRAIN * math.ceil(max(lengths) / LONGEST_GRAIN)
    pieces = math.ceil(grain / longest) + 1
    real = sum(lengths)
    tokens = grain * math.ceil((real + pieces) / grain)
    pad = tokens - real  # in [pieces, grain + pieces): each piece <= ceil(pad / pieces) <= longest
    base, extra = divmod(pad, pieces)
    return PadLayout(tokens, longest, tuple(base + (i < extra) for i in range(pieces)))


def padded_rows(rows: Sequence[Sequence[int]], layout: PadLayout, pad_id: int = 0) -> list[Sequence[int]]:
    """The rows with the layout's pad sequences appended (token pad_id)."""
    return [*rows, *([pad_id] * n for n in layout.pads)]


class _Forward(torch.nn.Module):
    """The decoder's forward over one pack shape, as a module whose parameters are the LoRA
    tensors the decoder trains (shared, not copied), so the captured backward yields their grads."""

    def __init__(self, decoder, params: list[torch.nn.Parameter], longest: int):
        super().__init__()
        self.decoder, self.longest = decoder, longest
        self.lora = torch.nn.ParameterList(params)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, cu: torch.Tensor) -> torch.Tensor:
        from harness.neural.fast.lora_train import Attend

        return self.decoder.forward(ids, positions, Attend(cu, cu, self.longest, self.longest))


class TrainGraphs:
    """The graphed training forward of a LoraFusedDecoder: `hidden(rows)` -> (the padded Packed,
    final hidden states [padded tokens, hidden]), differentiable to the LoRA tensors; the rows
    come first in the pack, in order."""

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
        layout = pad_layout([len(r) for r in rows], self.grain)
        packed = Packed.of(padded_rows(rows, layout), self.device)
        key = (len(rows), *layout.key, torch.is_autocast_enabled("cuda"))
        forward = self.graphs.get(key)
        self.calls += 1
        if forward is None and len(self.graphs) < MAX_GRAPHS:
            forward = self.graphs[key] = self._capture(packed, layout.longest)
            self.captured_at.append(self.calls)
        elif forward is None:
            if not self.full_said:
                _log.info(f"{MAX_GRAPHS} pack shapes graphed already: new shapes run eagerly")
                self.full_said = True
            forward = _Forward(self.decoder, self.params, layout.longest)
        self._own_grads()
        return packed, forward(packed.ids, packed.positions, packed.cu_seqlens)

    def _capture(self, packed: Packed, longest: int) -> torch.nn.Module:
        """Warm up and capture the forward and backward of this pack shape (under the caller's
        autocast, without its weight-cast cache, which a capture cannot hold)."""
        module = _Forward(self.decoder, self.params, longest)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        args = (packed.ids.clone(), packed.positions.clone(), packed.cu_seqlens.clone())
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
