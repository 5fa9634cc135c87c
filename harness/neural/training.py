"""The one training loop: bi-encoders (SupCon over in-batch authors) and cross-encoders alike.

The loop owns what every recipe shares: fp32 master weights under bf16 autocast (CUDA), Adam,
gradient checkpointing, DDP under torchrun, gradient accumulation, checkpoints every N
optimizer steps and at epoch ends (trainable weights, optimizer, progress and the epoch's
batch plan, so a resumed run continues with the same batches and ends with the same weights),
a step cap, and the JSON training log. A recipe plugs in a `TrainingTask`:

  plan_epoch(model, epoch, device, log) -> the epoch's global batches (JSON-able lists),
      made on the main process and broadcast to the others;
  step(wrapped, model, shard, sizes, device, amp, scale, last) -> StepResult: forward and
      backward of this process's shard of one global batch, gradients multiplied by `scale`;
      the DDP gradient reduction may run only in the backward where `last` is true (use
      `distributed.sync_grads(wrapped, last)`).

A global batch is split over processes (`distributed.shard`); `grad_accumulation` global
batches make an optimizer step. `ContrastivePairs` is the bi-encoders' task; the reranker's
lives with its plugin. Both take the forward as a hook (`embed_batch`), so a faster training
step can replace the plain one without touching the loop.
"""

from __future__ import annotations

import json
import logging
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import torch

from harness.errors import HarnessError
from harness.foundation import progress as progress_module
from harness.foundation.atomic import atomic_write_text
from harness.neural import distributed as D
from harness.neural.attention_kernels import training_attention
from harness.neural.checkpoint import load_checkpoint, save_checkpoint
from harness.neural.device import autocast, device_label, pick_device
from harness.neural.encoder import TextEncoder, embed_features
from harness.neural.hard_negatives import hard_negative_batches, random_batches
from harness.neural.losses import supcon_loss

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepResult:
    """One global batch: its loss (the same number on every process), documents and tokens read."""

    loss: float
    documents: int
    tokens: int


class TrainingTask(Protocol):
    unit: str  # what a batch counts: "authors", "queries"

    def plan_epoch(self, model, epoch: int, device: torch.device, log) -> list[list]: ...

    def step(
        self, wrapped, model, shard: list, sizes: list[int], device: torch.device, amp: bool, scale: float, last: bool
    ) -> StepResult: ...

    def size(self) -> int:
        """Training examples (authors, queries) in all."""

    def describe(self, batch: list) -> str:
        """What a batch holds, by name (authors, document ids), for a message about it."""


