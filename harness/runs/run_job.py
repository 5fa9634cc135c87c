"""The jobs behind the CLI verbs, callable from Python too (tests, notebooks)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

from harness import locations
from harness.config import build_config, config_dict
from harness.data.collection import Collection, load_collection
from harness.errors import HarnessError
from harness.evaluation.metrics import metrics_line
from harness.evaluation.split_settings import SEEDS
from harness.evaluation.split_store import get_splits
from harness.plugins import Registry
from harness.runs.models import addressed_config, check_card, with_card_backbone
from harness.runs.results import (
    absolute,
    check_run_name,
    check_runs_dir,
    config_differences,
    read_result,
    result_path,
)
from harness.runs.runner import (
    RunOutcome,
    call_system,
    describe_system,
    run_split,
    up_to_date,
)
from harness.specs import load_object


def is_path_collection(registry: Registry, name_or_path: str) -> bool:
    """True when `--collection` names a JSONL file rather than a registered collection."""
    path = Path(name_or_path)
    return name_or_path not in registry.collections and (path.suffix in (".jsonl", ".gz") or path.exists())


_log = logging.getLogger(__name__)


def open_collection(
    registry: Registry, name_or_path: str, *, data_dir=None, background: Sequence[str] = (), name: str | None = None
) -> Collection:
    """A registered collection by name, or an ad-hoc one from a canonical JSONL file path.

    name: what to call a path collection (default: the file's stem); it names its manifests
    and results folder, so two different files called tiny.jsonl need two names.
    """
    path = Path(name_or_path)
    if is_path_collection(registry, name_or_path):
        if path.is_dir():
            raise HarnessError(f"{path}: is a folder; --collection takes a registered name or a JSONL(.gz) file")
        if not path.exists():
            raise HarnessError(f"{path}: collection file not found")
        if name is not None and (not name or "/" in name or name.startswith(".")):
            raise HarnessError(f"--name-collection {name!r}: give a plain name (no '/', not starting with '.')")
        own = name or path.name.split(".jsonl")[0]
        if own in registry.collections:  # its results and manifests would mix with the registered one's
            raise HarnessError(
                f"{path}: named like the registered collection {own!r}; give the file its own name "
                "with --name-collection NAME"
            )
        return load_collection(own, [path], [Path(b) for b in background])
    if background:
        raise HarnessError("--background applies to a collection given as a file path, not to a registered collection")
    if name:
        raise HarnessError(
            "--name-collection names a collection given as a file path; registered collections keep their names"
        )
    spec = registry.collection(name_or_path)
    try:
        collection = spec.load(data_dir)
    except HarnessError:
        raise
    except (Exception, SystemExit, GeneratorExit) as e:  # plugin code: one line naming it, never a traceback
        raise HarnessError(
            f"collection {spec.name!r}: its loader {spec.loader} failed ({type(e).__name__}: {e})"
        ) from None
    if not isinstance(collection, Collection):
        raise HarnessError(
            f"collection {spec.name!r}: its loader {spec.loader} returned {type(collection).__name__}, not a Collection"
        )
    return collection


class SplitPlaces(NamedTuple):
    """Where a job's manifests are read and written."""

    folder: Path  # read, and the only place a manifest is written
    record: Path | None  # read-only, looked in first: the harness's record of its own collections


def split_places(registry: Registry, name_or_path: str, runs_dir: Path | None, splits_dir: Path | None) -> SplitPlaces:
    """--splits-dir alone when given (the only way to write the record: name it, in a checkout).
    Else a collection the harness itself registers reads its record first; whatever must be
    built (a path collection, another plugin's, a seed the record lacks) goes to `<runs>-splits/`
    beside the runs folder in use."""
    from harness.plugins import DEFAULT_PLUGINS

    if splits_dir is not None:
        return SplitPlaces(Path(splits_dir), None)
    record = None
    if not is_path_collection(registry, name_or_path) and registry.collection(name_or_path).plugin in DEFAULT_PLUGINS:
        record = locations.record_splits_dir()
    return SplitPlaces(locations.built_splits_dir(locations.runs_dir(runs_dir)), record)


@dataclass
class RunJob:
    systems: Sequence[str]
    collection: str
    seeds: Sequence[int] = SEEDS
    overrides: dict = field(default_factory=dict)
    run_name: str | None = None
    depth: int = 100
    overwrite: bool = False
    runs_dir: Path | None = None  # None: harness.locations.runs_dir()
    splits_dir: Path | None = None  # None: see split_places
    data_dir: str | None = None
    background: Sequence[str] = ()
    author_fraction: float | None = None  # None: the collection's default (else DEFAULT_AUTHOR_FRACTION)
    progress: bool = True
    collection_name: str | None = None  # names a path collection (--name-collection)
    pool: str | None = None
    dissimilarity: object = None
    max_per_author_genre: int | None = None  # None: the collection's; 0: no cap


def unique_seeds(seeds: Sequence[int]) -> list[int]:
    """Seeds in the order given, each once (`--seeds 7 7` ranks seed 7 once)."""
    return list(dict.fromkeys(int(s) for s in seeds))


def check_one_config(run_dir: Path, system: str, config: dict, seeds: Sequence[int], overwrite: bool) -> None:
    """Refuse to put a second config into a run folder: its seeds must share system and config.

    Without --overwrite any existing seed made differently is an error; with it, only seeds
    that this job does not recompute are (they would be left mixed with the new ones).
    """
    for path in sorted(Path(run_dir).glob("seed-*.json")):
        try:
            old = read_result(path)
        except HarnessError:
            continue  # unreadable: recomputed if requested, reported by the leaderboard otherwise
        if overwrite and old.get("seed") in seeds:
            continue
        diff = config_differences({"system": system, "config": config}, old)
        if diff:
            raise HarnessError(
                f"{path} was made with another config ({'; '.join(diff)}, this run's value first); a run's seeds "
                "must share one config: choose another --name"
                + ("" if overwrite else ", or --overwrite with every seed")
            )


def run_job(registry: Registry, job: RunJob, log=_log.info) -> list[RunOutcome]:
    """Run each system on each seed's split; skip seeds that are up to date."""
    from dataclasses import replace

    # absolute before any plugin code runs: a plugin that changes directory cannot move the results
    runs_dir = absolute(locations.runs_dir(job.runs_dir))
    job = replace(job, runs_dir=runs_dir, splits_dir=absolute(job.splits_dir) if job.splits_dir is not None else None)
    if job.run_name is not None:
        check_run_name(job.run_name)
    if job.run_name and len(job.systems) > 1:
        raise HarnessError("--name names one run; give one system with it")
    if job.depth < 100:
        raise HarnessError("--depth must be at least 100 (Success@100 and the reranker need the top 100)")
    specs = [registry.system(s) for s in job.systems]  # unknown names fail before any work
    for spec in specs:
        if not {"rank", "encode"} & set(spec.capabilities):
            raise HarnessError(
                f"system {spec.name!r} cannot rank a whole pool (it can: {', '.join(spec.capabilities)}); "
                f"a reranker runs as `aa-harness rerank {spec.name} --first-stage RUN`"
            )
    configs = {}
    for s in specs:  # a trained --model brings its backbone (its card's) unless one is given
        cls = load_object(s.config)
        configs[s.name] = build_config(cls, with_card_backbone(s.name, cls, job.overrides, log=log))
    # a trained model is recorded by content hash, not path (and hashed once)
    addressed = {s.name: addressed_config(config_dict(configs[s.name])) for s in specs}
    for s in specs:
        cfg, address = config_dict(configs[s.name]), addressed[s.name][1]
        if address:
            check_card(s.name, cfg, cfg.get("model"), address["card"], warn=_log.warning)
    check_runs_dir(runs_dir)
    collection = open_collection(
        registry, job.collection, data_dir=job.data_dir, background=job.background, name=job.collection_name
    )
    for spec in specs:
        name = job.run_name or spec.name
        check_runs_dir(runs_dir, collection.name, name)
        check_one_config(
            runs_dir / collection.name / name,
            spec.name,
            addressed[spec.name][0],
            unique_seeds(job.seeds),
            job.overwrite,
        )
    places = split_places(registry, job.collection, runs_dir, job.splits_dir)
    splits = get_splits(
        collection,
        unique_seeds(job.seeds),
        places.folder,
        record=places.record,
        author_fraction=job.author_fraction,
        pool=job.pool,
        dissimilarity=job.dissimilarity,
        max_per_author_genre=job.max_per_author_genre,
    )
    outcomes = []
    for spec in specs:
        cfg = configs[spec.name]
        cfg_dict, address = addressed[spec.name]
        name = job.run_name or spec.name
        with run_folder_lock(runs_dir / collection.name / name):
            outcomes += _run_system(job, spec, cfg, cfg_dict, address, collection, splits, runs_dir, name, log)
    return outcomes


@contextmanager
def run_folder_lock(run_dir: Path) -> Iterator[None]:
    """One writer of a run folder at a time (a second waits, then finds what the first wrote); a
    folder made only for the lock is removed again if nothing was written into it."""
    from harness.atomic import make_dirs
    from harness.output_set import writer_lock

    made = [p for p in (run_dir, *run_dir.parents) if not p.exists()]
    make_dirs(run_dir)
    try:
        with writer_lock(run_dir):
            yield
    finally:
        for p in made:  # the run folder first, then the parents made for it
            try:
                p.rmdir()  # only while empty
            except OSError:
                break


def _run_system(
    job: RunJob, spec, cfg, cfg_dict: dict, address, collection, splits, runs_dir: Path, name: str, log
) -> list[RunOutcome]:
    """One system's seeds, under its run folder's lock: the config check again (another writer may
    have added seeds while this one waited), then every seed that is not up to date."""
    from harness import progress

    check_one_config(runs_dir / collection.name / name, spec.name, cfg_dict, unique_seeds(job.seeds), job.overwrite)
    outcomes = []
    todo = []
    for split in splits:
        path = result_path(runs_dir, collection.name, name, split.seed)
        old = None if job.overwrite else up_to_date(path, spec.name, cfg_dict, split, job.depth, log=log)
        if old:
            log(f"{name} on {collection.name} seed {split.seed}: up to date ({path}); --overwrite to recompute")
            outcomes.append(RunOutcome(path, True, old["metrics"]))
        else:
            todo.append(split)
    if not todo:
        return outcomes
    system = call_system(spec.name, "building the system", load_object(spec.factory), cfg)  # once, for every seed
    for i, split in enumerate(todo, 1):
        if job.progress:
            _log.info(f"{name} on {collection.name}: seed {split.seed} ({i}/{len(todo)})")
        extra = describe_system(spec.name, system)
        if address:
            extra = {**extra, "model_sha256": address["sha256"], "model_card": address["card"]}
        with progress.enabled(job.progress):
            out = run_split(
                system_name=spec.name,
                system=system,
                config=cfg_dict,
                collection=collection,
                split=split,
                runs_dir=runs_dir,
                run_name=name,
                depth=job.depth,
                extra=extra,
                plugin=spec.origin(),
            )
        m = out.metrics
        took = ", ".join(f"{k} {v:.1f} s" for k, v in out.phases.items())
        log(
            f"{name} on {collection.name} seed {split.seed}: {metrics_line(m)}  -> {out.path}"
            + (f"  ({took})" if took else "")
        )
        outcomes.append(out)
    return outcomes
