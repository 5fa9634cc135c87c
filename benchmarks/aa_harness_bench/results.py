"""Benchmark results as JSON files (device, versions, commit, arguments, figures), written atomically."""
from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

from harness.atomic import atomic_write_text
from harness.provenance import PROJECT_ROOT, git_commit

RESULTS_DIR = PROJECT_ROOT / "benchmarks" / "results"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def write_result(kind: str, name: str, facts: dict, args: dict, figures, out: Path | None = None) -> Path:
    path = Path(out) if out else RESULTS_DIR / f"{kind}-{slug(name)}-{slug(facts.get('device_name', 'cpu'))}.json"
    record = {"benchmark": kind, "name": name, **facts, "git_commit": git_commit(),
              "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "args": args, "results": figures}
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return path
