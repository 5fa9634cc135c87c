"""The one reader of results: every verb that shows a result (run's up-to-date check, rerank's first
stage, leaderboard, export, compare, topic-share) reads it through here.

A result file is a claim; its rankings file and the split manifest are the evidence. Every
published field is either recomputed from the rankings and the manifest (metrics, ci95, per
genre, the Success@k curve, first-needle ranks, n_queries, n_ranked) and must equal what is
stored, or checked against them: n_candidates is the manifest's pool, the rankings rank only
the split's queries and candidates and no deeper than `depth` (at least 100), the system is
registered and its config names only keys it knows (submitted rankings, system `submitted`, have
an empty config and are recomputed like any other), the run, collection and seed are those of
the file's place, and split_sha256 is the manifest's.

Results written by this version also carry `result_sha256`, a seal over every other field, so
the fields nothing can recompute (provenance, extra) are covered too. Results written before it
have no seal and are verified by recomputation alone: nothing has to be rewritten.

A run folder whose result and rankings pair a killed writer left unfinished is read in its last
complete state (harness.runs.results.settled_path): the old pair, or the new one once its journal
is written, never the new result beside the old rankings. It is reported in one line and left
as it is for `run` to finish.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import DataError, HarnessError
from harness.runs.results import (
    RECOMPUTED,
    SEAL,
    check_run_consistent,
    iter_results,
    rankings_path,
    rankings_sha256,
    read_rankings,
    read_result,
    seal,
)

log = logging.getLogger(__name__)

MIN_DEPTH = 100
# Keys a reranker's result records besides its config's own.
RERANK_KEYS = frozenset({"first_stage", "first_stage_rankings_sha256"})


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def check_system(path: Path, result: Mapping[str, Any], registry) -> None:
    """The system is registered and the config names only keys its config class knows. Submitted
    rankings ran no code here: read_result has checked that their config is empty; nothing to look up."""
    import dataclasses

    from harness.specs import SUBMITTED, load_object

    if result["system"] == SUBMITTED:
        return
    spec = registry.systems.get(result["system"])
    if spec is None:
        raise DataError(f"{path}: system {result['system']!r} is not registered (is its plugin installed?)")
    try:
        known = {f.name for f in dataclasses.fields(load_object(spec.config))}
    except (HarnessError, TypeError):
        return  # a plugin whose config class cannot be read is reported where it is used
    if "rerank" in spec.capabilities:
        known |= RERANK_KEYS
    unknown = sorted(set(result["config"]) - known)
    if unknown:
        raise DataError(f"{path}: config key {unknown[0]!r} is not one of system {result['system']!r}'s")


def verify(path: Path, result: Mapping[str, Any], split, registry=None) -> dict[str, Any]:
    """The result with its recomputed fields, or a DataError naming the file and what does not hold.

    split: the Split the result names (its sha256 must match). registry: when given, the system
    and its config keys are checked against it. A result without ci95 gets the recomputed one.
    """
    from harness.evaluation.metrics import evaluate

    path = Path(path)
    if SEAL in result and result[SEAL] != seal(result):
        raise DataError(f"{path}: a field was edited after the result was written ({SEAL} does not match)")
    if result["split_sha256"] != split.sha256:
        raise DataError(
            f"{path}: made on split {result['split_sha256'][:12]}…, the manifest of "
            f"{split.collection} seed {split.seed} is {split.sha256[:12]}…"
        )
    if (result["collection"], result["seed"]) != (split.collection, split.seed):
        raise DataError(
            f"{path}: names {result['collection']} seed {result['seed']}, checked against the manifest of "
            f"{split.collection} seed {split.seed}"
        )
    depth = result["depth"]
    if depth < MIN_DEPTH:
        raise DataError(f"{path}: depth {depth} is below {MIN_DEPTH} (Success@100 needs the top 100)")
    if result["n_candidates"] != len(split.candidates):
        raise DataError(
            f"{path}: n_candidates {result['n_candidates']}, but the manifest's pool has {len(split.candidates)}"
        )
    digest = rankings_sha256(path)
    if "rankings_sha256" in result and result["rankings_sha256"] != digest:
        raise DataError(
            f"{rankings_path(path)}: sha256 differs from the one {path.name} records (rankings replaced or truncated)"
        )
    rankings = read_rankings(path)
    queries = {q.documentID for q in split.queries}
    candidates = set(split.candidates)
    for qid, ranking in rankings.items():
        if qid not in queries:
            raise DataError(f"{rankings_path(path)}: ranks {qid!r}, not a query of the split")
        if len(ranking) > depth:
            raise DataError(
                f"{rankings_path(path)}: query {qid!r} ranks {len(ranking)} candidates, deeper than depth {depth}"
            )
        ids = [c for c, _ in ranking]
        stray = next((c for c in ids if c not in candidates), None)
        if stray is not None:
            raise DataError(f"{rankings_path(path)}: query {qid!r} ranks {stray!r}, not a candidate of the split")
        if len(set(ids)) != len(ids):
            raise DataError(f"{rankings_path(path)}: query {qid!r} ranks a candidate twice")
        if not all(math.isfinite(s) for _, s in ranking):
            raise DataError(f"{rankings_path(path)}: query {qid!r} has a non-finite score")
    scores = evaluate(rankings, split.needles, split.query_genres)
    fields = (*RECOMPUTED, "ci95")
    differ = [k for k in fields if k in result and not _same(result[k], scores[k])]
    if differ:
        k = differ[0]
        detail = f" (stored {result[k]!r}, recomputed {scores[k]!r})" if k == "metrics" else ""
        raise DataError(
            f"{path}: {', '.join(differ)} differ from what its rankings give{detail}; "
            "the result was edited or its rankings replaced"
        )
    if registry is not None:
        check_system(path, result, registry)
    return {**result, **{k: scores[k] for k in fields}}


def manifest_places(runs_dir: Path, splits_dir: Path | None) -> list[Path]:
    """Where the manifests of a runs folder's results are looked for, in order."""
    from harness.foundation.locations import manifest_dirs

    return manifest_dirs(runs_dir, splits_dir)


