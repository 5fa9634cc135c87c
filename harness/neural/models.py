"""Resolve a model reference: a local folder, a copy under $AA_HARNESS_MODEL_DIR, or a hub id.

Configs keep the hub id (e.g. "sentence-transformers/all-mpnet-base-v2") so results stay
comparable across machines; offline machines point AA_HARNESS_MODEL_DIR at a folder of
local copies named by the id's last part (what ../shared/tools/fetch_pretrained.py builds).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

MODEL_DIR_ENV = "AA_HARNESS_MODEL_DIR"


def resolve_model(ref: str) -> str:
    if Path(ref).expanduser().is_dir():
        return str(Path(ref).expanduser())
    local = os.environ.get(MODEL_DIR_ENV)
    if local:
        candidate = Path(local) / ref.rstrip("/").split("/")[-1]
        if candidate.is_dir():
            return str(candidate)
    return ref  # a hub id: the library downloads it (needs the hub)


def weights_fingerprint(path: str, *, limit_bytes: int = 1 << 34) -> str | None:
    """sha256 over a local model folder's weight files (names and bytes); None for a hub id."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".safetensors", ".bin", ".gguf", ".pt") and p.is_file())
    read = 0
    for p in files:
        h.update(str(p.relative_to(folder)).encode() + b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
                read += len(chunk)
                if read > limit_bytes:
                    return None
    return h.hexdigest()
