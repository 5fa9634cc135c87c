"""Benchmark results as JSON files (device, versions, commit, arguments, figures), written atomically."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

from harness.foundation import locations
from harness.foundation.atomic import atomic_write_text
from harness.foundation.provenance import git_commit

_CHECKOUT = Path(__file__).resolve().parents[1]  # benchmarks/ when this package runs from its checkout


def results_dir() -> Path:
    """Where results go without --out: $AA_HARNESS_BENCH_DIR, else the checkout's benchmarks/results,
    else <home>/bench (harness.foundation.locations; an installed copy has no checkout beside it)."""
    if os.environ.get(locations.BENCH_ENV):
        return locations.bench_dir()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "aa_harness_bench").is_dir():
        return _CHECKOUT / "results"
    return locations.bench_dir()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def write_result(kind: str, name: str, facts: dict, args: dict, figures, out: Path | None = None) -> Path:
    path = Path(out) if out else results_dir() / f"{kind}-{slug(name)}-{slug(facts.get('device_name', 'cpu'))}.json"
    record = {
        "benchmark": kind,
        "name": name,
        **facts,
        "git_commit": git_commit(),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "args": args,
        "results": figures,
    }
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return path
