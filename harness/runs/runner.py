"""Run a system on a split: rank, check, score, write. One seed at a time, resumable.

A seed whose result already exists for the same system, config, depth and split is
skipped (unless overwrite), so a rerun after a crash picks up at the first missing seed.
"""

from __future__ import annotations

import json
import math
import numbers
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from harness.data.collection import Collection
from harness.errors import HarnessError
from harness.evaluation.metrics import evaluate, order
from harness.evaluation.split import Split
from harness.foundation.progress import phase, seed_scope
from harness.foundation.provenance import provenance
from harness.protocols import DenseRanker, as_ranker
from harness.runs.results import (
    SCHEMA_VERSION,
    read_result,
    result_path,
    write_result,
)


@dataclass(frozen=True)
class RunOutcome:
    path: Path
    skipped: bool
    metrics: Mapping[str, float]
    phases: Mapping[str, float] = field(default_factory=dict)  # wall seconds per progress phase


def up_to_date(path: Path, system: str, config: Mapping[str, Any], split: Split, depth: int, log=None) -> dict | None:
    """The existing result when it is for this system, config, depth and split and checks out
    against its rankings file (see harness.runs.verified); else None, so the seed is recomputed.

    A result that fails the check (edited, rankings missing, truncated or swapped) is stale:
    `log` (when given) says why, and the seed is ranked again.
    """
    from harness.foundation.output_set import recover
    from harness.runs.verified import verified_result

    recover(path.parent)  # run owns this folder: it finishes a result and rankings pair whose writer was killed
    if not path.exists():
        return None
    try:
        old = read_result(path)
    except HarnessError as e:
        if log:
            log(f"recomputing: {e}")
        return None
    same = (
        old.get("system") == system
        and old.get("config") == config
        and old.get("split_sha256") == split.sha256
        and old.get("depth") == depth
    )
    if not same:
        return None
    try:
        old = verified_result(path, split)
    except HarnessError as e:
        if log:
            log(f"recomputing: {e}")
        return None
    return old


def _score(value: Any) -> float | None:
    """A real, finite number as float, else None (strings, None, bools and NaN are not scores)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        f = float(value)
    except (OverflowError, ValueError, TypeError):  # an int past float's range (10**400), or a broken number type
        return None
    return f if math.isfinite(f) else None


def _shown(value: Any, limit: int = 60) -> str:
    """A value's repr, cut to fit one line of an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_rankings(rankings: Mapping, split: Split, depth: int, system: str) -> dict[str, list[tuple[str, float]]]:
    """Validate a system's output and put each ranking in tie-rule order, cut at `depth`."""
    if not isinstance(rankings, Mapping):
        raise HarnessError(f"system {system!r}: rank() must return a mapping queryID -> [(candidateID, score)]")
    cands = set(split.candidates)
    qids = {q.documentID for q in split.queries}
    out = {}
    for qid, ranking in rankings.items():
        if qid not in qids:
            raise HarnessError(f"system {system!r} ranked {qid!r}, which is not a query of this split")
        if isinstance(ranking, (str, bytes, Mapping)) or not hasattr(ranking, "__iter__"):
            raise HarnessError(
                f"system {system!r}: query {qid!r}: expected a list of (candidateID, score) pairs, "
                f"got {type(ranking).__name__}"
            )
        scores: dict[str, float] = {}
        for item in ranking:
            if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
                raise HarnessError(
                    f"system {system!r}: query {qid!r}: expected (candidateID, score) pairs, got {item!r}"
                )
            cid, score = item
            if not isinstance(cid, str) or cid not in cands:
                raise HarnessError(f"system {system!r}: query {qid!r} ranks {cid!r}, which is not a candidate")
            if cid in scores:
                raise HarnessError(f"system {system!r}: query {qid!r} ranks {cid!r} twice")
            value = _score(score)
            if value is None:
                kind = (
                    "non-finite" if isinstance(score, numbers.Real) and not isinstance(score, bool) else "non-numeric"
                )
                raise HarnessError(f"system {system!r}: query {qid!r} gives {cid!r} a {kind} score {_shown(score)}")
            scores[cid] = value
        out[qid] = [(c, scores[c]) for c in order(scores.items())[:depth]]
    return out


