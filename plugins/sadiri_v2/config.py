"""SADIRI-v2's configs, torch-free: the retriever's and the reranker's recipes, the LoRA spec
both share, and their inference settings (sections: harness.neural.recipe)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.api import (
    ContrastiveRecipe,
    ContrastiveTraining,
    Runtime,
    Section,
    TrainedModel,
    TrainingRecipe,
    TrainingRun,
)

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
PROJECTION_INITS = ("default", "orthogonal-scaled", "centered-unit")


@dataclass(frozen=True)
class LoRASpec(Section):
    """The paper's LoRA, the same for the retriever and the reranker: r 16, alpha 32, dropout
    0.05 on every attention and MLP projection, bias none (PEFT FEATURE_EXTRACTION)."""

    purpose: ClassVar[str] = "recipe"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: tuple[str, ...] = LORA_TARGETS


@dataclass(frozen=True)
class FP8Base(Section):
    """fp8: run the frozen base's projections (q/k/v, o, gate/up and down of every layer) as FP8
    products (harness.neural.fast.fp8_linear): the weights in e4m3 with a scale per output
    channel, quantized once from the bf16 weights, which are then dropped; the activations in
    e4m3 with a scale per token, on the fly; torch._scaled_mm with bf16 output; the gradient to
    the input (LoRA trains above it) through the FP8 weight, at bf16's precision. Not the paper's:
    every product rounds its operands to 3 mantissa bits, so the model computes another function,
    in training (the adapter learns over the FP8 base) and in encoding and scoring. A recipe
    setting, as bf16 is: it decides the weights, so the model card's recipe records it and it
    enters the model's id when on; the run's config records it, its embeddings are cached apart,
    and the pages name it. It runs only in the speed layer's fused decoder (fast_training to train,
    fast_path to encode, prefix_reuse to score; one process; a Llama, Mistral, Qwen2 or Qwen3
    backbone) on a CUDA GPU of compute capability 8.9 or newer; asked for anywhere else it is a
    one-line error, never a bf16 run in its place. Off (the default): bf16 products, as before."""

    purpose: ClassVar[str] = "recipe"
    fp8: bool = False


@dataclass(frozen=True)
class RetrieverRecipe(ContrastiveRecipe):
    """The SADIRI-v2 retriever recipe (Eq. 1): a decoder LLM (the paper's: Qwen3 0.6B/1.7B/4B/8B
    and Mistral-Nemo-Base-2407) with LoRA, mean pooling over the final hidden states of the
    document's tokens as the tokenizer gives them (its own special tokens, e.g. a Llama/Mistral
    BOS; Qwen adds none; no EOS is appended), a learnable linear projection with bias to
    D = E / 2, dot-product score, SupCon tau = 0.01, lr 1e-5, 1 epoch; only LoRA and the
    projection train.

    authors_per_batch is the global batch: the paper's 16 authors per GPU on 4 GPUs, 64 in all
    (in-batch negatives over all 64: the embeddings are gathered across processes). One GPU runs
    the same global batch, with `--set micro_batch=16` if it does not fit at once (exact).

    projection_init: the paper leaves it open. "default" is PyTorch's Linear init; with the
    paper's dot product and tau 0.01 the first logits are then the LLM's huge hidden-state dot
    products / 0.01 (README: Training). "orthogonal-scaled" draws an orthogonal projection whose
    outputs start with unit-scale rows for unit-scale inputs divided by sqrt(E), and a zero bias.
    "centered-unit" fits the initial projection to the backbone's pooled states of a fixed sample
    of the training documents (the first `init_sample` by id): orthogonal rows scaled so the
    projected, centred sample has mean norm 1, and a bias that subtracts the sample mean. LLM
    states share one large component (untrained Qwen2.5-0.5B: norm ~117, mean pairwise cosine
    0.85), so without centring every pair's dot product / 0.01 is huge and nearly the same; this
    init starts the paper's dot-product loss where a cosine model at tau 0.01 starts.
    """

    backbone: str = "Qwen/Qwen3-0.6B"
    max_length: int = 512
    similarity: str = "dot"  # the paper's; "cosine" normalises the projected vectors (a variant)
    projection_init: str = "default"
    init_sample: int = 256  # documents that fit a "centered-unit" projection (the first by id)
    tau: float = 0.01
    lr: float = 1e-5
    authors_per_batch: int = 64
    epochs: int = 1
    hard_negatives: bool = True
    project_for_clustering: bool = True  # random projection to K = D // 3 before k-means

    def __post_init__(self):
        super().__post_init__()
        if self.similarity not in ("dot", "cosine"):
            raise ValueError(f"similarity must be 'dot' or 'cosine', got {self.similarity!r}")
        if self.projection_init not in PROJECTION_INITS:
            raise ValueError(
                f"projection_init must be one of {', '.join(PROJECTION_INITS)}, got {self.projection_init!r}"
            )


@dataclass(frozen=True)
class RetrieverTrainingRun(Section):
    """fast_training: train through the speed layer's fused, packed LoRA step
    (harness.neural.fast.lora_train) instead of the Hugging Face forward: the same loss and
    gradients (tested in fp32; LoRA dropout draws its own masks). Where it cannot run (under
    torchrun, or a backbone outside the Llama/Mistral/Qwen2/Qwen3 families) the training says so
    and takes the plain path; false always takes the plain path.

    cuda_graphs: on the fast step, run the layers' forward and backward as CUDA graphs, one per
    padded pack shape (harness.neural.fast.graphed_train), where the step allows: CUDA,
    grad_checkpointing false (a recomputation reads the RNG state, which a graph cannot) and no
    fp8 (not yet run under a capture); false launches them one by one. The same function up to the products' kernel choice."""

    purpose: ClassVar[str] = "training run"
    fast_training: bool = True
    cuda_graphs: bool = True


