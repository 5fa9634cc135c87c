from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SADIRIConfig:
    """The SADIRI recipe: RoBERTa-large, mean pooling, 512 tokens, SupCon tau = 0.01, lr 1e-5,
    74 authors a batch, 4 epochs, hard-negative batches re-clustered every epoch (s = 3.5).

    backbone: hub id or local folder of a Hugging Face encoder.
    model: a folder written by `aa-harness train sadiri` (its `model/` subfolder); None ranks
        with the untrained backbone (mean pooling, cosine).
    """

    backbone: str = "FacebookAI/roberta-large"
    model: str | None = None
    max_length: int = 512
    tau: float = 0.01
    lr: float = 1e-5
    authors_per_batch: int = 74
    epochs: int = 4
    hard_negatives: bool = True
    cluster_factor: float = 3.5
    grad_checkpointing: bool = True
    bf16: bool = True
    seed: int = 0
    checkpoint_every: int = 0
    max_steps: int = 0
    device: str = "auto"
    encode_max_tokens: int = 65536
    cache: bool = True

    def __post_init__(self):
        if self.authors_per_batch < 2:
            raise ValueError("authors_per_batch must be >= 2 (in-batch negatives)")
        if self.tau <= 0 or self.lr <= 0:
            raise ValueError("tau and lr must be > 0")
