"""The reranker's training step with each query's tokens run once (shared prefix).

A reranker's training query is scored against 1 positive + m negatives, each pair read as
`prefix + candidate` (prefix: BOS query delimiter). In a causal decoder the prefix's states
are the same in every pair, so here the prefix runs once and every candidate attends to
its keys and values, bottom-right aligned, which is the concatenated pair's attention; the
gradients of all 1 + m candidates flow back into the one prefix. At m = 12 and 512 + 512
tokens that is 512 + 13 x 512 tokens instead of 13 x 1,024 (1.86x fewer), and less
attention work.

All of it is one packed forward: the prefix and the candidates are sequences of one pack,
and each layer gathers, for every candidate, the prefix's keys and values in front of its
own (an index_select, whose backward sums the candidates' gradients into the prefix). The
layers are `LoraFusedDecoder`'s, LoRA inside. Tests compare the loss and every LoRA
gradient with PEFT's forward over the concatenated pairs in fp32.

The reranker's trainer takes this step through `shared_prefix_score_groups` (its task's
`score_groups` hook, `--set fast_training=true`), and `aa-harness bench train reranker` times
that same hook and loss.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import numpy as np
import torch

from harness.neural.fast.fused_decoder import Attend, to_device
from harness.neural.fast.graphed_train import HostPack, TrainGraphs
from harness.neural.fast.lora_train import LoraFusedDecoder, cannot_run, fast_step

_log = logging.getLogger(__name__)


def shared_prefix_pack(groups: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]]) -> tuple[HostPack, np.ndarray]:
    """(the pack on the host, index of each candidate's last token) for groups of (prefix,
    candidates): each group's prefix, then its candidates, laid end to end, each candidate's keys
    gathered from its prefix and itself."""
    ids, pos, gather, cu_q, cu_k, last = [], [], [], [0], [0], []
    start = 0
    max_q = max_k = 0
    for prefix, cands in groups:
        if not prefix or any(not c for c in cands):
            raise ValueError("prefix and every candidate need at least one token")
        p = len(prefix)
        ids.append(np.asarray(prefix, dtype=np.int64))
        pos.append(np.arange(p, dtype=np.int64))
        prefix_idx = np.arange(start, start + p, dtype=np.int64)
        gather.append(prefix_idx)
        cu_q.append(cu_q[-1] + p)
        cu_k.append(cu_k[-1] + p)
        max_q, max_k = max(max_q, p), max(max_k, p)
        start += p
        for c in cands:
            n = len(c)
            ids.append(np.asarray(c, dtype=np.int64))
            pos.append(np.arange(p, p + n, dtype=np.int64))
            gather += [prefix_idx, np.arange(start, start + n, dtype=np.int64)]
            cu_q.append(cu_q[-1] + n)
            cu_k.append(cu_k[-1] + p + n)
            max_q, max_k = max(max_q, n), max(max_k, p + n)
            start += n
            last.append(start - 1)
    pack = HostPack(
        np.concatenate(ids),
        np.concatenate(pos),
        np.asarray(cu_q, dtype=np.int32),
        np.asarray(cu_k, dtype=np.int32),
        np.concatenate(gather),
        max_q,
        max_k,
    )
    return pack, np.asarray(last, dtype=np.int64)


def shared_prefix_layout(groups: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]], device: torch.device):
    """(ids [T], positions [T], Attend, index of each candidate's last token) on the device."""
    pack, last = shared_prefix_pack(groups)
    ids, positions, cu_q, cu_k, gather = pack.tensors(device)
    return ids, positions, Attend(cu_q, cu_k, pack.max_q, pack.max_k, gather), to_device(last, device)


def shared_prefix_scores(
    decoder: LoraFusedDecoder,
    head: Callable[[torch.Tensor], torch.Tensor],
    groups: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]],
    device: torch.device,
    graphs: TrainGraphs | None = None,
) -> list[torch.Tensor]:
    """head(last state of prefix + candidate) for every candidate of every group, one tensor per
    group, differentiable; all groups in one pack. graphs: the layers as CUDA graphs of the padded
    pack where the step allows (graphed_train)."""
    if graphs is not None and TrainGraphs.usable(decoder, device):
        pack, last_host = shared_prefix_pack(groups)
        hidden, last = graphs.run(pack), to_device(last_host, device)
    else:
        ids, positions, attend, last = shared_prefix_layout(groups, device)
        hidden = decoder.forward(ids, positions, attend)
    scores = head(hidden.index_select(0, last))
    if scores.dim() == 2:
        scores = scores[:, 0]
    return list(scores.split([len(c) for _, c in groups]))


