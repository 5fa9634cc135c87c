"""Training the SADIRI-v2 reranker on the one training loop (harness.neural.training): for a
share of the training authors, a query, its positive and m negatives drawn by strategy from
the query's and the positive's SBERT neighbourhoods and at random (the paper's Figure 1)."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from harness.api import Document, HarnessError, autocast
from plugins.sadiri_v2.config import RerankerConfig, parse_strategy
from plugins.sadiri_v2.negatives import cached_neighbours, draw_negatives
from plugins.sadiri_v2.reranker import new_for_training, save

_log = logging.getLogger(__name__)


class QueryNegatives:
    """The reranker's training task for the one loop (harness.neural.training): a global batch
    is `queries_per_batch` (query, positive, m negatives) examples; each query's loss is Eq. 2
    with tau over its 1 + m pair scores, and a batch's loss is the mean over its queries.

    Each process scores its shard of the batch, `micro_batch` queries a forward (0: the whole
    shard); the gradients are scaled so that DDP's average equals the one-process mean.

    A query's pairs are split as `PairScorer.pair_parts` gives them: one prefix (BOS query
    U+2980) and its 1 + m candidates (candidate EOS); `pair_features` is exactly prefix +
    candidate. The `score_groups` hook scores such groups (one tensor per query, the positive
    first): by default each pair as one row through `embed_batch` (the Hugging Face forward);
    with `fast_training`, the speed layer's shared-prefix step, which runs each prefix once.
    """

    unit = "queries"

    def __init__(self, documents: Sequence[Document], config: RerankerConfig, embed_batch=None, score_groups=None):
        from harness.api import default_embed_batch

        self.config = config
        self.embed_batch = embed_batch or default_embed_batch
        self.score_groups = score_groups or self.score_pairs
        self.docs = sorted(documents, key=lambda d: (d.authorIDs[0], d.documentID))
        self.authors = [d.authorIDs[0] for d in self.docs]
        self.by_author: dict[str, list[int]] = {}
        for i, a in enumerate(self.authors):
            self.by_author.setdefault(a, []).append(i)
        usable = sorted(a for a, ix in self.by_author.items() if len(ix) >= 2)
        if len(usable) < 2:
            raise HarnessError("reranker training needs at least two authors with two or more documents")
        rng = random.Random(config.seed)
        self.chosen = sorted(rng.sample(usable, max(1, round(config.author_fraction * len(usable)))))
        self._neighbours: np.ndarray | None = None

    def size(self) -> int:
        return len(self.chosen)

    def neighbours(self, log) -> np.ndarray:
        """Each document's nearest documents by other authors (SBERT cosine), computed once and cached."""
        c = self.config
        if self._neighbours is None:
            self._neighbours = np.zeros((len(self.docs), 0), dtype=np.int64)
            if set(parse_strategy(c.strategy)) & {"q", "p"}:
                from harness.api import cache_root
                from plugins.sbert.embedder import sbert_embedder

                t = time.perf_counter()
                k = max(64, 4 * c.negatives, c.negative_pool + 2)
                self._neighbours = cached_neighbours(
                    [d.fullText for d in self.docs],
                    self.authors,
                    sbert_embedder(c.sbert_model, c.device, 64),
                    c.sbert_model,
                    k=k,
                    cache_dir=cache_root() / "neighbours",
                )
                log(f"neighbours by {c.sbert_model} over {len(self.docs)} documents in {time.perf_counter() - t:.1f}s")
        return self._neighbours

    def examples(self, epoch: int, log) -> list[list[int]]:
        """[query, positive, *negatives] per chosen author, drawn anew each epoch (seeded)."""
        c = self.config
        neighbours = self.neighbours(log)
        rng = random.Random(c.seed * 1000 + epoch)
        pool = c.negative_pool if c.negative_sampling == "sampled" else None
        out = []
        for a in self.chosen:
            q, p = rng.sample(self.by_author[a], 2)
            out.append([q, p, *draw_negatives(q, p, c.strategy, c.negatives, neighbours, self.authors, rng, pool=pool)])
        return out

    def plan_epoch(self, model, epoch: int, device, log) -> list[list]:
        from harness.api import world_size

        examples = self.examples(epoch, log)
        random.Random(self.config.seed * 1000 + epoch).shuffle(examples)
        n = self.config.queries_per_batch
        batches = [examples[i : i + n] for i in range(0, len(examples), n)]
        if len(batches) > 1 and len(batches[-1]) < world_size():  # every process needs a query
            batches[-2] += batches.pop()
        return batches

    def describe(self, batch: list) -> str:
        """The batch's queries and their candidates, by document id."""
        return "queries " + "; ".join(
            f"{self.docs[q].documentID} (candidates {', '.join(self.docs[c].documentID for c in cands)})"
            for q, *cands in batch
        )

    def score_pairs(self, wrapped, model, groups, device) -> list[torch.Tensor]:
        """The plain `score_groups`: every pair as one row, prefix + candidate (the rows of
        `pair_features`), through `embed_batch`; one tensor of scores per group."""
        features = [[*prefix, *cand] for prefix, cands in groups for cand in cands]
        scores = self.embed_batch(wrapped, model, features, device)[:, 0]
        return list(scores.split([len(cands) for _, cands in groups]))

    def step(self, wrapped, model, shard, sizes, device, amp, scale, last):
        from harness.api import StepResult, candidates_loss, sync_grads

        c, total, procs = self.config, sum(sizes), len(sizes)
        micro = c.micro_batch or len(shard)
        pieces = [shard[i : i + micro] for i in range(0, len(shard), micro)]
        loss_sum, docs, tokens = 0.0, 0, 0
        for k, piece in enumerate(pieces):
            groups = [
                model.pair_parts(self.docs[q].fullText, [self.docs[i].fullText for i in cands]) for q, *cands in piece
            ]
            with sync_grads(wrapped, last and k == len(pieces) - 1):
                with autocast(device, amp):
                    scores = self.score_groups(wrapped, model, groups, device)
                ce = candidates_loss(scores, c.tau)
                (ce * (scale * procs / total)).backward()
            loss_sum += float(ce.detach())
            docs += sum(len(cands) for _, cands in groups)
            # the pairs' tokens, whichever path reads them (the shared prefix runs fewer), so that
            # tokens per second compares the two paths on the same work
            tokens += sum(len(prefix) + len(cand) for prefix, cands in groups for cand in cands)
        if procs > 1:
            import torch.distributed as dist

            box = torch.tensor([loss_sum, docs, tokens], dtype=torch.float64, device=device)
            dist.all_reduce(box)
            loss_sum, docs, tokens = float(box[0]), int(box[1]), int(box[2])
        return StepResult(loss_sum / total, docs, tokens)


