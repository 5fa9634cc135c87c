"""fast_training in a real training run: the same short `aa-harness train` through the Hugging
Face path and through the speed layer (`--set fast_training=true`), compared from their training
logs of two `aa-harness train` runs that differ only in `fast_training`.

Either run both from an experiment file's train step, cut to the same number of steps (the step's
data must be curated and its backbone found, as `aa-harness reproduce` needs them):

    python -m benchmarks.training_paths --experiment experiments/table2-public.toml \
        --step train.reranker-q_p_r --max-steps 150 --work /tmp/paths --name reranker-qwen2.5-0.5b

or run one path at a time (`--path hf`, `--path fast`; on two GPUs at once, say) into the same
--work folder, then compare the two logs it holds:

    python -m benchmarks.training_paths --work /tmp/paths --name reranker-qwen2.5-0.5b

or compare two logs made elsewhere:

    python -m benchmarks.training_paths --hf HF.train_log.json --fast FAST.train_log.json --name reranker-qwen2.5-0.5b

Writes benchmarks/results/training-paths-<name>-<card>.json: per path the epoch's seconds,
tokens/s and documents (pairs)/s from the log, the speed-up, and the per-step losses side by side
(the two paths draw their own LoRA dropout masks and round differently in bf16, so the losses
agree closely, not exactly).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

from harness.foundation.atomic import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "results"


def _summary(log: dict) -> dict:
    """A path's timing and per-step losses; a loss that is not finite is None, and the first step
    with one is named (a path that diverges must not pass for one that agrees)."""
    epoch = next(e for e in log["log"] if "epoch_seconds" in e)
    losses = [round(e["loss"], 6) if math.isfinite(e["loss"]) else None for e in log["log"] if "loss" in e]
    return {
        "fast_training": bool(log["config"].get("fast_training")),
        "seconds": epoch["epoch_seconds"],
        "tokens_per_s": epoch["tokens_per_second"],
        "docs_per_s": epoch["docs_per_second"],
        "peak_memory_gib": epoch.get("peak_memory_gib"),  # logs of CUDA runs since it was recorded
        # without it, the process's peak: it can hold what an earlier training in the process left cached
        "peak_memory_since": epoch.get("peak_memory_since", "process start"),
        "losses": losses,
        "first_nonfinite_step": next((i for i, x in enumerate(losses) if x is None), None),
    }


def compare(hf_log: dict, fast_log: dict, name: str) -> dict:
    hf, fast = _summary(hf_log), _summary(fast_log)
    if hf["fast_training"] or not fast["fast_training"]:
        raise SystemExit("--hf must be a log without fast_training and --fast one with it")
    differ = {k for k in hf_log["config"] if k != "fast_training" and hf_log["config"][k] != fast_log["config"].get(k)}
    if differ:
        raise SystemExit(f"the two runs differ in more than fast_training: {', '.join(sorted(differ))}")
    pairs = list(zip(hf["losses"], fast["losses"]))
    gaps = [abs(a - b) for a, b in pairs if a is not None and b is not None]
    return {
        "benchmark": "training-paths",
        "name": name,
        "system": hf_log["system"],
        "device_name": hf_log["device"],
        "git_commit": hf_log["card"]["commit"],
        "finished_at": fast_log["card"]["trained_at"],
        "config": {k: v for k, v in hf_log["config"].items() if k != "fast_training"},
        "results": {
            "hf": hf,
            "fast": fast,
            "speedup": round(fast["tokens_per_s"] / hf["tokens_per_s"], 3),
            "max_abs_loss_gap": round(max(gaps), 6) if gaps else None,
            "steps": len(pairs),
            "steps_both_finite": len(gaps),
        },
    }


def step_inputs(experiment: str, address: str):
    """An experiment's train step as `aa-harness reproduce` would train it: (registry, step, plan,
    curated data file); one line if the step is not a training or its data is not curated yet."""
    from harness.experiments.plan import Plan
    from harness.experiments.reproduce import load
    from harness.foundation import locations
    from harness.plugins import load_registry

    registry = load_registry()
    exp = load(experiment, registry)
    if address not in exp.steps or exp.steps[address].kind != "train":
        trains = sorted(a for a, s in exp.steps.items() if s.kind == "train")
        raise SystemExit(f"{experiment}: no train step {address!r} (train steps: {', '.join(trains)})")
    step = exp.steps[address]
    plan = Plan(exp, registry, Path(locations.runs_dir(None)).resolve())
    data, _ = plan.training_data(step)
    if data is None:
        raise SystemExit(f"{experiment}: [{address}] its training data is not curated yet; run its curate step first")
    return registry, step, plan, data


PATHS = {"hf": False, "fast": True}


def log_paths(work: Path) -> tuple[Path, Path]:
    """Where run_paths writes the plain and the fast training's logs under `work`."""
    return work / "hf" / "train_log.json", work / "fast" / "train_log.json"