def reranker_loss(
    decoder: LoraFusedDecoder,
    head: Callable[[torch.Tensor], torch.Tensor],
    groups: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]],
    device: torch.device,
    *,
    tau: float = 1.0,
    graphs: TrainGraphs | None = None,
) -> torch.Tensor:
    """Mean over groups of Eq. 2 over each group's candidates, the first being the positive
    (the paper: one query per step, tau 1). Call .backward() on it (divided for accumulation)."""
    from harness.neural.losses import candidates_loss

    return candidates_loss(shared_prefix_scores(decoder, head, groups, device, graphs), tau) / len(groups)


def shared_prefix_score_groups(
    *, checkpoint: bool = False, compile: bool | None = None, fallback=None, fp8: bool = False, graphs: bool = True
):
    """A `score_groups` hook for the reranker's training task (`QueryNegatives`, with
    `fast_training`): score_groups(wrapped, model, groups, device) -> one tensor of scores per
    group of (prefix, candidates), `shared_prefix_scores` through a LoraFusedDecoder over
    `model.backbone` (a PEFT decoder), finished by `model.finish` (the head); all the groups of a
    call in one pack. The decoder is built at the first call, on the device the model is on then.

    One process only: the hook calls the model's layers directly, bypassing the DDP wrapper
    whose forward arms the gradient all-reduce. compile: as the retriever's fused step
    (`lora_train.training_compile`; None: on CUDA when graphed, else above 2B parameters). fallback: the plain
    `score_groups` where the shared-prefix step cannot run (under DDP, or a backbone the fused
    decoder does not support), said once in the log; without it, an error. fp8: train over an FP8
    frozen base, as `lora_train.fused_embed_batch(fp8=True)`; no fallback then. graphs: CUDA
    graphs of the layers, forward and backward, where the step allows (CUDA, no checkpointing,
    no FP8: graphed_train); false runs them eagerly."""
    from harness.errors import HarnessError

    decoders: dict[int, LoraFusedDecoder | None] = {}
    graphed: dict[int, TrainGraphs | None] = {}

    def score_groups(wrapped, model, groups, device) -> list[torch.Tensor]:
        ddp = isinstance(wrapped, torch.nn.parallel.DistributedDataParallel)
        known = id(model) in decoders and (decoders[id(model)] is None or decoders[id(model)].model is model.backbone)  # type: ignore[union-attr]
        if not known:
            why = "the shared-prefix step bypasses DDP's gradient sync" if ddp else None
            if why is None:
                try:
                    decoders[id(model)], graphed[id(model)] = fast_step(
                        model.backbone, device, checkpoint=checkpoint, compile=compile, fp8=fp8, graphs=graphs
                    )
                except ValueError as e:
                    why = str(e)
            if why is not None:
                if fallback is None or fp8:
                    raise HarnessError(cannot_run("the shared-prefix step", why, fp8))
                _log.info(
                    f"scoring training pairs through the plain Hugging Face forward: the shared-prefix "
                    f"step cannot run ({why})"
                )
                decoders[id(model)] = None
        decoder = decoders[id(model)]
        if decoder is None:
            return fallback(wrapped, model, groups, device)
        return shared_prefix_scores(decoder, model.finish, groups, device, graphed.get(id(model)))

    return score_groups
