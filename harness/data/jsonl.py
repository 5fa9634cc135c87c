"""Reading JSONL (optionally gzipped) with errors that name the file and line."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from harness.errors import DataError


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
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
                if not isinstance(obj, dict):
                    raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
                yield lineno, obj
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None
