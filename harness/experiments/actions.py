"""Doing one step: each kind calls the job behind its CLI verb (curate, train, run, rerank,
leaderboard), reading and writing where the plan says, and leaves a step done only when all it
makes is in place (curated data and models are moved into the store whole)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from harness.experiments.plan import DONE, Plan
from harness.experiments.spec import ExperimentError, Step
from harness.foundation.atomic import atomic_write_text

_log = logging.getLogger(__name__)


def perform(plan: Plan, address: str, *, progress: bool = False) -> None:
    """One step; `progress` switches every bar inside it (a training's epochs and its mining too),
    so `--no-progress` leaves a step's log free of them."""
    from harness.foundation import progress as progress_module

    step = plan.exp.steps[address]
    action = {"curate": _curate, "train": _train, "run": _run, "rerank": _rerank, "leaderboard": _leaderboard}
    with progress_module.enabled(progress):
        action[step.kind](plan, step, progress)


def _fresh_folder(final: Path) -> Path:
    """A staging folder beside `final`, moved into place when the step is done."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))


def _publish(staged: Path, final: Path) -> None:
    if final.exists():  # an unfinished earlier attempt (no done record): replaced whole
        shutil.rmtree(final)
    os.rename(staged, final)


def _curate(plan: Plan, step: Step, progress: bool) -> None:
    from harness.data.collection import read_documents
    from harness.data.curation import CurationSettings, curate
    from harness.runs.model_cards import training_data_fingerprint
    from harness.runs.systems import reference_embedder, text_embedder

    inputs = [p for p in (plan.data_path(name) for name in step.inputs) if p is not None]
    settings = dict(step.settings)
    pairs = settings.pop("pairs", None)
    curation = CurationSettings(
        embedder=reference_embedder(plan.registry, required=not pairs),
        sbert_model=str(plan.backbone_ref(step)),
        **settings,
    )
    final = plan.curated_dir(step)
    staged = _fresh_folder(final)
    try:
        out = staged / f"{step.name}.curated.jsonl.gz"
        if pairs:
            report = curate(inputs, out, curation, pairs_file=plan.exp.path.parent / str(pairs))
        else:
            embed = text_embedder(
                plan.registry,
                curation.embedder,
                {"model": curation.sbert_model, "device": curation.device, "batch_size": curation.batch_size},
            )
            report = curate(inputs, out, curation, embed=embed)
        data = training_data_fingerprint(list(read_documents([out]).values()), [out])
        want = step.expect.get("sha256")
        if want and data["sha256"] != want:
            raise ExperimentError(
                f"{plan.exp.path}: [{step.address}] the curated data's sha256 is {data['sha256']}, "
                f"expected {want} (expect_sha256): other inputs or another curation code"
            )
        atomic_write_text(
            staged / DONE,
            json.dumps({"file": out.name, "training_data": data, "steps": report["steps"]}, indent=1) + "\n",
        )
        _publish(staged, final)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    _log.info(f"{step.address}: {data['documents']} documents by {data['authors']} authors -> {final}")


def _train(plan: Plan, step: Step, progress: bool) -> None:
    from harness.runs.model_cards import model_id, read_card
    from harness.runs.train_job import train_job

    path, _ = plan.training_data(step)
    if path is None:
        raise ExperimentError(f"{plan.exp.path}: [{step.address}] its training data {step.inputs[0]!r} is not made yet")
    want = plan.model_id(step)
    assert want is not None  # its training data exists, so its sha256 is known
    final = plan.model_folder(want)
    rank = os.environ.get("RANK", "0")
    staged = final.with_name(f".{final.name}.training")  # every rank writes into the same folder; a rerun resumes
    model_dir = train_job(plan.registry, str(step.system), [path], staged, plan.overrides(step))
    if rank != "0":
        return
    card = read_card(Path(model_dir)) or {}
    got = model_id(card)
    if got != want:
        raise ExperimentError(
            f"{plan.exp.path}: [{step.address}] the trained model's card gives id {got}, expected {want}"
        )
    _publish(staged, final)
    _log.info(f"{step.address}: model {want} -> {final / 'model'}")


def _model_override(plan: Plan, step: Step) -> dict:
    if not step.model:
        return {}
    mid = plan.model_id(plan.exp.steps[step.model])
    folder = plan.model_folder(str(mid)) / "model"
    if mid is None or not folder.is_dir():
        raise ExperimentError(
            f"{plan.exp.path}: [{step.address}] its model ({step.model}) is not in the store "
            f"({plan.store / 'models'}); run that step first"
        )
    return {"model": str(folder)}


def _not_current(plan: Plan, step: Step) -> dict[str, list[int]]:
    """The seeds a run or rerank step still has to make, by collection: a seed with a current
    result is left as it is, so a step cut off half-way resumes where it stopped."""
    missing = plan.missing_seeds(step)
    todo = {c: [seed for seed, _ in missing[c]] for c in step.collections if missing[c]}
    done = [c for c in step.collections if not missing[c]]
    partly = [f"{c} seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))}" for c, s in todo.items()]
    if done or any(len(s) < len(plan.exp.seeds) for s in todo.values()):
        _log.info(
            f"{step.address}: {', '.join(done) or 'no collection'} current; running {'; '.join(partly) or 'nothing'}"
        )
    return todo


def _run(plan: Plan, step: Step, progress: bool) -> None:
    from harness.runs.run_job import RunJob, run_job

    overrides = plan.overrides(step, _model_override(plan, step))
    for collection, seeds in _not_current(plan, step).items():
        run_job(
            plan.registry,
            RunJob(
                systems=[str(step.system)],
                collection=collection,
                seeds=seeds,
                overrides=overrides,
                run_name=plan.run_name(step),
                runs_dir=plan.runs_dir,
                data_dir=plan.data_dir,
                progress=progress,
                overwrite=True,  # a seed's result made otherwise (another config or model) is replaced
            ),
        )


def _rerank(plan: Plan, step: Step, progress: bool) -> None:
    from harness.runs.rerank_job import RerankJob, rerank_job

    overrides = plan.overrides(step, _model_override(plan, step))
    first = plan.run_name(plan.exp.steps[str(step.first_stage)])
    for collection, seeds in _not_current(plan, step).items():
        rerank_job(
            plan.registry,
            RerankJob(
                system=str(step.system),
                first_stage=first,
                collection=collection,
                seeds=seeds,
                overrides=overrides,
                run_name=plan.run_name(step),
                runs_dir=plan.runs_dir,
                data_dir=plan.data_dir,
                overwrite=True,  # a seed's result made otherwise (another config or model) is replaced
            ),
        )


def _leaderboard(plan: Plan, step: Step, progress: bool) -> None:
    from harness.reports.leaderboard import leaderboard_files, load_board, plugin_page_names, write_pages

    out = plan.leaderboard_dir()
    own = {(c, plan.run_name(s)) for s in plan.exp.steps.values() if s.kind in ("run", "rerank") for c in s.collections}
    # the experiment's own runs: a runs folder may hold others (other experiments, runs kept stale)
    board = load_board(plan.runs_dir, plots=bool(step.settings.get("plots", True)), only=own)
    written = write_pages(leaderboard_files(board), out, plugin_pages=plugin_page_names(board))
    atomic_write_text(out / ".inputs.sha256", plan.leaderboard_inputs() + "\n")
    _log.info(f"leaderboard: {len(written)} files -> {out / 'main.md'}")