def train(
    config: RerankerConfig, documents: Sequence[Document], out_dir: Path, log=_log.info, embed_batch=None
) -> Path:
    """Eq. 2 with tau = 1 over 1 + m candidates per query, on the one training loop (DDP,
    gradient accumulation, N-step checkpoints and resume). Seeds, then builds the model.

    `fast_training` scores through the shared-prefix step where it can run (one process, the
    fused decoder's families; else the concatenated pairs, said in the log); an explicit
    `embed_batch` hook keeps the concatenated pairs and wins over it, as for the retriever."""
    from harness.api import config_sections, train_loop
    from plugins.sadiri_v2.retriever import check_fp8

    check_fp8(config, config.fast_training and embed_batch is None, "fast_training")
    torch.manual_seed(config.seed)
    task = QueryNegatives(documents, config, embed_batch)
    if embed_batch is None and config.fast_training:  # the shared-prefix step, else (DDP, other families) pairs
        from harness.api import shared_prefix_score_groups

        task.score_groups = shared_prefix_score_groups(
            checkpoint=config.grad_checkpointing, fallback=task.score_pairs, fp8=config.fp8, graphs=config.cuda_graphs
        )
    model = new_for_training(config)
    log(
        f"reranker: {task.size()} queries x (1 + {config.negatives}) candidates, strategy {config.strategy}, "
        f"negatives {config.negative_sampling}"
    )
    out_dir = Path(out_dir)
    train_loop(
        model,
        task,
        config,
        out_dir,
        save=lambda m, folder: save(m, folder, config),
        log=log,
        record={"strategy": config.strategy, "recipe": config_sections(config)["recipe"]},
    )
    return out_dir / "model"
