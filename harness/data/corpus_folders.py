"""The data folders a collection reads, as resolved by harness.foundation.locations, checked to exist."""

from __future__ import annotations

from pathlib import Path

from harness.errors import DataError
from harness.foundation import locations


def corpora_dir(data_dir: str | Path | None = None) -> Path:
    """The public corpora folder (--data-dir, $AA_HARNESS_CORPORA, else <home>/corpora), which must exist."""
    path = locations.corpora_dir(data_dir)
    if not path.is_dir():
        raise DataError(
            f"{path}: public corpora folder not found; pass --data-dir DIR or set "
            f"{locations.CORPORA_ENV}=DIR (the folder holding pan19-en.jsonl.gz etc.)"
        )
    return path


def hrs_dir(data_dir: str | Path | None = None) -> Path:
    """The HIATUS HRS release root: --data-dir or $AA_HARNESS_HRS_DIR (restricted data: no default)."""
    path = locations.hrs_dir(data_dir)
    if path is None:
        raise DataError(f"HRS data location not given: pass --data-dir DIR or set {locations.HRS_ENV}=DIR")
    if not path.is_dir():
        raise DataError(f"{path}: HRS data folder not found (from --data-dir or ${locations.HRS_ENV})")
    return path


def corpus_file(folder: Path, name: str) -> Path:
    """`folder/name`, which must exist; the error says where else to look, and how to build the file."""
    from harness.data.builders import build_command

    path = folder / name
    if not path.is_file():
        build = build_command(name, folder)
        raise DataError(
            f"{path}: corpus file missing; pass --data-dir DIR or set {locations.CORPORA_ENV}=DIR "
            "(the folder that holds it)" + (f", or build it: {build}" if build else "")
        )
    return path