def _names(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def default_embed_batch(wrapped, model: TextEncoder, features: Sequence[Any], device: torch.device) -> torch.Tensor:
    """The plain forward: collate on the host, move, run the (DDP-wrapped) model, with the
    attention kernels whose backward is sound (harness.neural.attention_kernels)."""
    tensors = {k: v.to(device) for k, v in model.collate(features).items()}
    with training_attention():
        return wrapped(**tensors)


EmbedBatch = Callable[[Any, TextEncoder, Sequence[Any], torch.device], torch.Tensor]


def authors_from_documents(documents) -> dict[str, list[str]]:
    """author -> texts, for authors with at least two documents (first author of each document)."""
    by: dict[str, list[str]] = {}
    for d in documents:
        by.setdefault(d.authorIDs[0], []).append(d.fullText)
    usable = {a: t for a, t in sorted(by.items()) if len(t) >= 2}
    if len(usable) < 2:
        raise HarnessError(f"training needs at least two authors with two or more documents; found {len(usable)}")
    return usable


class ContrastivePairs:
    """The bi-encoders' task: batches of authors x 2 documents, the SupCon loss of Eq. 2.

    Batches come from hard-negative clustering (Algorithm 1) re-done every epoch, or at random.
    Under DDP the embeddings are gathered before the loss, which therefore equals the
    one-process loss. With `micro_batch` < the shard, the shard is embedded in pieces without
    gradients, the loss's gradient with respect to the embeddings is taken once, and each piece
    is re-embedded with gradients and back-propagated (a gradient cache; each piece's random
    state is replayed, so both passes draw the same dropout masks): without dropout the update
    equals the whole-shard update (tested), in the memory of one piece.
    """

    unit = "authors"

    def __init__(self, authors: Mapping[str, list[str]], recipe, embed_batch: EmbedBatch | None = None):
        self.authors, self.recipe = authors, recipe
        self.embed_batch = embed_batch or default_embed_batch

    def size(self) -> int:
        return len(self.authors)

    def plan_epoch(self, model: TextEncoder, epoch: int, device: torch.device, log) -> list[list]:
        recipe, authors = self.recipe, self.authors
        seed = recipe.seed * 1000 + epoch
        if recipe.hard_negatives:
            names = [a for a in authors for _ in authors[a]]
            texts = [t for a in authors for t in authors[a]]
            t0 = time.perf_counter()
            # the epoch starts by embedding every training document: on a CPU the longest wait of a
            # short training, so it has a bar with the time left (and a line where no bar shows)
            log(f"epoch {epoch}: hard negatives: encoding {len(texts):,} documents on {device_label(device)}")
            with progress_module.phase(f"epoch {epoch}: hard negatives: encode", len(texts), "doc") as advance:
                vecs = embed_features(
                    model, model.featurize(texts), device, max_tokens=recipe.encode_max_tokens, advance=advance
                )
            proj = vecs.shape[1] // 3 if recipe.project_for_clustering else None
            with progress_module.phase(f"epoch {epoch}: hard negatives: cluster", 1) as advance:
                batches = hard_negative_batches(
                    vecs,
                    names,
                    recipe.authors_per_batch,
                    cluster_factor=recipe.cluster_factor,
                    project_to=proj,
                    seed=seed,
                )
                advance(1)
            log(f"epoch {epoch}: hard-negative batches from {len(texts)} documents in {time.perf_counter() - t0:.1f}s")
        else:
            batches = random_batches(list(authors), recipe.authors_per_batch, seed)
        rng = random.Random(seed)
        return [[(a, *rng.sample(range(len(authors[a])), 2)) for a in batch] for batch in batches]

    def describe(self, batch: list) -> str:
        return f"authors {_names([str(a) for a, _, _ in batch])}"

    def _features(self, model, rows) -> list:
        """Features of the rows' first documents, then of their second documents."""
        return model.featurize([self.authors[a][i] for a, i, _ in rows] + [self.authors[a][j] for a, _, j in rows])

    def _embed(self, wrapped, model, features, device, amp) -> torch.Tensor:
        with autocast(device, amp):
            return self.embed_batch(wrapped, model, features, device)

    def _loss(self, a: torch.Tensor, b: torch.Tensor, sizes: list[int], model) -> torch.Tensor:
        if len(sizes) > 1:
            a, b = D.gather_rows(a, sizes), D.gather_rows(b, sizes)
        return supcon_loss(a, b, self.recipe.tau, cosine=model.similarity == "cosine")

    def step(self, wrapped, model, shard, sizes, device, amp, scale, last) -> StepResult:
        micro = self.recipe.micro_batch or len(shard)
        if micro >= len(shard):
            features = self._features(model, shard)
            tokens = sum(model.feature_length(f) for f in features) * len(sizes)
            with D.sync_grads(wrapped, last):
                emb = self._embed(wrapped, model, features, device, amp)
                loss = self._loss(emb[: len(shard)], emb[len(shard) :], sizes, model)
                (loss * scale).backward()
            return StepResult(float(loss.detach()), 2 * sum(sizes), tokens)
        pieces = [shard[i : i + micro] for i in range(0, len(shard), micro)]
        features = [self._features(model, piece) for piece in pieces]
        tokens = sum(model.feature_length(f) for fs in features for f in fs) * len(sizes)
        states, firsts, seconds = [], [], []
        with torch.no_grad():
            for piece, fs in zip(pieces, features):
                states.append(RngState.capture(device))
                emb = self._embed(wrapped, model, fs, device, amp).float()
                firsts.append(emb[: len(piece)])
                seconds.append(emb[len(piece) :])
        a = torch.cat(firsts).requires_grad_()
        b = torch.cat(seconds).requires_grad_()
        loss = self._loss(a, b, sizes, model)
        (loss * scale).backward()
        start = 0
        for k, (piece, fs, state) in enumerate(zip(pieces, features, states)):
            state.restore(device)
            with D.sync_grads(wrapped, last and k == len(pieces) - 1):
                emb = self._embed(wrapped, model, fs, device, amp).float()
                n = len(piece)
                grads = torch.cat([a.grad[start : start + n], b.grad[start : start + n]])
                emb.backward(grads)
            start += n
        return StepResult(float(loss.detach()), 2 * sum(sizes), tokens)


@dataclass(frozen=True)
class RngState:
    """The random state a forward draws dropout from, to replay it."""

    cpu: torch.Tensor
    cuda: torch.Tensor | None

    @classmethod
    def capture(cls, device: torch.device) -> RngState:
        return cls(torch.get_rng_state(), torch.cuda.get_rng_state(device) if device.type == "cuda" else None)

    def restore(self, device: torch.device) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, device)


