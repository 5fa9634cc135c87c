"""The bytes of a published corpus file: canonical JSON lines in a gzip member with a fixed header.

Byte identity with the published files needs every detail pinned, so they are written out here
rather than left to `gzip.GzipFile`'s defaults:

- one record per line, `json.dumps(record, ensure_ascii=False)` (default separators, keys in the
  order the builder set them), UTF-8, each line ending in "\\n";
- one gzip member: header with FNAME set (the name the published file was first written under)
  and MTIME set (its original write time), XFL 2 (best compression), OS 255; raw deflate at
  level 9, window 15 bits, memory level 8; one Z_SYNC_FLUSH after the last line, then the
  final block (what `gzip.open(path, "wt")` does on close); CRC-32 and length trailer.

The deflate bytes are zlib's. Another deflate implementation (zlib-ng, for one) may compress
differently; the decompressed JSONL's sha256 then still tells whether the content is right.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Expected:
    """What a published file is: its sha256, its decompressed JSONL's sha256, its gzip header."""

    sha256: str
    jsonl_sha256: str
    gzip_fname: str
    gzip_mtime: int
    docs: int
    authors: int


def jsonl_bytes(records: Iterable[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def gzip_bytes(body: bytes, fname: str, mtime: int) -> bytes:
    """One gzip member holding `body`, with the header fields given (see the module docstring)."""
    header = b"\x1f\x8b\x08\x08" + struct.pack("<I", mtime) + b"\x02\xff" + fname.encode("latin-1") + b"\x00"
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY)
    data = deflate.compress(body) + deflate.flush(zlib.Z_SYNC_FLUSH) + deflate.flush(zlib.Z_FINISH)
    trailer = struct.pack("<II", zlib.crc32(body) & 0xFFFFFFFF, len(body) & 0xFFFFFFFF)
    return header + data + trailer


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
