"""`aa-harness train`: read training documents, build the system's config, call its trainer,
and write the model card (harness.runs.model_cards) into the model folder and the training log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Sequence

from harness.config import build_config, config_dict, config_sections
from harness.data.collection import read_documents
from harness.errors import HarnessError
from harness.foundation.atomic import atomic_write_text
from harness.foundation.provenance import git_commit, provenance
from harness.plugins import Registry
from harness.runs.model_cards import model_card, training_data_fingerprint, write_model_card
from harness.specs import load_object


def train_job(
    registry: Registry,
    system: str,
    train_files: Sequence[str | Path],
    out_dir: str | Path,
    overrides: Mapping[str, str] | None = None,
) -> Path:
    spec = registry.system(system)
    if not spec.trainer:
        trainable = sorted(s.name for s in registry.systems.values() if s.trainer)
        raise HarnessError(f"system {system!r} cannot be trained (trainable: {', '.join(trainable)})")
    config = build_config(load_object(spec.config), overrides)
    documents = list(read_documents(train_files).values())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        out_dir / "train_config.json",
        json.dumps(
            {
                "system": system,
                "config": config_dict(config),
                "train_files": [str(f) for f in train_files],
                "provenance": provenance(),
            },
            indent=1,
        )
        + "\n",
    )
    data = training_data_fingerprint(documents, train_files)
    model_dir = load_object(spec.trainer)(config, documents, out_dir)
    log_path = out_dir / "train_log.json"
    main_process = os.environ.get("RANK", "0") == "0"
    if main_process and log_path.is_file():  # make the log and the model self-describing (rank 0 wrote them)
        log = json.loads(log_path.read_text())
        card = model_card(
            system=system, sections=config_sections(config), data=data, train_log=log, commit=git_commit()
        )
        write_model_card(Path(model_dir), card)
        atomic_write_text(
            log_path,
            json.dumps({"system": system, "config": config_dict(config), **log, "card": card}, indent=1) + "\n",
        )
    return model_dir
