from __future__ import annotations

from dataclasses import dataclass

from harness.api import ContrastiveRecipe, ContrastiveTraining, TrainedModel


@dataclass(frozen=True)
class LUARRecipe(ContrastiveRecipe):
    """LUAR as released: a document is cut into 32-token chunks (an episode of at most
    max_chunks), each chunk goes through the backbone with mean pooling, parameter-free
    scaled dot-product self-attention mixes the episode, max-pooling over it and a linear
    layer give a 512-d vector; cosine similarity; SupCon training at tau = 0.01.

    backbone: the released models use sentence-transformers/paraphrase-distilroberta-base-v1
        (distilroberta); the paper's table says RoBERTa-base (FacebookAI/roberta-base). Both work.
    checkpoint: released weights to load, by hub id (rrivera1849/LUAR-MUD or rrivera1849/LUAR-CRUD)
        or local folder in that layout; None starts from the backbone with a fresh linear layer.
    lr, authors_per_batch, epochs: this harness's choices (not taken from the LUAR paper).
    """

    backbone: str = "sentence-transformers/paraphrase-distilroberta-base-v1"
    checkpoint: str | None = "rrivera1849/LUAR-MUD"
    chunk_tokens: int = 32
    max_chunks: int = 16
    embedding_size: int = 512
    tau: float = 0.01
    lr: float = 2e-5
    authors_per_batch: int = 64
    epochs: int = 4
    hard_negatives: bool = False

    @property
    def max_length(self) -> int:
        return self.chunk_tokens * self.max_chunks

    def __post_init__(self):
        super().__post_init__()
        if self.chunk_tokens < 3:
            raise ValueError("chunk_tokens must leave room for the two special tokens")


@dataclass(frozen=True)
class LUARConfig(LUARRecipe, TrainedModel, ContrastiveTraining):
    """LUAR: its recipe, how to run it and how to encode (sections: harness.neural.recipe).

    model: a folder written by `aa-harness train luar` (its `model/` subfolder); wins over checkpoint.
    """
