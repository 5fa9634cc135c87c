"""Run results on disk: one JSON per (collection, run, seed) and its rankings file.

Layout: <runs_dir>/<collection>/<run name>/seed-<S>.json and seed-<S>.rankings.jsonl.gz.
The JSON is written last, so its presence means the run is complete.

Result schema (version 1):
  schema_version, system, run_name, config, collection, seed, split_sha256, depth,
  metrics {success@8, success@100, mrr@20}, ci95 {metric: [lo, hi]}, per_genre
  {genre: {n_queries, success@8, success@100, mrr@20}}, success_curve [S@1..S@100],
  first_needle_rank {queryID: rank or null}, n_queries, n_ranked, n_candidates,
  provenance {packages, git_commit, device, platform, wall_seconds, finished_at}, extra {}.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from harness.atomic import atomic_open, atomic_write_text
from harness.data.jsonl import iter_jsonl
from harness.errors import DataError

SCHEMA_VERSION = 1
DEFAULT_RUNS_DIR = Path("leaderboards") / "runs"


def result_path(runs_dir: Path, collection: str, run_name: str, seed: int) -> Path:
    return Path(runs_dir) / collection / run_name / f"seed-{seed}.json"


def rankings_path(result: Path) -> Path:
    return result.with_name(result.name.replace(".json", ".rankings.jsonl.gz"))


def read_result(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: malformed result JSON ({e.msg} at line {e.lineno})") from None
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise DataError(f"{path}: result schema_version {obj.get('schema_version')!r}, this harness reads {SCHEMA_VERSION}")
    return obj


def write_result(path: Path, result: dict[str, Any], rankings: dict[str, list[tuple[str, float]]]) -> None:
    """Rankings first, then the result JSON; each atomically."""
    with atomic_open(rankings_path(path), "w", gz=True) as f:
        for qid in sorted(rankings):
            f.write(json.dumps({"queryID": qid, "ranking": [[c, s] for c, s in rankings[qid]]}) + "\n")
    atomic_write_text(path, json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def read_rankings(result: Path) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for lineno, obj in iter_jsonl(rankings_path(result)):
        try:
            out[obj["queryID"]] = [(str(c), float(s)) for c, s in obj["ranking"]]
        except (KeyError, TypeError, ValueError):
            raise DataError(f"{rankings_path(result)}:{lineno}: expected {{'queryID': ..., 'ranking': [[id, score], ...]}}") from None
    return out


def iter_results(runs_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(Path(runs_dir).glob("*/*/seed-*.json")):
        yield path, read_result(path)
