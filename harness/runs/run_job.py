"""The jobs behind the CLI verbs, callable from Python too (tests, notebooks)."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from harness.config import build_config, config_dict
from harness.data.collection import Collection, load_collection
from harness.errors import HarnessError
from harness.evaluation.splits import SEEDS, Split, get_split
from harness.plugins import Registry
from harness.runs.results import DEFAULT_RUNS_DIR, result_path
from harness.runs.runner import RunOutcome, run_split, up_to_date
from harness.specs import load_object

DEFAULT_SPLITS_DIR = Path("splits")


def open_collection(registry: Registry, name_or_path: str, *, data_dir=None, background: Sequence[str] = ()) -> Collection:
    """A registered collection by name, or an ad-hoc one from a canonical JSONL file path."""
    path = Path(name_or_path)
    if name_or_path not in registry.collections and (path.suffix in (".jsonl", ".gz") or path.exists()):
        if not path.exists():
            raise HarnessError(f"{path}: collection file not found")
        name = path.name.split(".jsonl")[0]
        return load_collection(name, [path], [Path(b) for b in background])
    if background:
        raise HarnessError("--background applies to a collection given as a file path, not to a registered collection")
    return registry.collection(name_or_path).load(data_dir)


@dataclass
class RunJob:
    systems: Sequence[str]
    collection: str
    seeds: Sequence[int] = SEEDS
    overrides: dict = field(default_factory=dict)
    run_name: str | None = None
    depth: int = 100
    overwrite: bool = False
    runs_dir: Path = DEFAULT_RUNS_DIR
    splits_dir: Path = DEFAULT_SPLITS_DIR
    data_dir: str | None = None
    background: Sequence[str] = ()
    author_fraction: float | None = None  # None: the collection's default (else DEFAULT_AUTHOR_FRACTION)
    progress: bool = True
    pool: str | None = None
    dissimilarity: object = None


def run_job(registry: Registry, job: RunJob, log=print) -> list[RunOutcome]:
    """Run each system on each seed's split; skip seeds that are up to date."""
    from tqdm.auto import tqdm

    if job.run_name and len(job.systems) > 1:
        raise HarnessError("--name names one run; give one system with it")
    if job.depth < 100:
        raise HarnessError("--depth must be at least 100 (Success@100 and the reranker need the top 100)")
    specs = [registry.system(s) for s in job.systems]  # unknown names fail before any work
    for spec in specs:
        if not {"rank", "encode"} & set(spec.capabilities):
            raise HarnessError(f"system {spec.name!r} cannot rank a whole pool (it can: {', '.join(spec.capabilities)}); "
                               f"a reranker runs as `aa-harness rerank {spec.name} --first-stage RUN`")
    configs = {s.name: build_config(load_object(s.config), job.overrides) for s in specs}
    collection = open_collection(registry, job.collection, data_dir=job.data_dir, background=job.background)
    splits: list[Split] = [get_split(collection, seed, job.splits_dir, author_fraction=job.author_fraction, pool=job.pool,
                                     dissimilarity=job.dissimilarity) for seed in job.seeds]
    outcomes = []
    for spec in specs:
        cfg = configs[spec.name]
        cfg_dict = config_dict(cfg)
        name = job.run_name or spec.name
        todo = []
        for split in splits:
            path = result_path(job.runs_dir, collection.name, name, split.seed)
            old = None if job.overwrite else up_to_date(path, spec.name, cfg_dict, split, job.depth)
            if old:
                log(f"{name} on {collection.name} seed {split.seed}: up to date ({path}); --overwrite to recompute")
                outcomes.append(RunOutcome(path, True, old["metrics"]))
            else:
                todo.append(split)
        if not todo:
            continue
        system = load_object(spec.factory)(cfg)  # built once, used for every seed
        for split in tqdm(todo, desc=f"{name} on {collection.name}", unit="seed", disable=not job.progress, file=sys.stderr):
            extra = getattr(system, "describe", lambda: {})()
            out = run_split(system_name=spec.name, system=system, config=cfg_dict, collection=collection, split=split,
                            runs_dir=job.runs_dir, run_name=name, depth=job.depth, extra=extra)
            m = out.metrics
            log(f"{name} on {collection.name} seed {split.seed}: S@8 {m['success@8']:.3f}  S@100 {m['success@100']:.3f}  "
                f"MRR@20 {m['mrr@20']:.3f}  -> {out.path}")
            outcomes.append(out)
    return outcomes
