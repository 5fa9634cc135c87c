"""`aa-harness run`: each system ranks the whole pool of each seed's split; results and rankings
per seed. Callable from Python too (tests, notebooks)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from harness.errors import HarnessError
from harness.evaluation.metrics import metrics_line
from harness.plugins import Registry
from harness.runs.job import (
    CollectionJob,
    check_one_config,
    job_splits,
    open_collection,
    run_folder_lock,
    system_config,
    unique_seeds,
    with_absolute_places,
)
from harness.runs.results import check_run_name, check_runs_dir, result_path
from harness.runs.runner import (
    RunOutcome,
    call_system,
    describe_system,
    run_split,
    up_to_date,
)
from harness.specs import load_object

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class RunJob(CollectionJob):
    """Systems that rank a whole pool, on one collection's seeds."""

    systems: Sequence[str]
    background: Sequence[str] = ()  # extra background files (a path collection only)
    progress: bool = True
    pool: str | None = None  # the split's candidate pool (None: the collection's)
    dissimilarity: object = None  # the query-needle rule (None: the collection's)


def run_job(registry: Registry, job: RunJob, log=_log.info) -> list[RunOutcome]:
    """Run each system on each seed's split; skip seeds that are up to date."""
    job, runs_dir = with_absolute_places(job)
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
    configs = {s.name: system_config(s, job.overrides, log) for s in specs}
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
            configs[spec.name].recorded,
            unique_seeds(job.seeds),
            job.overwrite,
        )
    splits = job_splits(registry, job, collection, pool=job.pool, dissimilarity=job.dissimilarity)
    outcomes = []
    for spec in specs:
        name = job.run_name or spec.name
        with run_folder_lock(runs_dir / collection.name / name):
            outcomes += _run_system(job, spec, configs[spec.name], collection, splits, runs_dir, name, log)
    return outcomes


def _run_system(job: RunJob, spec, configured, collection, splits, runs_dir: Path, name: str, log) -> list[RunOutcome]:
    """One system's seeds, under its run folder's lock: the config check again (another writer may
    have added seeds while this one waited), then every seed that is not up to date."""
    from harness.foundation import progress

    cfg, cfg_dict, address = configured
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
