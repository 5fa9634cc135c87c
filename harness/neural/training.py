"""The contrastive training loop every bi-encoder recipe uses.

Adam; bf16 autocast on CUDA (fp32 master weights); optional gradient checkpointing; the
supervised contrastive loss (Eq. 2) over batches of N authors x 2 documents; batches from
hard-negative clustering (Algorithm 1) re-done every epoch, or at random. Checkpoints at
every epoch end (and every `checkpoint_every` steps) hold the trainable weights, optimizer,
progress and the epoch's batch plan, so a resumed run continues with the same batches.
Under torchrun the global batch is split across processes (DDP) and the embeddings are
gathered before the loss, which therefore equals the one-process loss.
"""
from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import torch
from tqdm.auto import tqdm

from harness.atomic import atomic_write_text
from harness.errors import HarnessError
from harness.neural import distributed as D
from harness.neural.checkpoint import load_checkpoint, save_checkpoint
from harness.neural.device import autocast, device_label, pick_device
from harness.neural.encoder import BiEncoder, embed_features
from harness.neural.hard_negatives import hard_negative_batches, random_batches
from harness.neural.losses import supcon_loss
from harness.neural.recipe import ContrastiveTraining


def authors_from_documents(documents) -> dict[str, list[str]]:
    """author -> texts, for authors with at least two documents (first author of each document)."""
    by: dict[str, list[str]] = {}
    for d in documents:
        by.setdefault(d.authorIDs[0], []).append(d.fullText)
    usable = {a: t for a, t in sorted(by.items()) if len(t) >= 2}
    if len(usable) < 2:
        raise HarnessError(f"training needs at least two authors with two or more documents; found {len(usable)}")
    return usable


def _plan_epoch(model: BiEncoder, authors: Mapping[str, list[str]], recipe: ContrastiveTraining, epoch: int,
                device: torch.device, log) -> list[list[tuple[str, int, int]]]:
    seed = recipe.seed * 1000 + epoch
    if recipe.hard_negatives:
        names = [a for a in authors for _ in authors[a]]
        texts = [t for a in authors for t in authors[a]]
        t0 = time.perf_counter()
        vecs = embed_features(model, model.featurize(texts), device, max_tokens=recipe.encode_max_tokens)
        proj = vecs.shape[1] // 3 if recipe.project_for_clustering else None
        batches = hard_negative_batches(vecs, names, recipe.authors_per_batch, cluster_factor=recipe.cluster_factor,
                                        project_to=proj, seed=seed)
        log(f"epoch {epoch}: hard-negative batches from {len(texts)} documents in {time.perf_counter() - t0:.1f}s")
    else:
        batches = random_batches(list(authors), recipe.authors_per_batch, seed)
    rng = random.Random(seed)
    return [[(a, *rng.sample(range(len(authors[a])), 2)) for a in batch] for batch in batches]


