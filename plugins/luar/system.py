from __future__ import annotations

import json
from pathlib import Path

import torch

from harness.api import (
    EncoderSystem,
    HarnessError,
    atomic_write_text,
    load_backbone,
    load_tokenizer,
    resolve_model,
    train_system,
    weights_fingerprint,
)
from plugins.luar.config import LUARConfig
from plugins.luar.model import LUAR, released_state_dict


def _read_state(folder: Path) -> dict[str, torch.Tensor]:
    if (folder / "model.safetensors").is_file():
        from safetensors.torch import load_file

        return load_file(folder / "model.safetensors")
    if (folder / "pytorch_model.bin").is_file():
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    raise HarnessError(f"{folder}: no model.safetensors or pytorch_model.bin")


def _fetch(ref: str) -> Path:
    path = Path(resolve_model(ref))
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download  # a released checkpoint by hub id

    return Path(snapshot_download(ref))


def load_released(folder: Path, backbone: str, chunk_tokens: int = 32, max_chunks: int = 16) -> LUAR:
    """A checkpoint in the released layout: config.json (embedding_size) + weights with transformer.*/linear.*."""
    from transformers import AutoConfig, AutoModel

    meta = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
    transformer = AutoModel.from_config(AutoConfig.from_pretrained(resolve_model(backbone)))
    model = LUAR(
        transformer,
        load_tokenizer(backbone),
        meta.get("embedding_size", 512),
        chunk_tokens,
        max_chunks,
        identity=f"luar|{weights_fingerprint(str(folder)) or folder}|{chunk_tokens}x{max_chunks}",
    )
    missing, unexpected = model.load_state_dict(released_state_dict(_read_state(folder)), strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise HarnessError(
            f"{folder}: not a LUAR checkpoint for backbone {backbone} "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model


def build(config: LUARConfig) -> LUAR:
    if config.model:
        return load_released(Path(config.model), config.backbone, config.chunk_tokens, config.max_chunks)
    if config.checkpoint:
        return load_released(_fetch(config.checkpoint), config.backbone, config.chunk_tokens, config.max_chunks)
    transformer, tokenizer, path = load_backbone(config.backbone)
    return LUAR(
        transformer,
        tokenizer,
        config.embedding_size,
        config.chunk_tokens,
        config.max_chunks,
        identity=f"luar-fresh|{weights_fingerprint(path) or path}|seed{config.seed}",
    )


def save(model: LUAR, folder: Path) -> None:
    """The released layout, so a trained model loads like rrivera1849/LUAR-MUD."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().float().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, folder / "model.safetensors")
    atomic_write_text(
        folder / "config.json",
        json.dumps(
            {
                "model_type": "LUAR",
                "embedding_size": model.linear.out_features,
                "chunk_tokens": model.chunk_tokens,
                "max_chunks": model.max_chunks,
            },
            indent=1,
        ),
    )


class LUARSystem(EncoderSystem):
    def __init__(self, config: LUARConfig):
        model = build(config)
        super().__init__(
            model, config, describe={"backbone": config.backbone, "checkpoint": config.model or config.checkpoint}
        )


def train(config: LUARConfig, documents, out_dir: Path) -> Path:
    return train_system(lambda: build(config), config, documents, out_dir, save)