def run_paths(
    experiment: str,
    address: str,
    max_steps: int,
    work: Path,
    settings: dict | None = None,
    paths: tuple[str, ...] = ("hf", "fast"),
) -> None:
    """Train the experiment's step once per path named (plain `hf`, then `fast`) into `work`, each cut
    to `max_steps` (0: the whole training) and with the same `settings` over the step's own (how it
    runs: grad_checkpointing=false, say)."""
    from harness.runs.train_job import train_job

    registry, step, plan, data = step_inputs(experiment, address)
    for path in paths:
        extra = {**(settings or {}), "fast_training": PATHS[path], "max_steps": max_steps, "checkpoint_every": 0}
        train_job(registry, str(step.system), [data], work / path, plan.overrides(step, extra))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", help="training log of the Hugging Face path")
    ap.add_argument("--fast", help="training log of the same run with fast_training")
    ap.add_argument("--experiment", help="run both paths from this experiment file's --step")
    ap.add_argument("--step", help="the train step, e.g. train.reranker-q_p_r")
    ap.add_argument(
        "--max-steps", type=int, default=150, help="optimizer steps of each run (default 150; 0: the whole training)"
    )
    ap.add_argument(
        "--path",
        choices=("both", *PATHS),
        default="both",
        help="with --experiment: train both paths (default) or one; a single path writes no comparison",
    )
    ap.add_argument("--work", type=Path, help="where the trainings write (with --experiment), or where both logs are")
    ap.add_argument("--name", required=True, help="a label, e.g. reranker-qwen2.5-0.5b")
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="with --experiment: a setting for both runs"
    )
    args = ap.parse_args(argv)
    if args.experiment:
        from harness.config import parse_set_args

        if not (args.step and args.work):
            ap.error("--experiment needs --step and --work")
        paths = tuple(PATHS) if args.path == "both" else (args.path,)
        run_paths(args.experiment, args.step, args.max_steps, args.work, parse_set_args(args.set), paths)
        if args.path != "both":
            print(f"{args.name}: the {args.path} path's log is in {args.work / args.path}")
            return 0
        hf_path, fast_path = log_paths(args.work)
    elif args.hf and args.fast:
        hf_path, fast_path = Path(args.hf), Path(args.fast)
    elif args.work:
        hf_path, fast_path = log_paths(args.work)
    else:
        ap.error("give --hf and --fast, --work holding both logs, or --experiment with --step")
    record = compare(json.loads(hf_path.read_text()), json.loads(fast_path.read_text()), args.name)
    card = re.sub(r"[^a-z0-9]+", "-", record["device_name"].split(": ")[-1].lower()).strip("-")
    out = RESULTS / f"training-paths-{args.name}-{card}.json"
    atomic_write_text(out, json.dumps(record, indent=1) + "\n")
    print(
        f"{args.name}: fast_training {record['results']['speedup']:.2f}x tokens/s, max loss gap "
        f"{record['results']['max_abs_loss_gap']} over the {record['results']['steps_both_finite']} of "
        f"{record['results']['steps']} steps where both losses are finite -> {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
