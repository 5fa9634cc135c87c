"""Data an experiment can generate instead of reading (no download): the synthetic demo's
training set, written as canonical JSONL with fixed bytes, so its sha256 is checked like a file's."""

from __future__ import annotations

import json
from pathlib import Path

from harness.foundation.atomic import atomic_open


def write_generated(name: str, path: Path) -> None:
    from harness.data.demo import demo_training_documents

    docs = {"demo-train": demo_training_documents}[name]()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path, "w") as f:
        for d in docs:
            f.write(
                json.dumps(
                    {
                        "documentID": d.documentID,
                        "authorIDs": list(d.authorIDs),
                        "fullText": d.fullText,
                        "genre": d.genre,
                        **d.extra,
                    },
                    ensure_ascii=False,
                    sort_keys=True,
                )
                + "\n"
            )
