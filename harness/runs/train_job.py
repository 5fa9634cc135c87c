"""`aa-harness train`: read training documents, build the system's config, call its trainer."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from harness.atomic import atomic_write_text
from harness.config import build_config, config_dict
from harness.data.collection import read_documents
from harness.errors import HarnessError
from harness.plugins import Registry
from harness.provenance import provenance
from harness.specs import load_object


def train_job(registry: Registry, system: str, train_files: Sequence[str | Path], out_dir: str | Path,
              overrides: Mapping[str, str] | None = None) -> Path:
    spec = registry.system(system)
    if not spec.trainer:
        trainable = sorted(s.name for s in registry.systems.values() if s.trainer)
        raise HarnessError(f"system {system!r} cannot be trained (trainable: {', '.join(trainable)})")
    config = build_config(load_object(spec.config), overrides)
    documents = list(read_documents(train_files).values())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "train_config.json", json.dumps(
        {"system": system, "config": config_dict(config), "train_files": [str(f) for f in train_files],
         "provenance": provenance()}, indent=1) + "\n")
    model_dir = load_object(spec.trainer)(config, documents, out_dir)
    log_path = out_dir / "train_log.json"
    main_process = os.environ.get("RANK", "0") == "0"
    if main_process and log_path.is_file():  # make the log self-describing (under DDP rank 0 wrote it)
        log = json.loads(log_path.read_text())
        atomic_write_text(log_path, json.dumps({"system": system, "config": config_dict(config), **log}, indent=1) + "\n")
    return model_dir
