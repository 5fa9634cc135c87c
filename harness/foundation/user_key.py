"""A per-user secret that authenticates what the harness remembers on disk for itself.

A remembered verdict (a manifest that passed its rebuild check) or a cached result (an embedding
shard) is trusted only when it carries an HMAC made with this key. A checksum anyone can
recompute would let a planted or resealed file through; an HMAC needs the key, which lives in
the harness's home (`<home>/user.key`, mode 0600) and never in a cache or results folder that
others may hand over. A file made under another key (another user, another machine) is simply
not trusted: the work is done again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "user.key"
_cache: dict[Path, bytes] = {}


def _key_path() -> Path:
    from harness.foundation import locations

    return locations.home() / KEY_FILE


def user_key() -> bytes:
    """The key, made on first use (32 random bytes, created exclusively, 0600)."""
    path = _key_path()
    if path in _cache:
        return _cache[path]
    try:
        key = bytes.fromhex(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first (or a bad one is there): theirs wins
            key = bytes.fromhex(path.read_text().strip())
        else:
            with os.fdopen(fd, "w") as f:
                f.write(key.hex() + "\n")
    if len(key) < 16:
        from harness.errors import HarnessError

        raise HarnessError(f"{path}: not a key the harness made (remove it; a new one is made)")
    _cache[path] = key
    return key


def sign(*parts: str | bytes) -> str:
    """HMAC-SHA256 of the parts (each length-prefixed, so parts cannot run into each other)."""
    mac = hmac.new(user_key(), digestmod=hashlib.sha256)
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        mac.update(len(b).to_bytes(8, "big") + b)
    return mac.hexdigest()


def verify(signature: object, *parts: str | bytes) -> bool:
    return isinstance(signature, str) and hmac.compare_digest(signature, sign(*parts))
