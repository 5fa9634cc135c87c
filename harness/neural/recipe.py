"""Settings of the contrastive training loop, shared by every bi-encoder plugin's config.

Torch-free, so configs import on a bare install. Each plugin's config subclasses this and
redeclares the values its published recipe fixes (tau, lr, batch size, epochs, ...).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContrastiveTraining:
    tau: float = 0.01
    lr: float = 1e-5
    authors_per_batch: int = 16
    epochs: int = 1
    hard_negatives: bool = True  # SADIRI's Algorithm 1, re-clustered every epoch
    cluster_factor: float = 3.5  # s: clusters per batch
    project_for_clustering: bool = False  # random-project to K = D // 3 before k-means (LLM embeddings)
    grad_checkpointing: bool = True
    bf16: bool = True  # autocast on CUDA; fp32 on CPU regardless
    seed: int = 0
    checkpoint_every: int = 0  # steps between checkpoints (0: at every epoch end only)
    max_steps: int = 0  # stop after this many steps in all (0: no limit); for smoke runs
    device: str = "auto"
    encode_max_tokens: int = 65536  # token budget of an encoding batch
    cache: bool = True  # the on-disk embedding cache
    fast_path: bool = True  # LLM decoders: packed sequences / mask-free flash attention (exact; see encoder.py)
    search_index: str = "exact"  # or a faiss index-factory string for huge pools, e.g. "IVF4096,PQ64"
    search_nprobe: int = 64  # inverted lists (or HNSW efSearch) visited per query by a compressed index

    def __post_init__(self):
        if self.authors_per_batch < 2:
            raise ValueError("authors_per_batch must be >= 2 (in-batch negatives)")
        if self.tau <= 0 or self.lr <= 0:
            raise ValueError("tau and lr must be > 0")
