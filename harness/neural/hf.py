"""Loading Hugging Face backbones by hub id or local folder (GGUF folders included)."""
from __future__ import annotations

from pathlib import Path

import torch

from harness.neural.models import resolve_model


def _gguf_file(path: str) -> str | None:
    folder = Path(path)
    if folder.is_dir() and not (folder / "config.json").exists():
        ggufs = sorted(folder.glob("*.gguf"))
        if len(ggufs) == 1:
            return ggufs[0].name
    return None


def load_tokenizer(ref: str):
    from transformers import AutoTokenizer

    path = resolve_model(ref)
    gguf = _gguf_file(path)
    tok = AutoTokenizer.from_pretrained(path, **({"gguf_file": gguf} if gguf else {}))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_backbone(ref: str, dtype: torch.dtype = torch.float32):
    """AutoModel (the bare encoder/decoder, no LM head) and its tokenizer.

    The dtype is explicit (float32 unless asked): weights saved in half precision would
    otherwise load as half and meet float32 activations on the CPU.
    """
    from transformers import AutoModel

    path = resolve_model(ref)
    gguf = _gguf_file(path)
    kwargs = {"gguf_file": gguf} if gguf else {}
    model = AutoModel.from_pretrained(path, dtype=dtype, **kwargs)
    return model, load_tokenizer(ref), path