def train_contrastive(model: BiEncoder, authors: Mapping[str, list[str]], recipe: ContrastiveTraining, out_dir: Path, *,
                      save: Callable[[BiEncoder, Path], None], log=print, device_pref: str = "auto") -> dict:
    """Train `model` in place; the main process calls save(model, out_dir / "model") at the end."""
    rank, size, _ = D.world()
    device = pick_device(device_pref)
    out_dir = Path(out_dir)
    ckpt = out_dir / "checkpoint"
    model.to(device)
    for p in model.trainable_parameters():
        p.data = p.data.float()  # fp32 master weights for what trains; bf16 only inside autocast
    if recipe.grad_checkpointing:
        model.enable_gradient_checkpointing()
    model.train()
    wrapped = model
    if size > 1:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.trainable_parameters(), lr=recipe.lr)
    progress = load_checkpoint(ckpt, model, optimizer) or {"epoch": 0, "step": 0, "plan": None, "log": [], "steps_done": 0}
    if progress["steps_done"]:
        log(f"resuming from {ckpt}: epoch {progress['epoch']}, step {progress['step']}")
    amp = recipe.bf16 and device.type == "cuda"
    n_trainable = sum(p.numel() for p in model.trainable_parameters())
    log(f"training {type(model).__name__} on {device_label(device)} x{size}: {len(authors)} authors, "
        f"{n_trainable:,} trainable parameters")
    stop = False
    for epoch in range(progress["epoch"], recipe.epochs):
        if progress["plan"] is None:
            plan = _plan_epoch(model, authors, recipe, epoch, device, log) if D.is_main() else None
            progress.update(plan=D.broadcast(plan), step=0)
        plan = progress["plan"]
        t_epoch, docs, tokens = time.perf_counter(), 0, 0
        bar = tqdm(total=len(plan), initial=progress["step"], desc=f"epoch {epoch}", unit="step", file=sys.stderr,
                   disable=not (D.is_main() and sys.stderr.isatty()))
        for step in range(progress["step"], len(plan)):
            batch = plan[step]
            mine = D.shard(batch, rank, size)
            texts = [authors[a][i] for a, i, _ in mine] + [authors[a][j] for a, _, j in mine]
            feats = model.featurize(texts)
            tensors = {k: v.to(device) for k, v in model.collate(feats).items()}
            t0 = time.perf_counter()
            with autocast(device, amp):
                emb = wrapped(**tensors)
            a, b = emb[: len(mine)], emb[len(mine):]
            if size > 1:
                sizes = [len(D.shard(batch, r, size)) for r in range(size)]
                a, b = D.gather_rows(a, sizes), D.gather_rows(b, sizes)
            loss = supcon_loss(a, b, recipe.tau, cosine=model.similarity == "cosine")
            loss.backward()
            if progress["steps_done"] == 0 or step == progress["step"]:
                idle = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
                if idle:  # would also leave DDP's gradient reduction unfinished
                    raise HarnessError(f"trainable parameters got no gradient (freeze them): {idle[:5]}")
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            docs += 2 * len(batch)
            tokens += sum(model.feature_length(f) for f in feats) * size
            entry = {"epoch": epoch, "step": step, "loss": round(float(loss.detach()), 6), "authors": len(batch),
                     "seconds": round(time.perf_counter() - t0, 4)}
            progress["log"].append(entry)
            progress["step"] = step + 1
            progress["steps_done"] += 1
            bar.update(1)
            bar.set_postfix(loss=f"{entry['loss']:.4f}")
            if bar.disable and (step % 10 == 0 or step == len(plan) - 1):
                log(f"epoch {epoch} step {step + 1}/{len(plan)} loss {entry['loss']:.4f}")
            if recipe.checkpoint_every and progress["steps_done"] % recipe.checkpoint_every == 0 and D.is_main():
                save_checkpoint(ckpt, model, optimizer, progress)
            if recipe.max_steps and progress["steps_done"] >= recipe.max_steps:
                stop = True
                break
        bar.close()
        seconds = time.perf_counter() - t_epoch
        progress["log"].append({"epoch": epoch, "epoch_seconds": round(seconds, 2), "docs_per_second": round(docs / max(seconds, 1e-9), 1),
                                "tokens_per_second": round(tokens / max(seconds, 1e-9), 1)})
        if not stop:
            progress.update(epoch=epoch + 1, step=0, plan=None)
        if D.is_main():
            save_checkpoint(ckpt, model, optimizer, progress)
        if stop:
            break
    summary = {"recipe": {f.name: getattr(recipe, f.name) for f in fields(ContrastiveTraining)}, "device": device_label(device), "world_size": size, "authors": len(authors),
               "trainable_parameters": n_trainable, "steps": progress["steps_done"], "log": progress["log"]}
    if D.is_main():
        save(model, out_dir / "model")
        atomic_write_text(out_dir / "train_log.json", json.dumps(summary, indent=1) + "\n")
    return summary


def losses(summary: dict) -> list[float]:
    return [e["loss"] for e in summary["log"] if "loss" in e]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
