"""What the neural plugins share as systems: encode documents through the cache, and train."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from harness.config import config_sections
from harness.data.documents import Document
from harness.evaluation.ranking import check_vectors
from harness.neural.device import device_label, pick_device
from harness.neural.distributed import is_main
from harness.neural.embed_cache import EmbeddingCache, default_cache_root, model_key
from harness.neural.encoder import TextEncoder, encode_texts
from harness.neural.recipe import ContrastiveTraining
from harness.neural.training import (
    ContrastivePairs,
    EmbedBatch,
    authors_from_documents,
    train_loop,
)

_log = logging.getLogger(__name__)


class EncoderSystem:
    """A harness Encoder over any TextEncoder: cached, batched, normalised when cosine."""

    def __init__(
        self, model: TextEncoder, settings: ContrastiveTraining, describe: dict | None = None, *, fp8: bool = False
    ):
        """settings: the plugin's config, read for its inference section (cache, encode_max_tokens,
        fast_path, search_*) and device. fp8: encode through FP8 products of the frozen base
        (harness.neural.fast.fp8_linear; the caller has checked the device with `require_fp8`):
        it needs the fast path, and its vectors are cached under an identity of their own."""
        self.device = pick_device(settings.device)
        self.model = model.to(self.device).eval()
        if self.device.type == "cuda":
            self.model.to(torch.bfloat16)
        if settings.fast_path:
            from harness.neural.fast.enable import enable_fast_path

            self.fast_path = enable_fast_path(self.model, fp8=fp8)
        elif fp8:
            from harness.errors import HarnessError

            raise HarnessError(
                "fp8=true: FP8 products run on the fast path's fused decoder; drop --set fast_path=false"
            )
        else:
            self.fast_path = None
        self.fp8 = fp8
        self.max_tokens = settings.encode_max_tokens
        self.search_index, self.search_nprobe = settings.search_index, settings.search_nprobe
        # FP8 vectors are another function's: never served for bf16 ones, nor the other way round
        self.identity = model.identity() + ("|fp8-e4m3" if fp8 else "")
        self.cache = (
            EmbeddingCache(default_cache_root(), model_key(self.identity), model.max_length, writer=is_main())
            if settings.cache
            else None
        )
        self._describe = dict(describe or {})

    def encode(self, documents: Sequence[Document]) -> np.ndarray:
        # Under a harness run the phase bars show progress; no second bar from the encoding loop.
        vecs = encode_texts(
            self.model,
            [d.fullText for d in documents],
            self.device,
            cache=self.cache,
            max_tokens=self.max_tokens,
            progress=len(documents) > 256 and not self._in_phase,
        )
        return self._normalise(vecs)

    _in_phase = False

    def _normalise(self, vecs: np.ndarray) -> np.ndarray:
        if self.model.similarity == "cosine":
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int):
        from harness.foundation.progress import encode_with_progress, phase
        from harness.neural.search import top_k_by_backend

        label = self.device_name()
        self._in_phase = True
        try:
            # Large chunks keep the token-budget batches full; the first small one times the estimate.
            cand = encode_with_progress(self.encode, candidates, "encode candidates", device=label, chunk=2048)
            qv = encode_with_progress(self.encode, queries, "encode queries", device=label, chunk=2048)
        finally:
            self._in_phase = False
        cand = check_vectors(cand, candidates, "encode() of the candidates")
        qv = check_vectors(qv, queries, "encode() of the queries")
        ids = [d.documentID for d in candidates]
        with phase("search"):
            if self.search_index == "exact":
                ranked = top_k_by_backend(qv, cand, ids, k, device=self.device)
            else:
                from harness.neural.fast.compressed_search import (
                    build_index,
                    index_search,
                )

                ranked = index_search(build_index(cand, self.search_index), qv, ids, k, nprobe=self.search_nprobe)
        return {q.documentID: r for q, r in zip(queries, ranked)}

    def device_name(self) -> str:
        return device_label(self.device)

    def describe(self) -> dict:
        return {
            **self._describe,
            "model_identity": self.identity,
            "similarity": self.model.similarity,
            "max_length": self.model.max_length,
            "fast_path": self.fast_path,
            "search": self.search_index,
            **({"fp8": "e4m3 frozen base"} if self.fp8 else {}),
        }


def train_system(
    build: Callable[[], TextEncoder],
    config: ContrastiveTraining,
    documents: Sequence[Document],
    out_dir: Path,
    save: Callable[[TextEncoder, Path], None],
    log=_log.info,
    embed_batch: EmbedBatch | None = None,
) -> Path:
    """Seed, then build the model (fresh heads and projections draw from the seeded generator, so
    a rerun, or each process of a DDP run, starts from the same weights), then train it on the
    contrastive task. embed_batch: the forward hook (default: collate and call the model)."""
    torch.manual_seed(config.seed)
    model = build()
    task = ContrastivePairs(authors_from_documents(documents), config, embed_batch)
    train_loop(
        model, task, config, Path(out_dir), save=save, log=log, record={"recipe": config_sections(config)["recipe"]}
    )
    return Path(out_dir) / "model"
