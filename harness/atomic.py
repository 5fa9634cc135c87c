"""Atomic file writes: a file either has its complete new content or is untouched.

Everything the harness writes (manifests, results, rankings, leaderboards) goes through
here, so a crash never leaves a half-written file that a rerun would trust.
"""
from __future__ import annotations

import gzip
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, gz: bool = False) -> Iterator[IO]:
    """Open a temporary file beside `path`; on success rename it over `path`, on error delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if gz:
            # mtime=0 keeps the gzip header free of the clock, so equal content gives equal bytes.
            raw = open(tmp, "wb")
            with raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zf:
                if "b" in mode:
                    yield zf
                else:
                    import io

                    with io.TextIOWrapper(zf, encoding="utf-8", newline="\n") as tf:
                        yield tf
        else:
            with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as f:
                yield f
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)
