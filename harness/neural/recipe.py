"""Config sections shared by the neural plugins, one per purpose. Torch-free.

A plugin's config is a flat frozen dataclass composed of sections (multiple inheritance), so
`--set key=value` and the `config` dict a run records keep one flat namespace of keys, while
each key belongs to exactly one purpose:

  recipe        what the paper specifies: the training recipe (loss, batch, lr, epochs, ...)
  training run  how this machine runs the recipe (gradient checkpointing, checkpoints, a step cap)
  inference     how a trained model is used (token budget, fast path, search index, cache)
  runtime       where it runs (device)
  model         which trained model to load

`harness.config.config_sections(config)` splits a config by purpose (the model card records
the recipe). A key's purpose is that of the section that first declares it; a plugin may
redeclare a section's field to change its default (its recipe value) without moving it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


class Section:
    """Base of config sections; `purpose` names what the section's fields are for."""

    purpose: ClassVar[str] = ""

    def __post_init__(self):  # sections validate their own fields and call super()
        pass


@dataclass(frozen=True)
class TrainingRecipe(Section):
    """What every trained recipe states: optimiser (Adam), precision, epochs, seed, and the
    global batch: `grad_accumulation` global batches per optimizer step (a batch's size is
    the recipe's own: authors for a bi-encoder, queries for a cross-encoder)."""

    purpose: ClassVar[str] = "recipe"
    tau: float = 0.01
    lr: float = 1e-5
    epochs: int = 1
    grad_accumulation: int = 1  # global batches per optimizer step
    bf16: bool = True  # autocast on CUDA; fp32 on CPU regardless
    seed: int = 0

    def __post_init__(self):
        super().__post_init__()
        if self.tau <= 0 or self.lr <= 0:
            raise ValueError("tau and lr must be > 0")
        if self.grad_accumulation < 1 or self.epochs < 1:
            raise ValueError("grad_accumulation and epochs must be >= 1")


@dataclass(frozen=True)
class ContrastiveRecipe(TrainingRecipe):
    """A bi-encoder's recipe: the supervised contrastive loss (Eq. 2) over batches of
    `authors_per_batch` authors x 2 documents. The batch is global: under torchrun it is split
    over the processes and the embeddings are gathered, so every author is a negative for every
    other author of the batch whatever the number of GPUs."""

    authors_per_batch: int = 16
    hard_negatives: bool = True  # SADIRI's Algorithm 1, re-clustered every epoch
    cluster_factor: float = 3.5  # s: clusters per batch
    project_for_clustering: bool = False  # random-project to K = D // 3 before k-means (LLM embeddings)

    def __post_init__(self):
        super().__post_init__()
        if self.authors_per_batch < 2:
            raise ValueError("authors_per_batch must be >= 2 (in-batch negatives)")


@dataclass(frozen=True)
class TrainingRun(Section):
    """How a machine runs a recipe; none of these changes the trained weights, except that
    max_steps stops early (the model card records the steps taken)."""

    purpose: ClassVar[str] = "training run"
    grad_checkpointing: bool = True
    checkpoint_every: int = 0  # optimizer steps between checkpoints (0: at every epoch end only)
    max_steps: int = 0  # stop after this many optimizer steps in all (0: no limit); for smoke runs
    micro_batch: int = 0  # bi-encoders: authors per forward on one process (0: its whole shard); exact (gradient cache)

    def __post_init__(self):
        super().__post_init__()
        if self.checkpoint_every < 0 or self.max_steps < 0 or self.micro_batch < 0:
            raise ValueError("checkpoint_every, max_steps and micro_batch must be >= 0")


@dataclass(frozen=True)
class Runtime(Section):
    purpose: ClassVar[str] = "runtime"
    device: str = "auto"


@dataclass(frozen=True)
class EncodeSettings(Section):
    """How a bi-encoder ranks a pool at inference."""

    purpose: ClassVar[str] = "inference"
    encode_max_tokens: int = 65536  # token budget of an encoding batch
    cache: bool = True  # the on-disk embedding cache
    fast_path: bool = True  # LLM decoders: packed sequences / mask-free flash attention (exact; see encoder.py)
    search_index: str = "exact"  # or a faiss index-factory string for huge pools, e.g. "IVF4096,PQ64"
    search_nprobe: int = 64  # inverted lists (or HNSW efSearch) visited per query by a compressed index


@dataclass(frozen=True)
class TrainedModel(Section):
    purpose: ClassVar[str] = "model"
    model: str | None = None  # a folder written by `aa-harness train` (its model/ subfolder)


@dataclass(frozen=True)
class ContrastiveTraining(ContrastiveRecipe, TrainingRun, EncodeSettings, Runtime):
    """Every bi-encoder plugin's config base: the contrastive recipe, how to run it, how to encode."""
