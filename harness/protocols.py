"""Small capability protocols a system may implement (instead of one fat base class).

- Ranker:    rank(queries, candidates, k) -> {queryID: [(candidateID, score), ...]}
- Encoder:   encode(documents) -> float array (n, d); the harness ranks by inner product
- Reranker:  rerank(queries, candidate lists) -> one score array per query, on a first stage's top k
Training is not a method of the system: a trainable system's SystemSpec names a `trainer`
function (config, documents, out_dir) -> model folder, so training never loads a model to
rank with. A system that only encodes is ranked by `DenseRanker`.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from harness.data.documents import Document
from harness.errors import HarnessError
from harness.evaluation.ranking import check_vectors, top_k_inner_product

Rankings = dict[str, list[tuple[str, float]]]


@runtime_checkable
class Ranker(Protocol):
    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int) -> Rankings: ...


@runtime_checkable
class Encoder(Protocol):
    def encode(self, documents: Sequence[Document]) -> np.ndarray: ...


@runtime_checkable
class Reranker(Protocol):
    def rerank(
        self, queries: Sequence[Document], candidate_lists: Sequence[Sequence[Document]]
    ) -> list[np.ndarray]: ...


class DenseRanker:
    """Ranks with any Encoder: encode both sides, exact inner-product search, harness tie rule."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder

    def rank(self, queries: Sequence[Document], candidates: Sequence[Document], k: int) -> Rankings:
        from harness.foundation.progress import encode_with_progress, phase

        device = _device_of(self.encoder)
        # ids taken before any plugin code runs: an encoder cannot rename what it is handed
        cand_ids, query_ids = [d.documentID for d in candidates], [q.documentID for q in queries]
        cand = encode_with_progress(self.encoder.encode, candidates, "encode candidates", device=device)
        qv = encode_with_progress(self.encoder.encode, queries, "encode queries", device=device)
        cand = check_vectors(cand, candidates, "encode() of the candidates")
        qv = check_vectors(qv, queries, "encode() of the queries")
        if cand.shape[1] != qv.shape[1]:
            raise HarnessError(
                f"encode() gave {qv.shape[1]}-dimensional query vectors and {cand.shape[1]}-dimensional "
                "candidate vectors"
            )
        with phase("search"):
            ranked = top_k_inner_product(qv, cand, cand_ids, k, query_ids=query_ids)
        return dict(zip(query_ids, ranked))


def _device_of(system) -> str:
    name = getattr(system, "device_name", None)
    try:
        return (name() if callable(name) else name) or ""
    except Exception:  # a device label is only advice for the slow-encoding warning
        return ""


def as_ranker(system) -> Ranker:
    if isinstance(system, Ranker):
        return system
    if isinstance(system, Encoder):
        return DenseRanker(system)
    if isinstance(system, Reranker):
        raise HarnessError(f"{type(system).__name__} is a reranker: use `aa-harness rerank SYSTEM --first-stage RUN`")
    raise HarnessError(f"{type(system).__name__} implements neither rank() nor encode()")
