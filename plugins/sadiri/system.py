from __future__ import annotations

import json
from pathlib import Path

from harness.api import EncoderSystem, TokenEncoder, atomic_write_text, load_backbone, train_system, weights_fingerprint
from plugins.sadiri.config import SADIRIConfig


class SADIRIEncoder(TokenEncoder):
    similarity = "cosine"

    def __init__(self, backbone, tokenizer, max_length: int, source: str):
        super().__init__(backbone, tokenizer, max_length)
        self.source = source

    def identity(self) -> str:
        return f"sadiri|mean|{weights_fingerprint(self.source) or self.source}"


def build(config: SADIRIConfig) -> SADIRIEncoder:
    ref = config.model or config.backbone
    backbone, tokenizer, path = load_backbone(ref)
    return SADIRIEncoder(backbone, tokenizer, config.max_length, path)


def save(model: SADIRIEncoder, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    model.backbone.save_pretrained(folder)
    model.tokenizer.save_pretrained(folder)
    atomic_write_text(
        folder / "aa_model.json",
        json.dumps(
            {"system": "sadiri", "pooling": "mean", "similarity": "cosine", "max_length": model.max_length}, indent=1
        ),
    )


class SADIRISystem(EncoderSystem):
    def __init__(self, config: SADIRIConfig):
        model = build(config)
        where = {} if config.model else {"model_path": model.source}  # a trained model is recorded by content hash
        super().__init__(model, config, describe={**where, "trained": config.model is not None})


def train(config: SADIRIConfig, documents, out_dir: Path) -> Path:
    return train_system(lambda: build(config), config, documents, out_dir, save)