@dataclass(frozen=True)
class RetrieverConfig(RetrieverRecipe, LoRASpec, FP8Base, TrainedModel, RetrieverTrainingRun, ContrastiveTraining):
    """The SADIRI-v2 retriever: its recipe and LoRA, how to run them, how to encode.

    backbone: hub id or local folder (a GGUF folder works); the default is the paper's smallest.
    model: a folder written by `aa-harness train sadiri-v2-retriever` (its `model/` subfolder);
        None ranks with the untrained backbone: mean pooling, no projection, cosine.
    """


STRATEGY_CODES = ("q", "p", "r")  # n(d_q): near the query; n(d_q+): near the positive; n(r): random
STRATEGY_LABELS = {"q": "n(d_q)", "p": "n(d_q+)", "r": "n(r)"}
NEGATIVE_SAMPLING = ("sampled", "nearest")


def parse_strategy(text: str) -> tuple[str, ...]:
    """ "q+p+r" -> ("q", "p", "r") in canonical order; any non-empty combination of q, p, r."""
    parts = [p.strip() for p in text.split("+") if p.strip()]
    if not parts or any(p not in STRATEGY_CODES for p in parts) or len(set(parts)) != len(parts):
        raise ValueError(
            f"strategy must be a non-empty '+'-joined subset of q, p, r (n(d_q), n(d_q+), n(r)); got {text!r}"
        )
    return tuple(c for c in STRATEGY_CODES if c in parts)


def strategy_label(text: str) -> str:
    return " + ".join(STRATEGY_LABELS[c] for c in parse_strategy(text))


