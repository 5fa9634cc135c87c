from __future__ import annotations

from dataclasses import dataclass

from harness.neural.recipe import ContrastiveTraining

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


STRATEGY_CODES = ("q", "p", "r")  # n(d_q): near the query; n(d_q+): near the positive; n(r): random
STRATEGY_LABELS = {"q": "n(d_q)", "p": "n(d_q+)", "r": "n(r)"}


def parse_strategy(text: str) -> tuple[str, ...]:
    """"q+p+r" -> ("q", "p", "r") in canonical order; any non-empty combination of q, p, r."""
    parts = [p.strip() for p in text.split("+") if p.strip()]
    if not parts or any(p not in STRATEGY_CODES for p in parts) or len(set(parts)) != len(parts):
        raise ValueError(f"strategy must be a non-empty '+'-joined subset of q, p, r (n(d_q), n(d_q+), n(r)); got {text!r}")
    return tuple(c for c in STRATEGY_CODES if c in parts)


def strategy_label(text: str) -> str:
    return " + ".join(STRATEGY_LABELS[c] for c in parse_strategy(text))


@dataclass(frozen=True)
class RerankerConfig:
    """The SADIRI-v2 reranker recipe (Eq. 3): a decoder LLM with the retriever's LoRA setup
    (the paper: Mistral-Nemo-Base-2407) reads query U+2980 candidate, each side truncated to
    512 tokens, and scores the pair as W . h, h the final hidden state of the pair's last real
    token, W a learned 1 x E projection. Training: for each author (10% of the training
    authors) one document is the query and the other the positive, with m = 12 negatives by
    other authors drawn by `strategy` (q: nearest the query, p: nearest the positive, r: at
    random, by all-mpnet-base-v2 cosine; m split evenly); the loss of Eq. 2 with tau = 1.0 over
    the 1 + m candidates; one query per batch, gradient accumulation 10, lr 1e-4, Adam, bf16.

    model: a folder written by `aa-harness train sadiri-v2-reranker` (its `model/` subfolder).
    """

    backbone: str = "mistralai/Mistral-Nemo-Base-2407"
    model: str | None = None
    max_query_tokens: int = 512
    max_candidate_tokens: int = 512
    delimiter: str = "\u2980"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: tuple[str, ...] = LORA_TARGETS
    strategy: str = "q+p+r"
    negatives: int = 12
    author_fraction: float = 0.1
    tau: float = 1.0
    lr: float = 1e-4
    grad_accumulation: int = 10
    epochs: int = 1
    sbert_model: str = "sentence-transformers/all-mpnet-base-v2"
    grad_checkpointing: bool = True
    bf16: bool = True
    seed: int = 0
    max_steps: int = 0  # optimizer steps in all (0: no limit); for smoke runs
    device: str = "auto"
    score_max_tokens: int = 65536  # token budget of a scoring batch
    prefix_reuse: bool = True  # encode each query once and reuse its keys/values for its candidates

    def __post_init__(self):
        parse_strategy(self.strategy)
        if self.negatives < len(parse_strategy(self.strategy)):
            raise ValueError("need at least one negative per chosen category")
        if not 0 < self.author_fraction <= 1:
            raise ValueError("author_fraction must be in (0, 1]")
