"""Where data lives: a CLI flag, else an environment variable, else the default beside the project."""
from __future__ import annotations

import os
from pathlib import Path

from harness.errors import DataError
from harness.provenance import PROJECT_ROOT

CORPORA_ENV = "AA_HARNESS_CORPORA"
HRS_ENV = "AA_HARNESS_HRS_DIR"


def corpora_dir(data_dir: str | Path | None = None) -> Path:
    """The public corpora folder: --data-dir, $AA_HARNESS_CORPORA, or ../shared/corpora."""
    if data_dir is not None:
        path = Path(data_dir)
    elif os.environ.get(CORPORA_ENV):
        path = Path(os.environ[CORPORA_ENV])
    else:
        path = PROJECT_ROOT.parent / "shared" / "corpora"
        if not path.is_dir():
            raise DataError(
                f"public corpora not found at {path}; pass --data-dir DIR or set {CORPORA_ENV}=DIR "
                "(the folder holding pan19-en.jsonl.gz etc.)"
            )
    if not path.is_dir():
        raise DataError(f"data folder {path} does not exist (from --data-dir or ${CORPORA_ENV})")
    return path


def hrs_dir(data_dir: str | Path | None = None) -> Path:
    """The HIATUS HRS release root: --data-dir or $AA_HARNESS_HRS_DIR (never inside the repo)."""
    raw = data_dir if data_dir is not None else os.environ.get(HRS_ENV)
    if not raw:
        raise DataError(f"HRS data location not given: pass --data-dir DIR or set {HRS_ENV}=DIR")
    path = Path(raw)
    if not path.is_dir():
        raise DataError(f"HRS data folder {path} does not exist (from --data-dir or ${HRS_ENV})")
    return path


def corpus_file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise DataError(f"{path}: corpus file missing (expected in {folder})")
    return path
