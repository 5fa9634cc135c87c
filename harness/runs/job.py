"""What a run and a rerank share: the job's fields about the collection, its splits and where
results go, and the steps that prepare either before any system is built (places made absolute,
the system's config with its trained model addressed by content, the collection and its splits,
the one-config rule and the lock of a run folder)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence, TypeVar

from harness.config import build_config, config_dict
from harness.data.collection import Collection, load_collection
from harness.errors import HarnessError
from harness.evaluation.split import Split
from harness.evaluation.split_settings import SEEDS
from harness.evaluation.split_store import get_splits
from harness.foundation import locations
from harness.plugins import Registry
from harness.runs.model_cards import addressed_config, check_card, with_card_backbone
from harness.runs.results import absolute, config_differences, read_result
from harness.specs import SystemSpec, load_object

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class CollectionJob:
    """The fields a run and a rerank share."""

    collection: str  # a registered name, or a canonical JSONL(.gz) path
    seeds: Sequence[int] = SEEDS
    overrides: dict = field(default_factory=dict)  # config values (--set, --model)
    run_name: str | None = None  # None: the system's name (a rerank: first stage + reranker)
    depth: int = 100
    overwrite: bool = False
    runs_dir: Path | None = None  # None: harness.foundation.locations.runs_dir()
    splits_dir: Path | None = None  # None: see split_places
    data_dir: str | None = None
    author_fraction: float | None = None  # None: the collection's default (else DEFAULT_AUTHOR_FRACTION)
    collection_name: str | None = None  # names a path collection (--name-collection)
    max_per_author_genre: int | None = None  # None: the collection's; 0: no cap


J = TypeVar("J", bound=CollectionJob)


def with_absolute_places(job: J) -> tuple[J, Path]:
    """The job with its runs and splits folders made absolute, and its runs folder. Done before any
    plugin code runs: a plugin that changes directory cannot move the results."""
    runs_dir = absolute(locations.runs_dir(job.runs_dir))
    splits_dir = absolute(job.splits_dir) if job.splits_dir is not None else None
    return replace(job, runs_dir=runs_dir, splits_dir=splits_dir), runs_dir


class SystemConfig(NamedTuple):
    """A system's config for a job: as built, and as results record it (a trained model by content)."""

    config: object
    recorded: dict
    address: dict | None  # the trained model's hash and card; None without one


def system_config(spec: SystemSpec, overrides: dict, log=_log.info) -> SystemConfig:
    """The config a job runs `spec` with: a trained --model brings its backbone (its card's) unless
    one is given; the model is recorded by content hash, not path (hashed once), and its card checked."""
    cls = load_object(spec.config)
    config = build_config(cls, with_card_backbone(spec.name, cls, overrides, log=log))
    cfg = config_dict(config)
    recorded, address = addressed_config(cfg)
    if address:
        check_card(spec.name, cfg, cfg.get("model"), address["card"], warn=_log.warning)
    return SystemConfig(config, recorded, address)


def job_splits(registry: Registry, job: CollectionJob, collection: Collection, **settings) -> list[Split]:
    """Each of the job's seeds' split of `collection` (read from the record or the job's manifests
    folder, or built there); `settings`: the builder's further settings (pool, dissimilarity)."""
    places = split_places(registry, job.collection, job.runs_dir, job.splits_dir)
    return get_splits(
        collection,
        unique_seeds(job.seeds),
        places.folder,
        record=places.record,
        author_fraction=job.author_fraction,
        max_per_author_genre=job.max_per_author_genre,
        **settings,
    )


def is_path_collection(registry: Registry, name_or_path: str) -> bool:
    """True when `--collection` names a JSONL file rather than a registered collection."""
    path = Path(name_or_path)
    return name_or_path not in registry.collections and (path.suffix in (".jsonl", ".gz") or path.exists())


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


@contextmanager
def run_folder_lock(run_dir: Path) -> Iterator[None]:
    """One writer of a run folder at a time (a second waits, then finds what the first wrote); a
    folder made only for the lock is removed again if nothing was written into it."""
    from harness.foundation.atomic import make_dirs
    from harness.foundation.output_set import writer_lock

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
