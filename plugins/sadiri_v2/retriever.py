"""The SADIRI-v2 retriever model, its saved form (a standard PEFT adapter + projection + JSON), and training."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from harness.api import (
    EncoderSystem,
    HarnessError,
    TokenEncoder,
    atomic_write_text,
    checkpoint_backbone,
    load_backbone,
    train_system,
    weights_fingerprint,
)
from plugins.sadiri_v2.config import LoRASpec, RetrieverConfig

MODEL_JSON = "aa_model.json"


class LLMRetriever(TokenEncoder):
    """v(d) = W mean(h_1..h_L) + b (Eq. 1); without a projection: the untrained backbone, cosine."""

    def __init__(
        self,
        backbone,
        tokenizer,
        max_length: int,
        projection: torch.nn.Linear | None,
        identity: str,
        backbone_ref: str = "",
        similarity: str = "dot",
    ):
        super().__init__(backbone, tokenizer, max_length)
        self.backbone_ref = backbone_ref
        self.projection = projection
        self.similarity = similarity if projection is not None else "cosine"
        self._identity = identity

    def finish(self, pooled: torch.Tensor) -> torch.Tensor:
        if self.projection is None:
            return pooled
        return self.projection(pooled.to(self.projection.weight.dtype))

    def identity(self) -> str:
        return self._identity

    def enable_gradient_checkpointing(self) -> bool:
        return checkpoint_backbone(
            self.backbone.get_base_model() if hasattr(self.backbone, "get_base_model") else self.backbone
        )


def _dtype() -> torch.dtype:
    return torch.bfloat16 if torch.cuda.is_available() else torch.float32


def lora_config(config: LoRASpec):
    """The PEFT LoRA config of the spec both SADIRI-v2 systems share."""
    from peft import LoraConfig, TaskType

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.lora_targets),
        bias="none",
        task_type=TaskType.FEATURE_EXTRACTION,
    )


def new_projection(hidden: int, init: str = "default") -> torch.nn.Linear:
    """The E -> E/2 projection with bias (Eq. 1). "default": PyTorch's Linear init (entries
    U(-1/sqrt(E), 1/sqrt(E)), so |Wx|^2 ~ |x|^2 / 6); "orthogonal-scaled": orthonormal rows times
    1/sqrt(E) and a zero bias (|Wx|^2 ~ |x|^2 / (2E)), so the first dot products / tau stay small."""
    projection = torch.nn.Linear(hidden, hidden // 2, bias=True)
    if init == "orthogonal-scaled":
        with torch.no_grad():
            torch.nn.init.orthogonal_(projection.weight, gain=hidden**-0.5)
            projection.bias.zero_()
    return projection


def fit_centered_unit(model: LLMRetriever, texts: list[str]) -> None:
    """Make `model.projection` map the pooled states of `texts` to vectors of mean norm 1 around 0:
    orthogonal rows, scaled by sqrt(2)/(mean distance of the states from their mean), and a
    bias of -W·mean. Deterministic given the seed and the texts (every DDP rank computes the same)."""
    from harness.api import embed_features, pick_device

    projection, model.projection = model.projection, None  # pooled states, no projection
    try:
        device = pick_device("auto")
        model.to(device)
        states = torch.from_numpy(embed_features(model, model.featurize(texts), device)).double()
    finally:
        model.projection = projection
    mean = states.mean(0)
    spread = (states - mean).norm(dim=1).mean()
    with torch.no_grad():
        weight = torch.empty_like(projection.weight, dtype=torch.float64)
        torch.nn.init.orthogonal_(weight)  # rows orthonormal: |W v| ~ |v| sqrt(D / E) = |v| / sqrt(2)
        weight *= (2**0.5) / float(spread)
        projection.weight.copy_(weight.to(projection.weight.dtype))
        projection.bias.copy_((-(weight @ mean)).to(projection.bias.dtype))


def new_for_training(config: RetrieverConfig, documents=()) -> LLMRetriever:
    from peft import get_peft_model

    base, tokenizer, path = load_backbone(config.backbone, dtype=_dtype())
    hidden = base.config.hidden_size
    model = get_peft_model(base, lora_config(config))  # freezes the base, adds trainable LoRA
    projection = new_projection(hidden, config.projection_init)
    retriever = LLMRetriever(
        model, tokenizer, config.max_length, projection, f"untrained|{path}", config.backbone, config.similarity
    )
    if config.projection_init == "centered-unit":
        sample = sorted(documents, key=lambda d: d.documentID)[: config.init_sample]
        if len(sample) < 2:
            raise HarnessError("projection_init=centered-unit needs training documents to fit the projection on")
        fit_centered_unit(retriever, [d.fullText for d in sample])
    return retriever


def load(config: RetrieverConfig) -> LLMRetriever:
    """The untrained backbone (config.model None) or a trained retriever folder."""
    if config.model is None:
        base, tokenizer, path = load_backbone(config.backbone, dtype=_dtype())
        return LLMRetriever(base, tokenizer, config.max_length, None, f"llm-mean|{weights_fingerprint(path) or path}")
    from peft import PeftModel
    from safetensors.torch import load_file

    folder = Path(config.model)
    meta_path = folder / MODEL_JSON
    if not meta_path.is_file():
        raise HarnessError(f"{folder}: not a trained sadiri-v2-retriever folder ({MODEL_JSON} missing)")
    meta = json.loads(meta_path.read_text())
    base, tokenizer, _ = load_backbone(config.backbone, dtype=_dtype())
    if base.config.hidden_size != meta["hidden_size"]:
        raise HarnessError(
            f"{folder} was trained on {meta['backbone']} (hidden {meta['hidden_size']}); "
            f"backbone {config.backbone} has hidden {base.config.hidden_size}"
        )
    model = PeftModel.from_pretrained(base, folder / "adapter")
    weights = load_file(folder / "projection.safetensors")
    projection = torch.nn.Linear(meta["hidden_size"], meta["dim"], bias=True)
    projection.load_state_dict(weights)
    ident = hashlib.sha256((weights_fingerprint(str(folder)) or str(folder)).encode()).hexdigest()
    return LLMRetriever(
        model,
        tokenizer,
        meta["max_length"],
        projection,
        f"sadiri-v2|{config.backbone}|{ident}",
        config.backbone,
        meta.get("similarity", "dot"),
    )


def save(model: LLMRetriever, folder: Path) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.backbone.save_pretrained(folder / "adapter")
    proj = model.projection
    save_file(
        {k: v.detach().float().cpu().contiguous() for k, v in proj.state_dict().items()},
        folder / "projection.safetensors",
    )
    atomic_write_text(
        folder / MODEL_JSON,
        json.dumps(
            {
                "system": "sadiri-v2-retriever",
                "backbone": model.backbone_ref,
                "hidden_size": proj.in_features,
                "dim": proj.out_features,
                "max_length": model.max_length,
                "pooling": "mean",
                "similarity": model.similarity,
            },
            indent=1,
        ),
    )


def check_fp8(config, fused: bool, setting: str) -> None:
    """With fp8: the device runs FP8 products and the fused path that runs them is on (`setting`),
    else one line, before any model loads."""
    if config.fp8:
        from harness.api import pick_device, require_fp8

        require_fp8(pick_device(config.device))
        if not fused:
            raise HarnessError(
                f"fp8=true: FP8 products run in the speed layer's fused decoder only; drop --set {setting}=false"
            )


class RetrieverSystem(EncoderSystem):
    def __init__(self, config: RetrieverConfig):
        check_fp8(config, config.fast_path, "fast_path")
        model = load(config)
        super().__init__(
            model, config, describe={"backbone": config.backbone, "trained": config.model is not None}, fp8=config.fp8
        )


def train(config: RetrieverConfig, documents, out_dir: Path, embed_batch=None) -> Path:
    check_fp8(config, config.fast_training and embed_batch is None, "fast_training")
    if embed_batch is None and config.fast_training:  # the fused step, else (DDP, other families) the plain one
        from harness.api import default_embed_batch, fused_embed_batch

        embed_batch = fused_embed_batch(
            checkpoint=config.grad_checkpointing,
            fallback=default_embed_batch,
            fp8=config.fp8,
            graphs=config.cuda_graphs,
        )
    return train_system(
        lambda: new_for_training(config, documents), config, documents, out_dir, save, embed_batch=embed_batch
    )
