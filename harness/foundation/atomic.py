"""Atomic file writes: a file either has its complete new content or is untouched.

Everything the harness writes (manifests, results, rankings, leaderboards) goes through
here, so a crash never leaves a half-written file that a rerun would trust. The temporary
file is named `.<name>.<pid>.<random>.tmp`; one left behind by a killed process (kill -9
skips every cleanup) is deleted by the next write beside it. Files get the mode the umask
allows (0666 & ~umask), as `open()` would give, not mkstemp's 0600, and folders 0777 & ~umask; the
umask is the one the process started with, read when the harness is imported, so a plugin that
changes it (`os.umask(0)`) cannot make results world-writable.
"""

from __future__ import annotations

import gzip
import os
import re
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, cast

# Temporary files written without a pid (before this scheme) count as stale after this long.
STALE_SECONDS = 3600


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_START_UMASK = _read_umask()


def _umask() -> int:
    """The umask the process started with (see the module docstring)."""
    return _START_UMASK


def make_dirs(path: str | os.PathLike) -> None:
    """Create `path` and its missing parents with the harness's folder mode (0777 & ~umask at start)."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    for p in reversed(missing):
        try:
            os.chmod(p, 0o777 & ~_START_UMASK)
        except OSError:  # made by another process meanwhile, and not ours to change
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale_tmp(folder: Path, name: str) -> list[Path]:
    """Delete temporary files for `name` in `folder` whose writer is gone; returns what it deleted."""
    removed: list[Path] = []
    try:
        entries = list(folder.glob(f".{glob_escape(name)}.*.tmp"))
    except OSError:
        return removed
    for tmp in entries:
        middle = tmp.name[len(name) + 2 : -len(".tmp")].split(".")  # "<pid>.<random>", or "<random>" (old)
        if len(middle) == 2 and middle[0].isdigit():
            pid = middle[0]
        elif len(middle) == 1:
            pid = None
        else:
            continue
        try:
            if pid is not None and int(pid) != os.getpid() and not _alive(int(pid)):
                stale = True
            elif pid is None:
                stale = time.time() - tmp.stat().st_mtime > STALE_SECONDS
            else:
                stale = False
            if stale:
                tmp.unlink()
                removed.append(tmp)
        except (OSError, ValueError):
            pass
    return removed


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


@contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, gz: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; on success rename it over `path`, on error delete it."""
    path = Path(path)
    make_dirs(path.parent)
    clean_stale_tmp(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        if gz:
            # mtime=0 keeps the gzip header free of the clock, so equal content gives equal bytes.
            raw = open(tmp, "wb")
            with raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zf:
                if "b" in mode:
                    yield cast("IO[bytes]", zf)  # a binary file object; typeshed does not derive GzipFile from IO
                else:
                    import io

                    with io.TextIOWrapper(zf, encoding="utf-8", newline="\n") as tf:
                        yield tf
        else:
            with open(tmp, mode) if "b" in mode else open(tmp, mode, encoding="utf-8", newline="\n") as f:
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
