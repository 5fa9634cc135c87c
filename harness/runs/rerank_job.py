"""`aa-harness rerank`: rescore a first-stage run's saved top-k with a reranker, per seed.

The new run is named `<first stage>+<system>[-<strategy>]` unless --name says otherwise; its
config records the first stage and a hash of the rankings it read. Success@100 cannot change
when the top 100 are reranked (the same 100 candidates), so it equals the first stage's.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.evaluation.metrics import metrics_line
from harness.plugins import Registry
from harness.runs.containment import own_copies
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
from harness.runs.results import (
    check_run_name,
    check_runs_dir,
    rankings_sha256,
    read_rankings,
    read_result,
    result_path,
)
from harness.runs.runner import RunOutcome, call_system, describe_system, record_run, up_to_date
from harness.runs.verified import verified_result
from harness.specs import load_object

_log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class RerankJob(CollectionJob):
    """A reranker rescoring a first-stage run's saved top `depth`, on one collection's seeds."""

    system: str
    first_stage: str  # the first-stage run's name in the same runs folder


def default_run_name(first_stage: str, system: str, config) -> str:
    strategy = getattr(config, "strategy", None)
    return f"{first_stage}+{system}" + (f"-{strategy}" if strategy else "")


def rerank_job(registry: Registry, job: RerankJob, log=_log.info) -> list[RunOutcome]:
    job, runs_dir = with_absolute_places(job)
    spec = registry.system(job.system)
    if job.depth < 100:
        raise HarnessError(
            f"--depth {job.depth}: a reranker rescores at least the first stage's top 100 "
            "(Success@100 is the first stage's by construction)"
        )
    if "rerank" not in spec.capabilities:
        rerankers = sorted(s.name for s in registry.systems.values() if "rerank" in s.capabilities)
        raise HarnessError(f"system {job.system!r} is not a reranker (rerankers: {', '.join(rerankers) or 'none'})")
    config, recorded, address = system_config(spec, job.overrides)
    check_run_name(job.first_stage, "first-stage run name")
    if job.run_name is not None:
        check_run_name(job.run_name)
    name = job.run_name or default_run_name(job.first_stage, spec.name, config)
    check_run_name(name)
    check_runs_dir(runs_dir)
    collection = open_collection(registry, job.collection, data_dir=job.data_dir, name=job.collection_name)
    check_runs_dir(runs_dir, collection.name, name)
    seeds = unique_seeds(job.seeds)
    check_one_config(
        runs_dir / collection.name / name, spec.name, {**recorded, "first_stage": job.first_stage}, seeds, job.overwrite
    )
    splits = job_splits(registry, job, collection)
    with run_folder_lock(runs_dir / collection.name / name):  # one writer of the run folder at a time
        check_one_config(
            runs_dir / collection.name / name,
            spec.name,  # again: another writer may have added seeds
            {**recorded, "first_stage": job.first_stage},
            seeds,
            job.overwrite,
        )
        system, outcomes = None, []
        for seed, split in zip(seeds, splits):
            first = result_path(runs_dir, collection.name, job.first_stage, seed)
            if not first.is_file():
                raise HarnessError(
                    f"{first}: the first stage {job.first_stage!r} has no result for {collection.name} seed {seed}; run it first"
                )
            fs = read_result(first)
            if fs["split_sha256"] != split.sha256:
                raise HarnessError(f"{first} was made on another split of {collection.name} seed {seed}")
            fs = verified_result(first, split, registry)  # its rankings exist, are whole and give its metrics
            if fs["depth"] < job.depth:
                raise HarnessError(f"{first} kept the top {fs['depth']}, fewer than --depth {job.depth}")
            digest = rankings_sha256(first)  # the rankings it was verified on
            cfg = {**recorded, "first_stage": job.first_stage, "first_stage_rankings_sha256": digest}
            path = result_path(runs_dir, collection.name, name, seed)
            if not job.overwrite and up_to_date(path, spec.name, cfg, split, job.depth, log=log):
                log(f"{name} on {collection.name} seed {seed}: up to date ({path}); --overwrite to recompute")
                outcomes.append(RunOutcome(path, True, read_result(path)["metrics"]))
                continue
            system = system or call_system(spec.name, "building the system", load_object(spec.factory), config)
            first_rankings = read_rankings(first)
            docs = collection.documents
            # ids fixed here; the reranker gets its own copies of the documents
            id_lists = [[c for c, _ in first_rankings.get(q.documentID, [])[: job.depth]] for q in split.queries]
            queries = own_copies([docs[q.documentID] for q in split.queries])
            cand_lists = [own_copies([docs[c] for c in ids]) for ids in id_lists]
            start = time.perf_counter()
            scores = call_system(spec.name, "rerank()", system.rerank, queries, cand_lists)
            wall = time.perf_counter() - start
            if (
                not isinstance(scores, (list, tuple))
                or len(scores) != len(cand_lists)
                or any(not hasattr(sc, "__len__") or len(sc) != len(c) for sc, c in zip(scores, cand_lists))
            ):
                raise HarnessError(f"system {spec.name!r}: rerank() must return one score per candidate, per query")
            try:
                rankings = {
                    q.documentID: [(c, float(s)) for c, s in zip(ids, sc)]
                    for q, ids, sc in zip(split.queries, id_lists, scores)
                    if ids
                }
            except (TypeError, ValueError) as e:
                raise HarnessError(f"system {spec.name!r}: rerank() must return numbers ({e})") from None
            extra = {
                **describe_system(spec.name, system),
                "first_stage": job.first_stage,
                "first_stage_metrics": fs["metrics"],
            }
            if address:
                extra.update(model_sha256=address["sha256"], model_card=address["card"])
            out = record_run(
                system_name=spec.name,
                system=system,
                config=cfg,
                collection=collection,
                split=split,
                rankings=rankings,
                wall=wall,
                runs_dir=runs_dir,
                run_name=name,
                depth=job.depth,
                extra=extra,
                plugin=spec.origin(),
            )
            m = out.metrics
            log(
                f"{name} on {collection.name} seed {seed}: {metrics_line(m)} (first stage S@8 "
                f"{100 * fs['metrics']['success@8']:.1f}%)  -> {out.path}"
            )
            outcomes.append(out)
        return outcomes
