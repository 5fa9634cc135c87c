"""Reading JSONL (optionally gzipped) with errors that name the file and line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any, Iterator

from harness.errors import DataError

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(obj: Any) -> str | None:
    """The first string (key or value) holding a lone surrogate, which no UTF-8 file can store."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return x
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None


def loads(text: str, where: str) -> Any:
    """json.loads with one-line DataErrors: malformed JSON, nesting too deep for the parser, and
    strings holding a lone surrogate (an escape like \\ud800 that no text can be written with)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: malformed JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply to read") from None
    if _SURROGATE_ESCAPE.search(text):
        bad = _lone_surrogate(obj)
        if bad is not None:
            raise DataError(f"{where}: a string holds a lone surrogate ({ascii(bad)[:60]}), which is not text")
    return obj


# Bounds on what is read into memory at once: a 2 GiB line or a gzip bomb's one endless line is one
# line of error, not a MemoryError.
MAX_LINE_CHARS = 64 << 20
MAX_JSON_BYTES = 256 << 20


def open_text(path: Path):
    """Text in UTF-8; a leading byte-order mark (some editors write one) is dropped."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise DataError on anything else."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder, not a JSONL(.gz) file")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        with open_text(path) as f:
            lineno = 0
            while line := f.readline(MAX_LINE_CHARS + 1):
                lineno += 1
                if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                    raise DataError(
                        f"{path}:{lineno}: a line longer than {MAX_LINE_CHARS:,} characters; "
                        "one document a line is expected"
                    )
                if not line.strip():
                    continue
                obj = loads(line, f"{path}:{lineno}")
                if not isinstance(obj, dict):
                    raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None


def read_json(path: str | Path, what: str = "JSON file") -> Any:
    """One JSON file, or a DataError naming it: not found, unreadable, not UTF-8, malformed, too deep."""
    path = Path(path)
    try:
        if path.is_file() and (size := path.stat().st_size) > MAX_JSON_BYTES:
            raise DataError(f"{path}: the {what} holds {size:,} bytes, more than the {MAX_JSON_BYTES:,} read at most")
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a folder, not a {what}") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the {what} ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: the {what} is not UTF-8 ({e.reason} at byte {e.start})") from None
    return loads(text, str(path))
