from __future__ import annotations

from dataclasses import dataclass

from harness.recipe import ContrastiveTraining

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class RetrieverConfig(ContrastiveTraining):
    """The SADIRI-v2 retriever recipe (Eq. 1): any Hugging Face decoder LLM (the paper's: Qwen3
    0.6B/1.7B/4B/8B and Mistral-Nemo-Base-2407) with LoRA (r 16, alpha 32, dropout 0.05, all
    attention and MLP projections, bias none, FEATURE_EXTRACTION), mean pooling over the final
    hidden states, a learnable linear projection with bias to D = E / 2, dot-product score,
    SupCon tau = 0.01, lr 1e-5, 16 authors a batch, 1 epoch; only LoRA and the projection train.

    backbone: hub id or local folder (a GGUF folder works); the default is the paper's smallest.
    model: a folder written by `aa-harness train sadiri-v2-retriever` (its `model/` subfolder);
        None ranks with the untrained backbone: mean pooling, no projection, cosine.
    """

    backbone: str = "Qwen/Qwen3-0.6B"
    model: str | None = None
    max_length: int = 512
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: tuple[str, ...] = LORA_TARGETS
    similarity: str = "dot"  # the paper's; "cosine" normalises the projected vectors (a variant)
    tau: float = 0.01
    lr: float = 1e-5
    authors_per_batch: int = 16
    epochs: int = 1
    hard_negatives: bool = True
    project_for_clustering: bool = True  # random projection to K = D // 3 before k-means

    def __post_init__(self):
        super().__post_init__()
        if self.similarity not in ("dot", "cosine"):
            raise ValueError(f"similarity must be 'dot' or 'cosine', got {self.similarity!r}")
