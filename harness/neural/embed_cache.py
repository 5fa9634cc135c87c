"""On-disk embedding cache keyed by model identity, max length and the text's sha256.

A document that appears in several seeds or collections is encoded once; a crashed run
resumes from what was cached, since each shard is written atomically as soon as it is done.
Layout: <root>/<model key>/len-<max_length>/shard-<n>.npz (arrays `sha` and `vec`).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from harness import locations
from harness.atomic import atomic_open


def cache_root() -> Path:
    """$AA_HARNESS_CACHE, else the per-user cache folder (harness.locations)."""
    return locations.cache_dir()


def default_cache_root() -> Path:
    return cache_root() / "embeddings"


def model_key(*parts: str) -> str:
    """A short stable folder name for a model identity (hub id + revision, or weight hashes)."""
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


class EmbeddingCache:
    def __init__(self, root: Path, key: str, max_length: int, *, writer: bool = True):
        """writer False: new vectors stay in memory (the other ranks of a torchrun job)."""
        self.folder = Path(root) / key / f"len-{max_length}"
        self.writer = writer
        self._mem: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._mem is None:
            self._mem = {}
            for shard in sorted(self.folder.glob("shard-*.npz")):
                with np.load(shard) as z:
                    self._mem.update(zip(z["sha"].tolist(), z["vec"]))
        return self._mem

    def get(self, shas: Iterable[str]) -> dict[str, np.ndarray]:
        mem = self._load()
        return {s: mem[s] for s in shas if s in mem}

    def put(self, shas: Sequence[str], vecs: np.ndarray) -> None:
        if not len(shas):
            return
        mem = self._load()
        if not self.writer:
            mem.update(zip(shas, np.asarray(vecs, dtype=np.float32)))
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        n = len(list(self.folder.glob("shard-*.npz")))
        with atomic_open(self.folder / f"shard-{n:06d}.npz", "wb") as f:
            np.savez(f, sha=np.asarray(shas), vec=np.asarray(vecs, dtype=np.float32))
        mem.update(zip(shas, np.asarray(vecs, dtype=np.float32)))

    def __len__(self) -> int:
        return len(self._load())


def cached_encode(texts: Sequence[str], cache: EmbeddingCache | None,
                  encode: Callable[[list[str]], np.ndarray], *, flush_every: int = 4096) -> np.ndarray:
    """Vectors for `texts`, encoding only texts the cache lacks (each distinct text once),
    in chunks of `flush_every` that are cached as they finish."""
    shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    have = cache.get(set(shas)) if cache is not None else {}
    todo: dict[str, str] = {}
    for s, t in zip(shas, texts):
        if s not in have and s not in todo:
            todo[s] = t
    keys = list(todo)
    for start in range(0, len(keys), flush_every):
        part = keys[start:start + flush_every]
        vecs = np.asarray(encode([todo[s] for s in part]), dtype=np.float32)
        if cache is not None:
            cache.put(part, vecs)
        have.update(zip(part, vecs))
    return np.stack([have[s] for s in shas]) if shas else np.zeros((0, 0), dtype=np.float32)
