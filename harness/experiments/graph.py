"""The step graph of an experiment: what each step needs, checked, and an order that respects it.

Edges come from the references a step makes: a curate step needs data; a train step needs data
or a curate step; a run step may need a train step (`model`); a rerank step needs its first
stage (a run or rerank step) and may need a train step; the leaderboard needs every run and
rerank step. A reference to nothing, to the wrong kind of step, or a cycle is one line.
"""

from __future__ import annotations

from harness.experiments.spec import Experiment, ExperimentError, Step


def _fail(exp: Experiment, step: Step, what: str) -> ExperimentError:
    return ExperimentError(f"{exp.path}: [{step.address}] {what}")


def _need_step(exp: Experiment, step: Step, key: str, ref: str, kinds: tuple[str, ...]) -> str:
    target = exp.steps.get(ref)
    if target is None or target.kind not in kinds:
        known = sorted(a for a, s in exp.steps.items() if s.kind in kinds)
        raise _fail(
            exp, step, f"{key} = {ref!r} is not a step of this file (expected one of: {', '.join(known) or 'none'})"
        )
    return ref


def dependencies(exp: Experiment, step: Step) -> list[str]:
    """The addresses of the steps `step` needs (data sources are not steps)."""
    if step.kind == "leaderboard":
        return [a for a, s in exp.steps.items() if s.kind in ("run", "rerank")]
    deps: list[str] = []
    if step.kind == "curate":
        for ref in step.inputs:
            if ref not in exp.data:
                raise _fail(
                    exp,
                    step,
                    f"inputs names {ref!r}, which is no [data.*] table "
                    f"(expected one of: {', '.join(sorted(exp.data)) or 'none'})",
                )
    if step.kind == "train":
        ref = step.inputs[0]
        if ref not in exp.data:
            deps.append(_need_step(exp, step, "data", ref, ("curate",)))
    if step.kind in ("curate", "train") or step.backbone:
        if step.backbone not in exp.backbones:
            raise _fail(
                exp,
                step,
                f"{'embedder' if step.kind == 'curate' else 'backbone'} = {step.backbone!r} is no "
                f"[backbones.*] table (expected one of: {', '.join(sorted(exp.backbones)) or 'none'})",
            )
    if step.model:
        deps.append(_need_step(exp, step, "model", step.model, ("train",)))
        trained = exp.steps[step.model]
        if trained.system != step.system:
            raise _fail(
                exp, step, f"model = {step.model!r} trains system {trained.system!r}; this step runs {step.system!r}"
            )
    if step.first_stage:
        deps.append(_need_step(exp, step, "first_stage", step.first_stage, ("run", "rerank")))
        first = exp.steps[step.first_stage]
        missing = sorted(set(step.collections) - set(first.collections))
        if missing:
            raise _fail(exp, step, f"first_stage {step.first_stage!r} does not run on {', '.join(missing)}")
    return deps


def order(exp: Experiment) -> list[str]:
    """Every step's address, each after the steps it needs (file order among equals); a cycle is an error."""
    deps = {a: dependencies(exp, s) for a, s in exp.steps.items()}
    done: list[str] = []
    state: dict[str, str] = {}

    def visit(a: str, path: list[str]) -> None:
        if state.get(a) == "done":
            return
        if state.get(a) == "visiting":
            cycle = path[path.index(a) :] + [a]
            raise ExperimentError(f"{exp.path}: [{a}] the steps form a cycle: {' -> '.join(cycle)}")
        state[a] = "visiting"
        for d in deps[a]:
            visit(d, path + [a])
        state[a] = "done"
        done.append(a)

    for a in exp.steps:
        visit(a, [])
    return done


def select(exp: Experiment, only: list[str] | None) -> list[str]:
    """The steps named by --only (an address, or a kind for all steps of it); all when None."""
    if not only:
        return list(exp.steps)
    out = []
    for name in only:
        hits = [a for a, s in exp.steps.items() if a == name or s.kind == name]
        if not hits:
            raise ExperimentError(f"{exp.path}: --only {name!r} names no step (steps: {', '.join(exp.steps)})")
        out += [a for a in hits if a not in out]
    return out
