from __future__ import annotations

from dataclasses import dataclass

from harness.neural.recipe import ContrastiveTraining


@dataclass(frozen=True)
class SADIRIConfig(ContrastiveTraining):
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
