"""Embedding-cache shards carry a checksum over model key, max length, texts and vectors; a shard that
does not match is set aside and its texts encoded again, so a forged cache cannot change a result."""

from __future__ import annotations

import hashlib
import io
import shutil

import numpy as np
import pytest

from harness.neural.embed_cache import EmbeddingCache, cached_encode
from tests.hostile import hostile

TEXTS = [f"document number {i} " + "x" * i for i in range(6)]


def true_vectors(texts):
    return np.stack([np.array([len(t), t.count("x"), 1.0, 2.0], dtype=np.float32) for t in texts])


class Counting:
    def __init__(self):
        self.encoded = []

    def __call__(self, texts):
        self.encoded += list(texts)
        return true_vectors(texts)


@pytest.fixture
def cache_dir(tmp_path):
    root = tmp_path / "cache"
    cached_encode(TEXTS, EmbeddingCache(root, "model-a", 512), Counting())
    return root


def _shard(root, key="model-a", length=512):
    shards = sorted((root / key / f"len-{length}").glob("shard-*.npz"))
    assert len(shards) == 1
    return shards[0]


def _arrays(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _save(path, **arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _forge(root, case, tmp_path):
    path = _shard(root)
    a = _arrays(path)
    sha, vec, checksum = a["sha"], a["vec"], a["checksum"]
    if case == "edited vectors":
        _save(path, sha=sha, vec=vec[::-1].copy(), checksum=checksum)
    elif case == "old format (no checksum)":
        _save(path, sha=sha, vec=np.zeros_like(vec))
    elif case == "rows swapped":
        _save(path, sha=sha[::-1].copy(), vec=vec, checksum=checksum)
    elif case == "texts relabelled":
        _save(path, sha=np.roll(sha, 1), vec=vec, checksum=checksum)
    elif case == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "not a zip":
        path.write_bytes(b"hello")
    elif case == "a pickle":
        _save(path, sha=sha, vec=np.array([object()] * len(sha), dtype=object), checksum=checksum)
    elif case == "another model's shard":
        other = tmp_path / "other"
        cached_encode(TEXTS, EmbeddingCache(other, "model-b", 512), lambda t: -true_vectors(t))
        shutil.copy(_shard(other, "model-b"), path)
    elif case == "another max length's shard":
        other = tmp_path / "other"
        cached_encode(TEXTS, EmbeddingCache(other, "model-a", 64), lambda t: -true_vectors(t))
        shutil.copy(_shard(other, "model-a", 64), path)
    elif case == "vectors missing":
        _save(path, sha=sha, checksum=checksum)
    elif case == "vectors short":
        _save(path, sha=sha, vec=vec[:-1], checksum=checksum)
    elif case == "NaN vectors (checksum matches)":
        from harness.neural.embed_cache import shard_checksum

        bad = vec.copy()
        bad[0, 0] = np.nan
        _save(path, sha=sha, vec=bad, checksum=np.asarray(shard_checksum("model-a", 512, sha, bad)))
    elif case == "float64 vectors":
        _save(path, sha=sha, vec=vec.astype(np.float64), checksum=checksum)
    elif case == "checksum an array":
        _save(path, sha=sha, vec=vec, checksum=np.asarray([str(checksum)] * 2))
    elif case == "resealed with a plain sha256":  # anyone can recompute a checksum; not the user's HMAC
        import hashlib as h

        digest = h.sha256(
            b"model-a\x00512\x00"
            + b"".join(str(x).encode() + b"\x00" for x in sha.tolist())
            + vec[::-1].copy().tobytes()
        ).hexdigest()
        _save(path, sha=sha, vec=vec[::-1].copy(), checksum=np.asarray(digest))
    elif case == "another user's shard":  # signed with another user's key: encoded again here
        from unittest import mock

        from harness.neural.embed_cache import shard_checksum

        with mock.patch("harness.foundation.user_key.user_key", return_value=b"another user's key, 32 bytes...."):
            resealed = shard_checksum("model-a", 512, sha, vec[::-1].copy())
        _save(path, sha=sha, vec=vec[::-1].copy(), checksum=np.asarray(resealed))
    elif case == "checksum of other texts":
        _save(path, sha=sha, vec=vec, checksum=np.asarray(hashlib.sha256(b"x").hexdigest()))
    return path


CASES = [
    "edited vectors",
    "old format (no checksum)",
    "rows swapped",
    "texts relabelled",
    "truncated",
    "empty",
    "not a zip",
    "a pickle",
    "another model's shard",
    "another max length's shard",
    "vectors missing",
    "vectors short",
    "NaN vectors (checksum matches)",
    "float64 vectors",
    "checksum an array",
    "checksum of other texts",
    "resealed with a plain sha256",
    "another user's shard",
]


@hostile("embedding cache", "held")
@pytest.mark.parametrize("case", CASES)
def test_a_shard_that_does_not_match_is_set_aside_and_reencoded(cache_dir, tmp_path, case):
    """Forged vectors once took a result's Success@8 from 0.83 to 0.03, and the result verified."""
    path = _forge(cache_dir, case, tmp_path)
    enc = Counting()
    vecs = cached_encode(TEXTS, EmbeddingCache(cache_dir, "model-a", 512), enc)
    assert np.array_equal(vecs, true_vectors(TEXTS))
    assert sorted(enc.encoded) == sorted(TEXTS)  # every text encoded again
    assert path.with_name(path.name + ".refused").exists()
    again = Counting()
    assert np.array_equal(cached_encode(TEXTS, EmbeddingCache(cache_dir, "model-a", 512), again), true_vectors(TEXTS))
    assert again.encoded == []  # the new shard is trusted


@hostile("embedding cache", "held")
def test_intact_shards_are_reused(cache_dir):
    enc = Counting()
    vecs = cached_encode(TEXTS + ["a new one"], EmbeddingCache(cache_dir, "model-a", 512), enc)
    assert enc.encoded == ["a new one"]
    assert np.array_equal(vecs, true_vectors(TEXTS + ["a new one"]))


def test_a_reader_that_does_not_write_sets_nothing_aside(cache_dir, tmp_path):
    path = _forge(cache_dir, "edited vectors", tmp_path)
    vecs = cached_encode(TEXTS, EmbeddingCache(cache_dir, "model-a", 512, writer=False), Counting())
    assert np.array_equal(vecs, true_vectors(TEXTS))
    assert path.exists()
