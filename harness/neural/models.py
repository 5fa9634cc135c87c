"""Resolve a model reference to something a loader can open, knowing the machine may be offline.

Configs keep the hub id (e.g. "sentence-transformers/all-mpnet-base-v2") so results stay
comparable across machines. `resolve_model` looks, in this order:

1. the reference itself, when it is a local folder;
2. ``$AA_HARNESS_MODEL_DIR/<last part of the id>`` (a folder of local copies);
3. ``<cache>/models/<last part>`` (harness.foundation.locations: $AA_HARNESS_CACHE or the per-user cache);
4. the local Hugging Face cache (a snapshot downloaded earlier);
5. the hub, only when it answers within a few seconds (and never with ``HF_HUB_OFFLINE=1``).

A ``tiny:ARCH:SEED`` reference is built from a config instead (harness.neural.tiny_models).

When all fail it raises `ModelNotFoundError`: one line naming the id, where it looked, how to
download it and how to point at a local copy -- instead of minutes of retries and a traceback.
Torch-free: tests and `aa-harness` share it without importing a model library.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from harness.errors import HarnessError
from harness.foundation import locations
from harness.foundation.locations import MODEL_DIR_ENV

HUB_TIMEOUT_ENV = "AA_HARNESS_HUB_TIMEOUT"  # seconds for the hub probe (default 5)


class ModelNotFoundError(HarnessError):
    """No local copy of a model and no reachable hub."""


def model_dirs() -> list[Path]:
    """Folders of local copies, in lookup order: $AA_HARNESS_MODEL_DIR, then <cache>/models."""
    return locations.model_dirs()


def _hf_cache_snapshot(ref: str) -> str | None:
    """The newest snapshot folder of `ref` in the local Hugging Face cache, read from disk only."""
    if "/" not in ref:
        return None
    snapshots = locations.hf_hub_cache() / f"models--{ref.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    ref_file = snapshots.parent / "refs" / "main"
    if ref_file.is_file():
        main = snapshots / ref_file.read_text().strip()
        if main.is_dir() and any(main.iterdir()):
            return str(main)
    found = sorted((p for p in snapshots.iterdir() if p.is_dir() and any(p.iterdir())), key=lambda p: p.stat().st_mtime)
    return str(found[-1]) if found else None


def hub_reachable(ref: str, timeout: float | None = None) -> bool:
    """Whether the hub answers for `ref` within `timeout` seconds (False offline or with HF_HUB_OFFLINE)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    if timeout is None:
        timeout = float(os.environ.get(HUB_TIMEOUT_ENV, "5"))
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        req = urllib.request.Request(f"{endpoint}/api/models/{ref}", method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


def resolve_model(ref: str, *, hub: bool = True) -> str:
    """A local folder for `ref`, or `ref` itself when only the hub has it and the hub answers.

    hub=False never contacts the hub (tests). Raises ModelNotFoundError otherwise. A `tiny:ARCH:SEED`
    reference is a tiny model built from a config (harness.neural.tiny_models), no download.
    """
    if ref.startswith("tiny:"):
        from harness.neural.tiny_models import tiny_folder

        return tiny_folder(ref)
    path = Path(ref).expanduser()
    if path.is_dir():
        return str(path)
    name = ref.rstrip("/").split("/")[-1]
    looked = []
    for folder in model_dirs():
        candidate = folder / name
        if candidate.is_dir():
            return str(candidate)
        looked.append(str(candidate))
    snapshot = _hf_cache_snapshot(ref)
    if snapshot:
        return snapshot
    looked.append("the Hugging Face cache")
    if hub and "/" in ref and hub_reachable(ref):
        # Keep the library's own retries short if the connection drops later.
        os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
        os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "30")
        return ref
    looked.append("the hub (not reachable)" if hub and "/" in ref else "nowhere else (not a hub id)")
    fetch = f"with internet, `huggingface-cli download {ref}` (or let the run download it); " if "/" in ref else ""
    raise ModelNotFoundError(
        f"model {ref!r} not found; looked in {', '.join(looked)}. Get it {fetch}or copy it to a folder "
        f"and point ${MODEL_DIR_ENV} at the folder that holds {name}/"
    )


_FINGERPRINTS: dict[tuple, str | None] = {}


def weights_fingerprint(path: str, *, limit_bytes: int = 1 << 34) -> str | None:
    """sha256 over a local model folder's weight files (names and bytes); None for a hub id.
    Kept per process while the files' sizes and times stay the same: one load asks for it more
    than once (a GGUF's dequantized copy, then the model's identity)."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".safetensors", ".bin", ".gguf", ".pt") and p.is_file())
    key = (str(folder.resolve()), limit_bytes, tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = _hash_files(folder, files, limit_bytes)
    return _FINGERPRINTS[key]


def _hash_files(folder: Path, files: list[Path], limit_bytes: int) -> str | None:
    h = hashlib.sha256()
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
