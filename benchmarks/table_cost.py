"""What a table costs on a GPU: each GPU step of an experiment file in GPU-minutes, measured where
it is done (a training's epochs from its log; a run's or rerank's wall time from its results) and
projected from those precedents where it is left, as `aa-harness reproduce FILE --dry-run` prices
them. Model loading, negative mining and staging are not in these figures; a training whose log
is committed counts as done, though its weights may have to be made again for what is left.

    python -m benchmarks.table_cost experiments/table1-public.toml experiments/table2-public.toml \\
        --runs-dir leaderboards/runs [--collections reddit-xsub blogs-xtopic pan19-en]

With --timings, training logs (`*.train_log.json`, or a store's `<id>/train_log.json`) are read
from more folders after the experiment's own, and win for a model both hold: a rerun's, from the
store it trained into (`<store>/models`). With --collections, the runs and reranks count on those
collections only (a table's headline collections, say, where its steps also run on others);
trainings count whole, since every collection's results need them. With --label, the record is a
rerun's (its runs folder and its store's logs, say): it gets its own file and its own row on the
performance page, added up with no other file's steps. Writes benchmarks/results/table-cost-<experiment>.json, or
table-cost-<experiment>-<collections joined by +>.json with --collections.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from harness.foundation.atomic import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "results"


def _devices(plan, step, projection) -> list[str]:
    """The cards the step's committed results or training log name."""
    from harness.runs.results import result_path

    if step.kind == "train":
        device = projection.device_of_model.get(plan.model_id(step))
        return [device] if device else []
    found = set()
    for c in step.collections:
        for seed in plan.exp.seeds:
            path = result_path(plan.runs_dir, c, plan.run_name(step), seed)
            if path.is_file():
                found.add(str(json.loads(path.read_text(encoding="utf-8"))["provenance"].get("device", "?")))
    return sorted(found)


def _left(plan, step, projection) -> dict[str, list[int]]:
    """A training: {"model": []} until its log is committed. A run or rerank: its seeds without a
    current result, per collection (as `reproduce` judges them)."""
    if step.kind == "train":
        return {} if plan.model_id(step) in projection.by_model else {"model": []}
    return {c: [seed for seed, _ in m] for c, m in plan.missing_seeds(step).items() if m}


def _measured(plan, step, projection, left: dict[str, list[int]]) -> float | None:
    """GPU-minutes of what is done: a training's epochs; the wall time on a GPU of a run's or
    rerank's current results."""
    if step.kind == "train":
        return None if left else projection.measured(step, plan)
    return projection.measured(step, plan, skip=left)


def _scoped(exp, collections: list[str] | None) -> dict:
    """The experiment's GPU steps, the runs and reranks cut to `collections` (None: all); one line
    for a collection no run or rerank names."""
    steps = {a: s for a, s in exp.steps.items() if s.kind in ("train", "run", "rerank")}
    if collections is None:
        return steps
    named = {c for s in steps.values() for c in s.collections}
    unknown = [c for c in collections if c not in named]
    if unknown:
        raise SystemExit(
            f"{exp.path}: --collections {', '.join(unknown)}: no run or rerank there names it "
            f"(they name {', '.join(sorted(named))})"
        )
    return {
        a: s if s.kind == "train" else replace(s, collections=tuple(c for c in s.collections if c in collections))
        for a, s in steps.items()
    }


def table_cost(
    experiment: str,
    runs_dir: Path,
    collections: list[str] | None = None,
    timings: list[Path] | None = None,
    label: str | None = None,
) -> dict:
    from harness.experiments.plan import Plan
    from harness.experiments.projection import Projection
    from harness.experiments.reproduce import load
    from harness.foundation.provenance import git_commit
    from harness.plugins import load_registry

    registry = load_registry()
    exp = load(experiment, registry)
    plan = Plan(exp, registry, runs_dir.resolve())
    projection = Projection(exp, timings or ())
    steps = []
    for address, step in _scoped(exp, collections).items():
        left = _left(plan, step, projection)
        measured = _measured(plan, step, projection, left)
        seeds_left = None if step.kind == "train" else {c: len(seeds) for c, seeds in left.items()}
        projected = projection.minutes(step, plan, seeds_left) if left else None
        steps.append(
            {
                "step": address,
                "kind": step.kind,
                # what the step makes, by content: two files naming the same model or run share it
                "makes": (plan.model_id(step) or address) if step.kind == "train" else f"runs/{plan.run_name(step)}",
                "measured": measured,
                "projected": projected,
                "left": list(left),
                "seeds_left": sum(len(seeds) for seeds in left.values()),
                "devices": _devices(plan, step, projection) if measured is not None else [],
            }
        )
    measured_total = sum(s["measured"] or 0 for s in steps)
    projected_total = sum(s["projected"] or 0 for s in steps)
    return {
        "benchmark": "table-cost",
        "name": exp.name,
        "experiment": Path(experiment).as_posix(),
        "label": label,  # a rerun's name, beside the record's own figures: its own row on the page
        "runs_dir": Path(runs_dir).as_posix(),
        "collections": collections,  # None: every collection the steps name
        "timings": [Path(t).as_posix() for t in timings or []],  # read after the experiment's own
        "device_name": ", ".join(sorted({d for s in steps for d in s["devices"]})) or "—",
        "git_commit": git_commit(),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "results": {
            "steps": steps,
            "measured_gpu_minutes": round(measured_total, 1),
            "projected_gpu_minutes_left": round(projected_total, 1),
            "no_precedent": [s["step"] for s in steps if s["left"] and s["projected"] is None],
        },
    }


def _label(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", text):
        raise argparse.ArgumentTypeError(f"{text!r}: letters, digits, '.' and '-' only (it names a file)")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiments", nargs="+", help="experiment files")
    ap.add_argument("--runs-dir", type=Path, required=True, help="the results folder the steps write to")
    ap.add_argument("--collections", nargs="+", metavar="NAME", help="count runs and reranks on these collections only")
    ap.add_argument(
        "--timings",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="more folders of training logs, read after the experiment's own (a rerun's logs win)",
    )
    ap.add_argument(
        "--label",
        type=_label,
        help="a rerun's name (letters, digits, '.', '-'), e.g. rerun-h200: its own row on the page and its "
        "own file, table-cost-<experiment>[-<collections>]-<label>.json",
    )
    args = ap.parse_args(argv)
    for experiment in args.experiments:
        record = table_cost(experiment, args.runs_dir, args.collections, args.timings, args.label)
        scope = f"-{'+'.join(args.collections)}" if args.collections else ""
        out = RESULTS / f"table-cost-{record['name']}{scope}{f'-{args.label}' if args.label else ''}.json"
        atomic_write_text(out, json.dumps(record, indent=1) + "\n")
        r = record["results"]
        print(
            f"{record['name']}: {r['measured_gpu_minutes']} GPU-minutes measured, "
            f"{r['projected_gpu_minutes_left']} projected for what is left -> {out}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