def train_loop(
    model: TextEncoder,
    task: TrainingTask,
    recipe,
    out_dir: Path,
    *,
    save: Callable[[TextEncoder, Path], None],
    log=_log.info,
    record: Mapping[str, Any] | None = None,
) -> dict:
    """Train `model` in place on `task`; the main process calls save(model, out_dir / "model") at the
    end and writes out_dir / "train_log.json". `recipe` gives lr, epochs, grad_accumulation, bf16,
    grad_checkpointing, checkpoint_every, max_steps and device; `record` is merged into the log."""
    rank, size, _ = D.world()
    device = pick_device(recipe.device)
    out_dir = Path(out_dir)
    wrapped = _ready_to_train(model, recipe, device, size, log)
    if device.type == "cuda":
        # the epochs' peak memory is this training's: what an earlier one in the process left
        # cached (the allocator keeps it, and graph pools cannot reuse it) is freed first
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    optimizer = torch.optim.Adam(model.trainable_parameters(), lr=recipe.lr)
    run = _Run(model, wrapped, task, recipe, optimizer, device, rank, size, out_dir / "checkpoint", log)
    n_trainable = sum(p.numel() for p in model.trainable_parameters())
    log(
        f"training {type(model).__name__} on {device_label(device)} x{size}: {task.size()} {task.unit}, "
        f"{n_trainable:,} trainable parameters, {recipe.grad_accumulation} global batch(es) per optimizer step"
    )
    for epoch in range(run.progress["epoch"], recipe.epochs):
        stop = run.epoch(epoch)
        if not stop:
            run.progress.update(epoch=epoch + 1, step=0, plan=None)
        if D.is_main():
            save_checkpoint(run.ckpt, model, optimizer, run.progress)
        if stop:
            break
    summary = {
        **dict(record or {}),
        "device": device_label(device),
        "world_size": size,
        "examples": task.size(),
        "unit": task.unit,  # authors (bi-encoders) or queries (the reranker)
        "trainable_parameters": n_trainable,
        "steps": run.progress["steps_done"],
        "log": run.progress["log"],
    }
    if D.is_main():
        save(model, out_dir / "model")
        atomic_write_text(out_dir / "train_log.json", json.dumps(summary, indent=1) + "\n")
    return summary


def _ready_to_train(model: TextEncoder, recipe, device: torch.device, size: int, log):
    """The model on its device in train mode, fp32 where it trains, checkpointed when asked; DDP-wrapped
    under several processes. Returns what the task's step calls (the wrapper, or the model)."""
    model.to(device)
    for p in model.trainable_parameters():
        p.data = p.data.float()  # fp32 master weights for what trains; bf16 only inside autocast
    if recipe.grad_checkpointing and not model.enable_gradient_checkpointing():
        log(f"gradient checkpointing: not supported by {type(model).__name__}'s backbone; training without it")
    model.train()
    if size == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


