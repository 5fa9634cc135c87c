"""`aa-harness reproduce FILE`: check the experiment file whole, find what is not done yet, and do
it in an order that respects the step graph, here or on Slurm. Run again, it does nothing."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from harness.experiments.graph import dependencies, order, select
from harness.experiments.plan import Plan, Status
from harness.experiments.projection import Projection
from harness.experiments.spec import Experiment, ExperimentError, read_experiment

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    only: Sequence[str] = ()
    dry_run: bool = False
    gpus: int = 0
    executor: str = "local"
    runs_dir: Path | None = None
    data_dir: str | None = None
    progress: bool = True
    slurm_partition: str | None = None
    slurm_timeout_min: int = 240
    collections: Sequence[str] = ()  # run and rerank steps only on these (empty: every collection a step names)


def load(path: str | Path, registry) -> Experiment:
    """The experiment, its references, step graph and every step's config checked before any work."""
    exp = read_experiment(path)
    for step in exp.steps.values():
        if step.system is not None and step.system not in registry.systems:
            raise ExperimentError(
                f"{exp.path}: [{step.address}] system {step.system!r} is not registered "
                f"(registered: {', '.join(sorted(registry.systems))})"
            )
        if step.system is not None:
            spec = registry.system(step.system)
            can = {
                "train": bool(spec.trainer),
                "run": bool({"rank", "encode"} & set(spec.capabilities)),
                "rerank": "rerank" in spec.capabilities,
            }[step.kind]
            if not can:
                raise ExperimentError(
                    f"{exp.path}: [{step.address}] system {step.system!r} cannot {step.kind} "
                    f"(it can: {', '.join(spec.capabilities)})"
                )
        if step.gpus > 1 and step.kind != "train":
            raise ExperimentError(
                f"{exp.path}: [{step.address}] gpus = {step.gpus}: only a train step runs on several "
                "GPUs (through torchrun)"
            )
        for c in step.collections:
            if c not in registry.collections:
                raise ExperimentError(
                    f"{exp.path}: [{step.address}] collection {c!r} is not registered "
                    f"(registered: {', '.join(sorted(registry.collections))})"
                )
    order(exp)  # references and cycles
    return exp


def narrow(exp: Experiment, collections: Sequence[str]) -> Experiment:
    """The experiment with its run and rerank steps limited to `collections` (a step left with none
    has nothing to do); a name no step runs on is an error."""
    if not collections:
        return exp
    named = {c for s in exp.steps.values() for c in s.collections}
    unknown = [c for c in collections if c not in named]
    if unknown:
        raise ExperimentError(
            f"{exp.path}: --collections {' '.join(unknown)}: no step runs on "
            f"{'it' if len(unknown) == 1 else 'them'} (the file's: {', '.join(sorted(named))})"
        )
    keep = set(collections)
    steps = {
        a: replace(s, collections=tuple(c for c in s.collections if c in keep)) if s.collections else s
        for a, s in exp.steps.items()
    }
    return replace(exp, steps=steps)


def outputs(exp: Experiment) -> list[str]:
    """What an experiment is for: its results and pages, and any step nothing else needs; curation
    and training are done for them, so a model whose results are all current need not be trained."""
    used = {d for s in exp.steps.values() for d in dependencies(exp, s)}
    return [a for a, s in exp.steps.items() if s.kind in ("run", "rerank", "leaderboard") or a not in used]


def needed(plan: Plan, targets: Sequence[str], explicit: bool) -> tuple[list[str], dict[str, Status]]:
    """The steps to run for `targets` (those not done, and what they need that is not done), in
    graph order; with `explicit` (--only) exactly the targets, their inputs must be done."""
    exp = plan.exp
    status: dict[str, Status] = {}

    def st(a: str) -> Status:
        if a not in status:
            status[a] = plan.status(a)
        return status[a]

    want: set[str] = set()

    def pull(a: str) -> None:
        if a in want or st(a).done:
            return
        want.add(a)
        for d in dependencies(exp, exp.steps[a]):
            pull(d)

    for a in targets:
        if explicit:
            if not st(a).done:
                want.add(a)
        else:
            pull(a)
    return [a for a in order(exp) if a in want], status


def data_read_by(exp: Experiment, todo: Sequence[str]) -> list[str]:
    """The data names the steps to run read: a curation's inputs, a training's file. Data whose
    curation is already in the store is not needed again."""
    names = {i for a in todo if exp.steps[a].kind in ("curate", "train") for i in exp.steps[a].inputs}
    return [n for n in exp.data if n in names]


