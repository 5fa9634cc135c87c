"""On-disk embedding cache keyed by model identity, max length and the text's sha256.

A document that appears in several seeds or collections is encoded once; a crashed run
resumes from what was cached, since each shard is written atomically as soon as it is done.
Layout: <root>/<model key>/len-<max_length>/shard-<n>.npz (arrays `sha`, `vec` and `checksum`).

A shard is trusted only when its checksum, an HMAC under the user's key (harness.foundation.user_key) over
the model key, the max length, the texts' hashes and the vectors' bytes, matches: a shard edited
(and resealed), truncated, copied from another model, max length or user, or written before
checksums is set aside as `shard-<n>.npz.refused` and its texts are encoded again. Shards load with allow_pickle=False, so a shard cannot run code.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from harness.foundation import locations
from harness.foundation.atomic import atomic_open

log = logging.getLogger(__name__)


def shard_checksum(key: str, max_length: int, shas: np.ndarray, vecs: np.ndarray) -> str:
    from harness.foundation.user_key import sign

    h = hashlib.sha256()
    for s in shas.tolist():
        h.update(str(s).encode() + b"\0")
    return sign(key, str(max_length), h.hexdigest(), str(vecs.shape), np.ascontiguousarray(vecs, dtype="<f4").tobytes())


def cache_root() -> Path:
    """$AA_HARNESS_CACHE, else the per-user cache folder (harness.foundation.locations)."""
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
        self.key, self.max_length = key, max_length
        self.writer = writer
        self._mem: dict[str, np.ndarray] | None = None

    def _load(self) -> dict[str, np.ndarray]:
        if self._mem is None:
            self._mem = {}
            for shard in sorted(self.folder.glob("shard-*.npz")):
                entries = self._read(shard)
                if entries is None:
                    self._set_aside(shard)
                else:
                    self._mem.update(entries)
        return self._mem

    def _read(self, shard: Path):
        """The shard's (sha, vector) pairs, or None when it is not a whole shard of this model and length."""
        try:
            with np.load(shard, allow_pickle=False) as z:
                shas, vecs, checksum = z["sha"], z["vec"], z["checksum"]
                if (
                    shas.ndim != 1
                    or vecs.ndim != 2
                    or len(shas) != len(vecs)
                    or vecs.dtype != np.float32
                    or checksum.shape != ()
                    or shard_checksum(self.key, self.max_length, shas, vecs) != str(checksum)
                    or not np.isfinite(vecs).all()
                ):
                    return None
                return list(zip(shas.tolist(), vecs))
        except Exception as e:  # not a zip, truncated, a pickle, a field missing: not a shard to trust
            log.debug("%s: unreadable embedding shard (%s)", shard, e)
            return None

    def _set_aside(self, shard: Path) -> None:
        log.warning(
            "%s: embedding cache shard does not match its checksum; set aside as %s.refused, its texts "
            "are encoded again",
            shard,
            shard.name,
        )
        if not self.writer:
            return
        try:
            os.replace(shard, shard.with_name(shard.name + ".refused"))
        except OSError as e:
            log.debug("could not set %s aside: %s", shard, e)

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
        n = len(list(self.folder.glob("shard-*.npz*")))  # set-aside shards keep their numbers
        sha_arr, vec_arr = np.asarray(shas, dtype=str), np.ascontiguousarray(vecs, dtype=np.float32)
        checksum = np.asarray(shard_checksum(self.key, self.max_length, sha_arr, vec_arr))
        with atomic_open(self.folder / f"shard-{n:06d}.npz", "wb") as f:
            np.savez(f, sha=sha_arr, vec=vec_arr, checksum=checksum)
        mem.update(zip(shas, np.asarray(vecs, dtype=np.float32)))

    def __len__(self) -> int:
        return len(self._load())


def cached_encode(
    texts: Sequence[str],
    cache: EmbeddingCache | None,
    encode: Callable[[list[str]], np.ndarray],
    *,
    flush_every: int = 4096,
    on_todo: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Vectors for `texts`, encoding only texts the cache lacks (each distinct text once),
    in chunks of `flush_every` that are cached as they finish. on_todo(n) is told how many
    texts will be encoded (a progress bar's total) before the first chunk."""
    shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    have = cache.get(set(shas)) if cache is not None else {}
    todo: dict[str, str] = {}
    for s, t in zip(shas, texts):
        if s not in have and s not in todo:
            todo[s] = t
    keys = list(todo)
    if on_todo is not None:
        on_todo(len(keys))
    for start in range(0, len(keys), flush_every):
        part = keys[start : start + flush_every]
        vecs = np.asarray(encode([todo[s] for s in part]), dtype=np.float32)
        if cache is not None:
            cache.put(part, vecs)
        have.update(zip(part, vecs))
    return np.stack([have[s] for s in shas]) if shas else np.zeros((0, 0), dtype=np.float32)