class _Run:
    """One training run's state across epochs: the progress a checkpoint holds (epoch, batch, the
    epoch's plan, the log, optimizer steps done) and whether the first step's gradients were checked."""

    def __init__(
        self,
        model,
        wrapped,
        task: TrainingTask,
        recipe,
        optimizer,
        device: torch.device,
        rank: int,
        size: int,
        ckpt: Path,
        log,
    ):
        self.model, self.wrapped, self.task, self.recipe, self.optimizer = model, wrapped, task, recipe, optimizer
        self.device, self.rank, self.size, self.ckpt, self.log = device, rank, size, ckpt, log
        self.amp = recipe.bf16 and device.type == "cuda"
        self.checked = False
        self.progress = load_checkpoint(ckpt, model, optimizer) or {
            "epoch": 0,
            "step": 0,
            "plan": None,
            "log": [],
            "steps_done": 0,
        }
        if self.progress["steps_done"]:
            log(f"resuming from {ckpt}: epoch {self.progress['epoch']}, batch {self.progress['step']}")

    def epoch(self, epoch: int) -> bool:
        """The epoch's batches from where the progress stands; its summary joins the log. True when
        the step cap stopped it."""
        progress, accum = self.progress, self.recipe.grad_accumulation
        if progress["plan"] is None:
            plan = self.task.plan_epoch(self.model, epoch, self.device, self.log) if D.is_main() else None
            progress.update(plan=D.broadcast(plan), step=0)
        plan = progress["plan"]
        t_epoch, docs, tokens, pending, t0 = time.perf_counter(), 0, 0, [], time.perf_counter()
        end = self._last_batch(len(plan))
        # a bar on a terminal; elsewhere (a log file, a Slurm job) a line every 10 steps with the time left
        show_bar = D.is_main() and sys.stderr.isatty() and progress_module.is_enabled()
        first, stop = progress["step"], False
        with (
            progress_module.enabled(show_bar),
            progress_module.phase(f"epoch {epoch}", end, "batch", initial=first) as bar,
        ):
            for i in range(progress["step"], len(plan)):
                group = (i // accum) * accum
                group_len = min(accum, len(plan) - group)
                boundary = i == group + group_len - 1
                batch = plan[i]
                sizes = [len(D.shard(batch, r, self.size)) for r in range(self.size)]
                out = self.task.step(
                    self.wrapped,
                    self.model,
                    D.shard(batch, self.rank, self.size),
                    sizes,
                    self.device,
                    self.amp,
                    1.0 / group_len,
                    boundary,
                )
                pending.append((out.loss, len(batch)))
                docs += out.documents
                tokens += out.tokens
                bar(1)
                if not boundary:
                    continue
                entry = self._optimizer_step(epoch, i, pending, t0)
                pending, t0 = [], time.perf_counter()
                bar.note(f"loss {entry['loss']:.4f}")
                if not show_bar and (progress["steps_done"] % 10 == 1 or i + 1 >= end):
                    left = progress_module.time_left(i + 1 - first, end - first, time.perf_counter() - t_epoch)
                    self.log(
                        f"epoch {epoch} batch {i + 1}/{len(plan)} step {progress['steps_done']} loss {entry['loss']:.4f}"
                        + (f" ({left} in this epoch)" if left else "")
                    )
                if (
                    self.recipe.checkpoint_every
                    and progress["steps_done"] % self.recipe.checkpoint_every == 0
                    and D.is_main()
                ):
                    save_checkpoint(self.ckpt, self.model, self.optimizer, progress)
                if self.recipe.max_steps and progress["steps_done"] >= self.recipe.max_steps:
                    stop = True
                    break
        seconds = time.perf_counter() - t_epoch
        entry = {
            "epoch": epoch,
            "epoch_seconds": round(seconds, 2),
            "docs_per_second": round(docs / max(seconds, 1e-9), 1),
            "tokens_per_second": round(tokens / max(seconds, 1e-9), 1),
        }
        if self.device.type == "cuda":
            # what the allocator held at its peak, CUDA graphs' memory pools included
            entry["peak_memory_gib"] = round(torch.cuda.max_memory_reserved(self.device) / 2**30, 2)
            entry["peak_memory_since"] = "training start"  # the cache freed and the peak reset there
        progress["log"].append(entry)
        return stop

    def _last_batch(self, n: int) -> int:
        """Where this epoch ends: its last batch, or where the step cap stops it (for the bar's total)."""
        cap, accum, done = self.recipe.max_steps, self.recipe.grad_accumulation, self.progress["steps_done"]
        if not cap:
            return n
        return min(n, self.progress["step"] + max(cap - done, 0) * accum)

    def _optimizer_step(self, epoch: int, i: int, pending: list[tuple[float, int]], t0: float) -> dict:
        """Adam's step after the last batch of an accumulation group (batch i); its log entry, recorded."""
        if not self.checked:
            idle = [n for n, p in self.model.named_parameters() if p.requires_grad and p.grad is None]
            if idle:  # would also leave DDP's gradient reduction unfinished
                raise HarnessError(f"trainable parameters got no gradient (freeze them): {idle[:5]}")
            self.checked = True
        loss = sum(v for v, _ in pending) / len(pending)
        norm = _gradient_norm(self.model)
        if not (math.isfinite(loss) and math.isfinite(norm)):
            # one step on a non-finite gradient makes every weight NaN, and a NaN model would be
            # saved and run as if it had trained: stop before it, with the checkpoint left as it was
            what = "loss" if not math.isfinite(loss) else "gradient"
            held = [x for b in self.progress["plan"][i - len(pending) + 1 : i + 1] for x in b]  # the group's batches
            raise HarnessError(
                f"training stopped at epoch {epoch}, batch {i + 1} (optimizer step {self.progress['steps_done'] + 1}): "
                f"the {what} is not finite; no step was taken with it and no model was saved "
                f"(the last checkpoint, if any, is in {self.ckpt}); the step's {self.task.describe(held)}"
            )
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        entry = {
            "epoch": epoch,
            "step": i,
            "loss": round(loss, 6),
            "grad_norm": round(norm, 6),
            self.task.unit: sum(n for _, n in pending),
            "seconds": round(time.perf_counter() - t0, 4),
        }
        self.progress["log"].append(entry)
        self.progress["step"] = i + 1
        self.progress["steps_done"] += 1
        return entry


def _gradient_norm(model) -> float:
    """The L2 norm of every trainable parameter's gradient together (read once per optimizer step)."""
    grads = [p.grad.detach() for p in model.trainable_parameters() if p.grad is not None]
    if not grads:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads])))


def losses(summary: dict) -> list[float]:
    return [e["loss"] for e in summary["log"] if "loss" in e]