@dataclass(frozen=True)
class RerankerRecipe(TrainingRecipe):
    """The SADIRI-v2 reranker recipe (Eq. 3): a decoder LLM with the retriever's LoRA (the paper:
    Mistral-Nemo-Base-2407) reads query U+2980 candidate, each side truncated to 512 tokens
    (BOS before, the tokenizer's EOS after, outside that budget), and scores the pair as W . h,
    h the final hidden state of the pair's last token (the EOS), W a learned 1 x E projection.

    Training: for each author (10% of the training authors) one document is the query and the
    other the positive, with m = 12 negatives by other authors drawn by `strategy` (q: from the
    query's neighbourhood n(d_q), p: from the positive's n(d_q+), r: at random, by
    all-mpnet-base-v2 cosine; m split evenly). `negative_sampling="sampled"` draws them at
    random (seeded, anew each epoch) from the `negative_pool` nearest documents of other
    authors; "nearest" takes the nearest ones (this harness's earlier behaviour). The loss of
    Eq. 2 with tau = 1.0 over the 1 + m candidates; lr 1e-4, Adam, bf16.

    Global batch: the paper's one query per GPU on 4 GPUs, so `queries_per_batch` = 4, and
    gradient accumulation 10: an optimizer step sees 40 queries. One GPU runs the same global
    batch (four queries, one forward each), so the update is the paper's.
    """

    backbone: str = "mistralai/Mistral-Nemo-Base-2407"
    max_query_tokens: int = 512
    max_candidate_tokens: int = 512
    delimiter: str = "\u2980"
    strategy: str = "q+p+r"
    negatives: int = 12
    negative_sampling: str = "sampled"
    negative_pool: int = 64  # K: the neighbourhood sampled from
    author_fraction: float = 0.1
    tau: float = 1.0
    lr: float = 1e-4
    queries_per_batch: int = 4
    grad_accumulation: int = 10
    epochs: int = 1
    sbert_model: str = "sentence-transformers/all-mpnet-base-v2"

    def __post_init__(self):
        super().__post_init__()
        parse_strategy(self.strategy)
        if self.negatives < len(parse_strategy(self.strategy)):
            raise ValueError("need at least one negative per chosen category")
        if not 0 < self.author_fraction <= 1:
            raise ValueError("author_fraction must be in (0, 1]")
        if self.negative_sampling not in NEGATIVE_SAMPLING:
            raise ValueError(
                f"negative_sampling must be one of {', '.join(NEGATIVE_SAMPLING)}, got {self.negative_sampling!r}"
            )
        if self.negative_pool < self.negatives or self.queries_per_batch < 1:
            raise ValueError("negative_pool must be >= negatives, and queries_per_batch >= 1")


@dataclass(frozen=True)
class RerankerInference(Section):
    purpose: ClassVar[str] = "inference"
    score_max_tokens: int = 65536  # token budget of a scoring batch
    prefix_reuse: bool = True  # encode each query once and reuse its keys/values for its candidates


@dataclass(frozen=True)
class RerankerTrainingRun(Section):
    """fast_training: score each training query's 1 + m pairs through the speed layer's
    shared-prefix step (harness.neural.fast.prefix_train) instead of 1 + m concatenated pairs
    through the Hugging Face forward: the query's tokens (BOS query U+2980, as `pair_parts` splits
    the pair) run once and every candidate (candidate EOS) attends to their keys and values, in one
    packed forward through the fused LoRA layers; at 512 + 512 tokens and m = 12, 1.86x fewer
    tokens. The same scores, loss and gradients (tested in fp32; LoRA dropout draws its own masks).
    Where it cannot run (under torchrun, or a backbone outside the Llama/Mistral/Qwen2/
    Qwen3 families) the training says so and takes the plain path; false always takes the plain
    path.

    cuda_graphs: on the fast step, run the layers' forward and backward as CUDA graphs, one per
    padded pack shape (harness.neural.fast.graphed_train), where the step allows: CUDA,
    grad_checkpointing false and no fp8; false launches them one by one. The same function up to the
    products' kernel choice."""

    purpose: ClassVar[str] = "training run"
    fast_training: bool = True
    cuda_graphs: bool = True


@dataclass(frozen=True)
class RerankerConfig(
    RerankerRecipe, LoRASpec, FP8Base, TrainedModel, RerankerTrainingRun, TrainingRun, RerankerInference, Runtime
):
    """The SADIRI-v2 reranker: its recipe and LoRA, how to run them, how to score.

    model: a folder written by `aa-harness train sadiri-v2-reranker` (its `model/` subfolder).
    """


def describe_run(config: dict) -> str:
    """A reranker run's label on the report pages: its negatives (config: a run's recorded dict)."""
    strategy = config.get("strategy")
    if not strategy:
        return ""
    label = " + ".join(STRATEGY_LABELS.get(x, x) for x in strategy.split("+"))
    if config.get("negative_sampling", "nearest") == "sampled" and set(strategy.split("+")) & {"q", "p"}:
        label += f", sampled from the {config.get('negative_pool')} nearest"
    if config.get("fp8"):
        label += "; frozen base in FP8"
    return label


REPORT_NOTE = (
    "Negatives the reranker was trained on: n(d_q) nearest the query, n(d_q+) nearest the positive, n(r) "
    "random (sentence-transformers/all-mpnet-base-v2 cosine); m = 12 split evenly over the chosen kinds."
)