class ManifestSource:
    """Manifests read once per (collection, seed), checked by rebuilding where the data can be found."""

    def __init__(self, places: Iterable[Path], registry=None, data_dir=None, collection=None):
        self.places = list(places)
        self.registry = registry
        self.data_dir = data_dir
        self.collection = collection  # an already loaded Collection, when the caller has one
        self._splits: dict[tuple[str, int], Any] = {}
        self._collections: dict[str, Any] = {}

    def get(self, collection: str, seed: int, needed_by: Path, folder: str | None = None):
        """The manifest of `collection` and `seed`; folder: where a collection's earlier manifests are kept
        (runs made on data since corrected), checked by sha256 and structure but not rebuilt."""
        from harness.evaluation.manifests import find_manifest, read_manifest
        from harness.evaluation.split import check_split

        key = (folder or collection, seed)
        if key not in self._splits:
            path = find_manifest(self.places, *key)
            split = read_manifest(path, collection)
            try:
                check_split(split)
            except DataError as e:
                raise DataError(f"{path}: {e}") from None
            if folder is None:
                self._rebuild_check(split, path)
            self._splits[key] = split
        return self._splits[key]

    def _rebuild_check(self, split, path: Path) -> None:
        from harness.evaluation.manifest_check import is_checked
        from harness.evaluation.split_store import check_by_rebuilding

        if is_checked(split):
            return
        coll = self._data(split.collection)
        if coll is None:
            log.debug("%s: no data for %s; manifest checked by its sha256 and structure only", path, split.collection)
            return
        check_by_rebuilding(split, path, coll)

    def _data(self, name: str):
        if self.collection is not None and self.collection.name == name:
            return self.collection
        if name in self._collections:
            return self._collections[name]
        coll = None
        spec = self.registry.collections.get(name) if self.registry is not None else None
        if spec is not None:
            try:
                coll = spec.load(self.data_dir)
            except HarnessError as e:
                log.debug("collection %s not loaded for the manifest check: %s", name, e)
        self._collections[name] = coll
        return coll


def _registry_or_none(registry):
    if registry is not None:
        return registry
    from harness.plugins import load_registry

    return load_registry(warn=lambda msg: log.warning("%s", msg))


def verified_results(
    runs_dir: Path,
    splits_dir: Path | None = None,
    *,
    collection: str | None = None,
    runs: Iterable[str] | None = None,
    registry=None,
    data_dir=None,
    loaded=None,
    keep: Callable[[str, str], bool] | None = None,
    manifests_of: Mapping[tuple[str, str], str] | None = None,
) -> dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]]:
    """(collection, run) -> [(path, verified result)] in seed order, for every result under runs_dir
    (or those of `collection` and the named `runs`).

    Each is verified (see `verify`) against its manifest; all results of a collection and seed
    share one split; the seeds of a run share one config. A missing runs folder is an error.
    keep(collection, run): which runs to read (default all); manifests_of: (collection, run) ->
    the manifests folder of runs made on a collection's earlier manifests.
    """
    from harness.foundation.output_set import report_unfinished

    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise DataError(
            f"{runs_dir}: runs folder not found"
            if not runs_dir.exists()
            else f"{runs_dir}: is a file, not a runs folder"
        )
    registry = _registry_or_none(registry)
    source = ManifestSource(manifest_places(runs_dir, splits_dir), registry, data_dir, loaded)
    wanted = set(runs) if runs is not None else None
    out: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = defaultdict(list)
    split_of: dict[tuple[str, int], tuple[str, Path]] = {}
    for run_dir in sorted(p for p in runs_dir.glob("*/*") if p.is_dir()):
        report_unfinished(run_dir)  # readers never finish another command's write; `run` does
    for path, res in iter_results(runs_dir):
        if collection is not None and res["collection"] != collection:
            continue
        if wanted is not None and res["run_name"] not in wanted:
            continue
        if keep is not None and not keep(res["collection"], res["run_name"]):
            continue
        folder = (manifests_of or {}).get((res["collection"], res["run_name"])) or None  # "": the current
        key = (folder or res["collection"], res["seed"])
        if key in split_of and split_of[key][0] != res["split_sha256"]:
            raise DataError(
                f"{path}: seed {res['seed']} of {res['collection']!r} was run on another split than {split_of[key][1]}"
            )
        split_of.setdefault(key, (res["split_sha256"], path))
        split = source.get(res["collection"], res["seed"], path, folder)
        out[(res["collection"], res["run_name"])].append((path, verify(path, res, split, registry)))
    for items in out.values():
        items.sort(key=lambda pr: pr[1]["seed"])
        check_run_consistent(items)
    return dict(sorted(out.items()))


def verified_result(path: Path, split, registry=None) -> dict[str, Any]:
    """One result file read and verified against `split` (run's up-to-date check, rerank's first stage)."""
    from harness.foundation.output_set import report_unfinished
    from harness.runs.results import check_result_place

    report_unfinished(Path(path).parent)  # a reader here (rerank's first stage): it never finishes the write
    res = read_result(path)
    check_result_place(Path(path), res)
    return verify(path, res, split, registry)