def record_run(
    *,
    system_name: str,
    system: Any,
    config: Mapping[str, Any],
    collection: Collection,
    split: Split,
    rankings: Mapping,
    wall: float,
    runs_dir: Path,
    run_name: str,
    depth: int,
    extra: Mapping[str, Any] | None = None,
    plugin: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Check a system's rankings, score them, and write the result and rankings files.

    plugin: the registering plugin's name, distribution and version (recorded in provenance)."""
    path = result_path(runs_dir, collection.name, run_name, split.seed)
    # reading the answer runs plugin code too (a generator, a mapping's items()): contained like a call
    checked = call_system(
        system_name, "reading what rank() returned", check_rankings, rankings, split, depth, system_name
    )
    scores = evaluate(checked, split.needles, split.query_genres)
    result = {
        "schema_version": SCHEMA_VERSION,
        "system": system_name,
        "run_name": run_name,
        "config": dict(config),
        "collection": collection.name,
        "seed": split.seed,
        "split_sha256": split.sha256,
        "depth": depth,
        "n_candidates": len(split.candidates),
        **scores,
        "provenance": provenance(system, wall, plugin=plugin),
        "extra": dict(extra or {}),
    }
    if _is_writer():
        write_result(path, result, checked)  # checks the result is plain JSON before writing anything
    return RunOutcome(path, False, result["metrics"])


def _is_writer() -> bool:
    """False on the ranks other than 0 of a torchrun job (all ranks compute; one writes).
    Looks torch up without importing it: the core stays torch-free."""
    dist = sys.modules.get("torch.distributed")
    return dist is None or not dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0


def run_split(
    *,
    system_name: str,
    system: Any,
    config: Mapping[str, Any],
    collection: Collection,
    split: Split,
    runs_dir: Path,
    run_name: str | None = None,
    depth: int = 100,
    extra: Mapping[str, Any] | None = None,
    plugin: Mapping[str, str] | None = None,
) -> RunOutcome:
    """Rank every query of `split` and write the result (the caller checked up_to_date)."""
    from harness.runs.containment import CheckedEncoder, check_chunking, own_copies

    docs = collection.documents
    # the system's own copies: what it does to them cannot reach the next system or the harness
    queries = own_copies([docs[q.documentID] for q in split.queries])
    candidates = own_copies([docs[c] for c in split.candidates])
    ranker = as_ranker(system)
    if isinstance(ranker, DenseRanker):  # an encoder: held to one finite row per text, whatever the chunking
        checked = CheckedEncoder(system_name, ranker.encoder)
        batch = config.get("batch_size")
        check_chunking(checked, candidates, batch if isinstance(batch, int) and not isinstance(batch, bool) else None)
        ranker = DenseRanker(checked)
    # Encoders show their own phases (encode candidates, encode queries, search); others rank in one.
    phased = isinstance(ranker, DenseRanker) or hasattr(system, "encode")
    with seed_scope(len(queries) + len(candidates), what=system_name) as timings:
        start = time.perf_counter()
        if phased:
            raw = call_system(system_name, "rank()", ranker.rank, queries, candidates, depth)
        else:
            with phase("rank"):
                raw = call_system(system_name, "rank()", ranker.rank, queries, candidates, depth)
        wall = time.perf_counter() - start
        with phase("score"):
            out = record_run(
                system_name=system_name,
                system=system,
                config=config,
                collection=collection,
                split=split,
                rankings=raw,
                wall=wall,
                runs_dir=runs_dir,
                run_name=run_name or system_name,
                depth=depth,
                extra=extra,
                plugin=plugin,
            )
    return replace(out, phases=dict(timings))


def call_system(system_name: str, what: str, fn, *args, **kwargs):
    """Call a plugin's method; whatever it raises (sys.exit included) becomes a HarnessError naming
    the system (see harness.runs.containment).

    A plugin is third-party code: its bug should read as one line that says which system failed
    and how, not as a traceback through the harness.
    """
    from harness.runs.containment import contained_call

    return contained_call(system_name, what, fn, *args, **kwargs)


def describe_system(system_name: str, system: Any) -> dict:
    """What a system reports about itself (its optional describe()), checked to be a JSON object."""
    fn = getattr(system, "describe", None)
    if fn is None:
        return {}
    extra = call_system(system_name, "describe()", fn)
    if not isinstance(extra, Mapping):
        raise HarnessError(f"system {system_name!r}: describe() must return a dict, got {type(extra).__name__}")
    try:
        json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:  # RecursionError: nested too deep to store
        raise HarnessError(f"system {system_name!r}: describe() returned something JSON cannot store ({e})") from None
    return dict(extra)
