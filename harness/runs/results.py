"""Run results on disk: one JSON per (collection, run, seed) and its rankings file.

Layout: <runs_dir>/<collection>/<run name>/seed-<S>.json and seed-<S>.rankings.jsonl.gz.
The JSON is written last, so its presence means the run is complete.

Result schema (version 1):
  schema_version, system, run_name, config, collection, seed, split_sha256, depth,
  metrics {success@8, success@100, mrr@20}, ci95 {metric: [lo, hi]}, per_genre
  {genre: {n_queries, success@8, success@100, mrr@20}}, success_curve [S@1..S@100],
  first_needle_rank {queryID: rank or null}, n_queries, n_ranked, n_candidates,
  provenance {packages, git_commit, device, platform, wall_seconds, finished_at}, extra {},
  rankings_sha256 (sha256 of the rankings file's bytes; results written before it was added
  lack it and are checked by recomputing their metrics alone); submitted rankings (system
  `submitted`, config {}) also have submission {format, file, file_sha256, tag, submitter,
  description}.
The metrics named are the rows of harness.evaluation.metric_table; a result must hold each.

A result is trusted only after harness.runs.verified has checked it against its rankings
file and its split manifest; result_sha256 (results written since it was added) seals the rest.
Results and rankings are read in their last complete state (settled_path), so a writer killed
between the pair's renames never shows a new result beside old rankings.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from harness.data.jsonl import iter_jsonl
from harness.errors import DataError, HarnessError
from harness.evaluation import metric_table
from harness.specs import SUBMITTED

SCHEMA_VERSION = 1
SEAL = "result_sha256"  # see seal(); results written before it have none and are verified by recomputation
RUN_NAME = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*")
REQUIRED = {
    "system": str,
    "run_name": str,
    "config": dict,
    "collection": str,
    "seed": int,
    "split_sha256": str,
    "depth": int,
    "metrics": dict,
    "per_genre": dict,
    "success_curve": list,
    "first_needle_rank": dict,
    "n_queries": int,
    "n_candidates": int,
    "provenance": dict,
}
# What a reader recomputes from the rankings and the manifest and compares with what is stored.
RECOMPUTED = ("metrics", "per_genre", "success_curve", "first_needle_rank", "n_queries", "n_ranked")


def check_run_name(name: str, what: str = "run name") -> str:
    """A run name is one safe path component: [A-Za-z0-9._+-], not starting with a dot, at most 200 characters.

    It becomes a folder under <runs_dir>/<collection>/, so "..", "/etc/x" or "a/b" would write
    outside the runs folder or where the leaderboard never looks.
    """
    if not isinstance(name, str) or not RUN_NAME.fullmatch(name) or len(name) > 200:
        raise HarnessError(
            f"{what} {name!r} is not allowed: use letters, digits and . _ + - "
            "(one path component, not starting with a dot)"
        )
    return name


def result_path(runs_dir: Path, collection: str, run_name: str, seed: int) -> Path:
    check_run_name(run_name)
    check_run_name(collection, "collection name")
    return Path(runs_dir) / collection / run_name / f"seed-{int(seed)}.json"


def check_runs_dir(runs_dir: Path, *parts: str) -> None:
    """Fail before any work when results could not be written: a path on the way is a file."""
    p = Path(runs_dir)
    for part in ("", *parts):
        p = p / part if part else p
        if part and p.is_symlink():
            raise HarnessError(
                f"{p}: is a symbolic link; results are written only into real folders under "
                "--runs-dir (the link would send them elsewhere)"
            )
        if p.exists() and not p.is_dir():
            raise HarnessError(f"{p}: is a file, but results are written into a folder there (--runs-dir)")


def absolute(path) -> Path:
    """The path made absolute without resolving links (their refusal needs to see them)."""
    import os

    return Path(os.path.abspath(path))


def rankings_path(result: Path) -> Path:
    return result.with_name(result.name.replace(".json", ".rankings.jsonl.gz"))


def settled_path(path: Path) -> Path:
    """Where a run folder's file is read: in its last complete state (harness.foundation.output_set.settled), i.e.
    the staged copy while a killed writer's committed pair is unfinished. Changes nothing: `run`,
    which owns the folder, finishes the pair."""
    from harness.foundation.output_set import settled

    path = Path(path)
    found = settled(path.parent, path.name)
    if found is None:
        raise DataError(f"{path}: not found (the unfinished write there removes it)")
    return found


def read_result(path: Path) -> dict[str, Any]:
    """A result JSON with the fields of schema version 1, or a DataError naming the file and what is wrong."""
    from harness.data.jsonl import read_json

    obj = read_json(settled_path(path), "result file")
    if not isinstance(obj, dict):
        raise DataError(f"{path}: a result must be a JSON object, got {type(obj).__name__}")
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise DataError(
            f"{path}: result schema_version {obj.get('schema_version')!r}, this harness reads {SCHEMA_VERSION}"
        )
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise DataError(f"{path}: result lacks field(s) {', '.join(missing)}")
    wrong = [k for k, tp in REQUIRED.items() if not isinstance(obj[k], tp) or (tp is int and isinstance(obj[k], bool))]
    if wrong:
        raise DataError(
            f"{path}: result field(s) of the wrong type: "
            + ", ".join(f"{k} ({type(obj[k]).__name__}, expected {REQUIRED[k].__name__})" for k in wrong)
        )
    names = [m.name for m in metric_table.all_metrics()]
    bad = [
        m for m in names if not isinstance(obj["metrics"].get(m), (int, float)) or not math.isfinite(obj["metrics"][m])
    ]
    if bad:
        raise DataError(f"{path}: metrics lack a finite {', '.join(bad)}")
    for g, row in obj["per_genre"].items():
        if not isinstance(row, dict) or not all(isinstance(row.get(m), (int, float)) for m in ("n_queries", *names)):
            raise DataError(f"{path}: per_genre[{g!r}] is not {{{', '.join(('n_queries', *names))}}}")
    for key in ("rankings_sha256", "result_sha256"):
        if key in obj and not isinstance(obj[key], str):
            raise DataError(f"{path}: {key} must be a string")
    if "ci95" in obj and not (
        isinstance(obj["ci95"], dict)
        and all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(x, (int, float)) for x in v)
            for v in obj["ci95"].values()
        )
    ):
        raise DataError(f"{path}: ci95 must map each metric to [low, high]")
    if not isinstance(obj["provenance"], dict) or not isinstance(obj.get("extra", {}), dict):
        raise DataError(f"{path}: provenance and extra must be JSON objects")
    check_submission_fields(path, obj)
    return obj


def check_submission_fields(path: Path, obj: Mapping[str, Any]) -> None:
    """Submitted rankings (harness.runs.submission) carry system `submitted`, an empty config (no code ran
    here) and a `submission` object of strings; no other result carries a `submission` field."""
    submitted = obj["system"] == SUBMITTED
    if submitted != ("submission" in obj):
        raise DataError(
            f"{path}: "
            + (
                "system 'submitted' needs a submission field"
                if submitted
                else f"system {obj['system']!r} with a submission field (only submitted rankings have one)"
            )
        )
    if not submitted:
        return
    sub = obj["submission"]
    if not isinstance(sub, dict) or not all(isinstance(v, str) for v in sub.values()):
        raise DataError(
            f"{path}: submission must be a JSON object of strings (format, file, file_sha256, tag, "
            "submitter, description)"
        )
    if obj["config"]:
        raise DataError(f"{path}: submitted rankings have an empty config, got key {sorted(obj['config'])[0]!r}")


def _rankings_bytes(rankings: Mapping[str, list[tuple[str, float]]]) -> bytes:
    import gzip
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as zf:
        for qid in sorted(rankings):
            zf.write(
                (json.dumps({"queryID": qid, "ranking": [[c, s] for c, s in rankings[qid]]}) + "\n").encode("utf-8")
            )
    return buf.getvalue()


def write_result(path: Path, result: dict[str, Any], rankings: dict[str, list[tuple[str, float]]]) -> None:
    """Rankings first, then the result JSON (holding the rankings file's sha256); each atomically.

    Raises HarnessError, writing nothing, when the result is not plain JSON (e.g. what a system's
    describe() returned holds an object JSON cannot store).
    """
    from harness.foundation.output_set import write_output_set

    path = Path(path)
    check_runs_dir(path.parent.parent.parent, path.parent.parent.name, path.parent.name)  # no link swapped in

    data = _rankings_bytes(rankings)
    result = {**result, "rankings_sha256": hashlib.sha256(data).hexdigest()}
    try:
        result[SEAL] = seal(result)
        text = json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise HarnessError(
            f"{path}: the result is not plain JSON ({e}); nothing was written "
            "(is a value of the system's describe() an object?)"
        ) from None
    # the pair replaces the old pair together: a crash leaves the old result or the new one
    write_output_set(Path(path).parent, {rankings_path(path).name: data, Path(path).name: text})


def read_rankings(result: Path) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for lineno, obj in iter_jsonl(settled_path(rankings_path(result))):
        try:
            out[obj["queryID"]] = [(str(c), float(s)) for c, s in obj["ranking"]]
        except (KeyError, TypeError, ValueError):
            raise DataError(
                f"{rankings_path(result)}:{lineno}: expected {{'queryID': ..., 'ranking': [[id, score], ...]}}"
            ) from None
    return out


def rankings_sha256(result: Path) -> str:
    try:
        return hashlib.sha256(settled_path(rankings_path(result)).read_bytes()).hexdigest()
    except (FileNotFoundError, DataError):
        raise DataError(f"{rankings_path(result)}: rankings file not found (the result {result} needs it)") from None


def seal(result: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of every field of a result but the seal itself."""
    body = {k: v for k, v in result.items() if k != SEAL}
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_result_place(path: Path, res: Mapping[str, Any]) -> None:
    """The result sits where its fields say: <collection>/<run name>/seed-<seed>.json."""
    where = (path.parent.parent.name, path.parent.name, path.name)
    says = (res["collection"], res["run_name"], f"seed-{res['seed']}.json")
    if where != says:
        raise DataError(
            f"{path}: the file says collection {says[0]!r}, run {says[1]!r}, seed {res['seed']}, "
            f"but sits at {'/'.join(where)} (copied or renamed by hand?)"
        )


def iter_results(runs_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every result under runs_dir in its last complete state (a seed an unfinished pair adds is
    there), checked to sit where its fields say (collection/run name/seed)."""
    from harness.foundation.output_set import PREFIX, settled_glob

    for run_dir in sorted(p for p in Path(runs_dir).glob("*/*") if p.is_dir() and not p.name.startswith(PREFIX)):
        for name in settled_glob(run_dir, "seed-*.json"):
            path = run_dir / name
            res = read_result(path)
            check_result_place(path, res)
            yield path, res


# Config keys that differ from seed to seed by design (each seed reranks its own first-stage rankings).
PER_SEED_CONFIG_KEYS = frozenset({"first_stage_rankings_sha256"})


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """`key (a vs b)` for each system/config key where two results of one run differ (per-seed keys aside)."""
    out = []
    if a.get("system") != b.get("system"):
        out.append(f"system ({a.get('system')!r} vs {b.get('system')!r})")
    from harness.runs.later_keys import without_earlier_values

    # a key added since one of them was made reads as its earlier value there
    ca, cb = without_earlier_values(a.get("config", {})), without_earlier_values(b.get("config", {}))
    for k in sorted(set(ca) | set(cb)):
        if k in PER_SEED_CONFIG_KEYS:
            continue
        if ca.get(k, "<absent>") != cb.get(k, "<absent>"):
            out.append(f"{k} ({ca.get(k, '<absent>')!r} vs {cb.get(k, '<absent>')!r})")
    return out


def check_run_consistent(results: Sequence[tuple[Path, Mapping[str, Any]]]) -> None:
    """The seeds of one run share system and config, and no seed appears twice; DataError otherwise."""
    if not results:
        return
    first_path, first = results[0]
    seen: dict[int, Path] = {}
    for path, res in results:
        if res["seed"] in seen:
            raise DataError(
                f"{path}: seed {res['seed']} of run {res['run_name']!r} appears twice (also {seen[res['seed']]})"
            )
        seen[res["seed"]] = path
        diff = config_differences(first, res)
        if diff:
            raise DataError(
                f"run {res['run_name']!r} of {res['collection']!r} mixes configs: {first_path.name} and "
                f"{path.name} differ in {'; '.join(diff)}; rerun it under one --name per config"
            )
