"""Tiny models built from configs (no download), saved as ordinary Hugging Face folders: the
product's own builders (harness.neural.tiny_models). When the Qwen3 tokenizer has been fetched
into the model cache, the tiny Qwen3 uses it instead of the BPE trained on the demo texts."""

from __future__ import annotations

from pathlib import Path

from harness.neural import tiny_models
from harness.neural.tiny_models import bpe_tokenizer, tiny_bert, wordpiece_tokenizer

__all__ = ["bpe_tokenizer", "tiny_bert", "tiny_qwen3", "wordpiece_tokenizer"]

MODELS = Path(__file__).resolve().parent.parent / ".cache" / "models"


def _shared_tokenizer() -> Path | None:
    from harness.neural.models import ModelNotFoundError, resolve_model

    try:  # found the way the CLI finds models ($AA_HARNESS_MODEL_DIR, then .cache/models), never the hub
        shared = Path(resolve_model("qwen3-tokenizer", hub=False))
    except ModelNotFoundError:
        shared = MODELS / "qwen3-tokenizer"
    return shared if (shared / "tokenizer.json").is_file() else None


def tiny_qwen3(folder: Path, seed: int = 0) -> Path:
    return tiny_models.tiny_qwen3(folder, seed, tokenizer=_shared_tokenizer())