def reproduce(registry, path: str | Path, opts: Options, out=print) -> int:
    from harness.experiments import executors
    from harness.experiments.actions import perform
    from harness.foundation import locations

    exp = narrow(load(path, registry), opts.collections)
    runs_dir = Path(locations.runs_dir(opts.runs_dir)).resolve()
    plan = Plan(exp, registry, runs_dir, data_dir=opts.data_dir)
    for a, b in plan.same_models():
        raise ExperimentError(
            f"{exp.path}: [{a}] and [{b}] train the same model (they differ only in settings that do not "
            "decide its weights, such as fast_training or the device): keep one"
        )
    targets = select(exp, list(opts.only) or None) if opts.only else outputs(exp)
    todo, status = needed(plan, targets, explicit=bool(opts.only))
    if opts.dry_run:
        return _print_plan(plan, targets, todo, status, out)
    for name in data_read_by(exp, todo):  # present and of the sha256 declared, before any work
        plan.data_path(name)
    scope = len(targets) if opts.only else len(exp.steps)
    if not todo:
        out(f"{exp.name}: nothing to do, all {scope} steps are done or not needed ({runs_dir})")
        return 0
    if opts.only:
        for a in todo:
            missing = [d for d in dependencies(exp, exp.steps[a]) if d not in todo and not plan.status(d).done]
            if missing:
                raise ExperimentError(
                    f"{exp.path}: [{a}] needs {', '.join(missing)}, not done yet (run without --only)"
                )
    for name in sorted({str(exp.steps[a].backbone) for a in todo if exp.steps[a].backbone}):
        plan.check_backbone(name)
    out(f"{exp.name}: {len(todo)} of {scope} steps to run: {', '.join(todo)}")
    deps = {a: [d for d in dependencies(exp, exp.steps[a]) if d in todo] for a in todo}

    def report(address: str, seconds: float) -> None:
        out(f"{address}: done in {seconds:.1f} s")

    if opts.executor == "slurm":
        executors.run_on_slurm(
            exp,
            todo,
            deps,
            runs_dir,
            report,
            opts.slurm_partition,
            opts.slurm_timeout_min,
            opts.data_dir,
            opts.collections,
        )
    elif opts.gpus > 1 and len(todo) > 1:
        projection = Projection(exp)
        minutes = {a: projection.minutes_left(exp.steps[a], plan) or 0.0 for a in todo}
        executors.run_side_by_side(
            exp,
            executors.critical_first(todo, deps, minutes),
            deps,
            opts.gpus,
            runs_dir,
            report,
            opts.data_dir,
            collections=opts.collections,
        )
    else:
        executors.run_in_process(todo, lambda a: perform(plan, a, progress=opts.progress), report)
    out(
        f"{exp.name}: {len(todo)} steps done"
        + (f"; the pages: {plan.leaderboard_dir() / 'main.md'}" if "leaderboard" in todo else "")
    )
    return 0


def _print_plan(plan: Plan, targets: Sequence[str], todo: Sequence[str], status: dict[str, Status], out) -> int:
    from tabulate import tabulate

    exp = plan.exp
    projection = Projection(exp)
    rows, measured = [], []
    left = {a: projection.minutes_left(exp.steps[a], plan) for a in todo}  # reads the step's results once
    for a in order(exp):
        if a not in targets and a not in todo and plan.exp.steps[a].kind not in ("curate", "train"):
            continue  # --only: the rest of the file is not asked about
        st = status.get(a) or plan.status(a)
        state = "done" if st.done else ("to run" if a in todo else "not needed")
        why = st.why if st.done or a in todo else f"{st.why}; what it is for is current"
        if a in todo:
            minutes = left[a]
            cell = "—" if minutes is None else f"{minutes} projected"
        else:
            minutes = projection.measured(exp.steps[a], plan)
            cell = "—" if minutes is None else f"{minutes} measured"
            if minutes is not None:
                measured.append(minutes)
        rows.append([a, state, why, cell])
    out(tabulate(rows, headers=["step", "state", "why", "GPU-minutes"], tablefmt="github", disable_numparse=True))
    known = [m for m in left.values() if isinstance(m, float)]
    line = f"{exp.name}: {len(todo)} of {len(rows)} steps to run"
    if known:
        line += f"; about {sum(known):.0f} GPU-minutes for the {len(known)} with a measured precedent"
    if measured:
        line += (
            f"; the {len(measured)} made on a GPU took {sum(measured):.0f} GPU-minutes (trainings: epochs "
            "only; runs: the wall time their results recorded)"
        )
    out(line)
    return 0
