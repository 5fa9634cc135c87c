"""The leaderboard's record: one TOML file naming everything the pages are made from, and where they go.

`aa-harness leaderboard --record FILE` (FILE, or a folder holding `record.toml`) takes every input
from it, so the file is the one answer to "what is this leaderboard made of". The committed one is
`leaderboards/record.toml`:

    runs = "runs"                                        # required: <collection>/<run>/seed-<S>.json
    pages = "pages"                                      # required: the pages and plots (created)
    splits = "../splits"                                 # the split manifests the runs were made on
    stale = "stale.json"                                 # runs kept out of the tables (reports.stale)
    fixes = "fixes.json"                                 # result-changing fixes (reports.fixes)
    training = "training"                                # training logs, <run>.train_log.json
    decontamination = "training/decontamination.json"    # training sets made before decontamination
    training_sets = "training/training-sets.json"        # the public sources of each training set
    bench_results = "../benchmarks/results"              # benchmark results: the performance page

Paths are relative to the file (an absolute path is taken as it is). A key left out means none:
no stale runs, no fix marks, no training page, no performance page; without `splits`, the
manifests are looked up as a run looks them up (the harness's own, then `<runs>-splits/`). Every
path named must exist and be a file or a folder as above, except `pages`, which is created. The
pages folder must stand apart from the data: not one of the inputs, inside one, or holding one, so
rewriting the pages never touches what they are made from. A bad record (unknown key, missing
required key, a path that is not there) is one DataError naming the file and the key, raised
before anything is read or written.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from harness.errors import DataError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FILE_NAME = "record.toml"
MAX_BYTES = 64 * 1024  # a record is a dozen lines; a bigger file is not one


class Key(NamedTuple):
    kind: str  # "file" or "folder"
    what: str  # what the key names, for the error line
    required: bool = False


KEYS: dict[str, Key] = {
    "runs": Key("folder", "the runs folder, <collection>/<run>/seed-<S>.json", required=True),
    "pages": Key("folder", "the folder the pages and plots go to", required=True),
    "splits": Key("folder", "the split manifests folder"),
    "stale": Key("file", "the stale-runs registry, a JSON file"),
    "fixes": Key("file", "the fixes registry, a JSON file"),
    "training": Key("folder", "the training logs folder"),
    "decontamination": Key("file", "the decontamination list, a JSON file"),
    "training_sets": Key("file", "the training-sets list, a JSON file"),
    "bench_results": Key("folder", "the benchmark results folder"),
}


@dataclass(frozen=True)
class Registries:
    """The hand-kept files that change what the pages show, each named outright (None: none)."""

    stale: Path | None = None
    fixes: Path | None = None
    training: Path | None = None
    decontamination: Path | None = None
    training_sets: Path | None = None


@dataclass(frozen=True)
class Record:
    """A read and validated record file; every path is relative to where the command runs."""

    file: Path
    runs: Path
    pages: Path
    splits: Path | None = None
    bench_results: Path | None = None
    registries: Registries = field(default_factory=Registries)


def record_file(path: str | Path) -> Path:
    """The record file `--record` names: the file itself, or `record.toml` in the folder named."""
    path = Path(path)
    return path / FILE_NAME if path.is_dir() else path


def read_record(path: str | Path) -> Record:
    """Read and validate a record file (or the `record.toml` of a folder); a bad one is one DataError."""
    path = record_file(path)
    raw = _parse(path)
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise DataError(f"{path}: unknown key {unknown[0]!r}{_suggest(unknown[0])}; a record names {', '.join(KEYS)}")
    for name, key in KEYS.items():
        if key.required and name not in raw:
            raise DataError(f"{path}: missing key {name!r}: {key.what}, a path relative to the file")
    paths = {name: _path(path, name, value) for name, value in raw.items()}
    for name, value in paths.items():
        if name != "pages":
            _check_exists(path, name, value)
    pages = paths["pages"]
    if pages.exists() and not pages.is_dir():
        raise DataError(f"{path}: key 'pages': {pages} is not a folder; expected {KEYS['pages'].what}")
    _check_apart(path, pages, {"the record file": path} | {f"key {k!r}": p for k, p in paths.items() if k != "pages"})
    return Record(
        file=path,
        runs=paths["runs"],
        pages=pages,
        splits=paths.get("splits"),
        bench_results=paths.get("bench_results"),
        registries=Registries(
            stale=paths.get("stale"),
            fixes=paths.get("fixes"),
            training=paths.get("training"),
            decontamination=paths.get("decontamination"),
            training_sets=paths.get("training_sets"),
        ),
    )


def _parse(path: Path) -> dict:
    try:
        if not path.is_file():
            raise DataError(f"{path}: record file not found (--record names a {FILE_NAME} or a folder holding one)")
        if (size := path.stat().st_size) > MAX_BYTES:
            raise DataError(f"{path}: {size:,} bytes, more than the {MAX_BYTES:,} a record file may hold")
        text = path.read_bytes().decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: the record file is not UTF-8 ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise DataError(f"{path}: the record file is not valid TOML ({e})") from None
    except RecursionError:  # arrays nested thousands deep
        raise DataError(f"{path}: the record file is not valid TOML (nested too deep)") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read the record file ({e.strerror or e})") from None


def _path(path: Path, name: str, value: object) -> Path:
    """The key's value as a path beside the record file (lexically normalised, so errors read plainly)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        got = "an empty string" if value == "" else type(value).__name__
        raise DataError(
            f"{path}: key {name!r} must be a path relative to the file (a non-empty string), got {got}; "
            f"expected {KEYS[name].what}"
        )
    return Path(os.path.normpath(path.parent / value))


def _check_exists(path: Path, name: str, value: Path) -> None:
    key = KEYS[name]
    if (key.kind == "folder" and value.is_dir()) or (key.kind == "file" and value.is_file()):
        return
    found = f"is not a {key.kind}" if value.exists() else "does not exist"
    raise DataError(f"{path}: key {name!r}: {value} {found}; expected {key.what}")


def _check_apart(path: Path, pages: Path, inputs: dict[str, Path]) -> None:
    """The pages folder is none of the inputs, inside none, and holds none."""
    where = pages.resolve()
    for label, value in inputs.items():
        other = value.resolve()
        if where == other:
            clash = f"is named by {label} too"
        elif other in where.parents or where in other.parents:
            clash = f"{'lies inside' if other in where.parents else 'holds'} {value} ({label})"
        else:
            continue
        raise DataError(
            f"{path}: key 'pages': {pages} {clash}; the pages need a folder of their own, apart from what they "
            "are made from"
        )


def _suggest(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(KEYS), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
