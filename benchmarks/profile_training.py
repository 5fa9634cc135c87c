"""Where a real training run spends its time: an experiment's train step through one path (the
plain Hugging Face + PEFT step, or fast_training), every optimizer step timed and a window of them
profiled after the warm-up.

    python -m benchmarks.profile_training --experiment experiments/table2-public.toml \\
        --step train.reranker-q_p_r --path fast --work /tmp/prof --name reranker-qwen2.5-0.5b

Prints, per step: the wall seconds unprofiled (the steps just before the window) and profiled; the
device's busy seconds (its kernels' own time), so the share of a step the device waits for the
host; the kernels by device time; and the host's ops by their own CPU time. The window is driven by
the optimizer's steps (a global post-step hook), so it holds whole training steps whatever loop
runs them. On a CPU the "device" is the CPU's own ops, so only the shape of the figures means
anything there. Writes benchmarks/results/training-profile-<name>-<path>-<card>.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

from benchmarks.profiler_rows import busy_seconds, device_rows, host_rows
from harness.foundation.atomic import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "results"


class StepClock:
    """Called after every optimizer step: the time it ended (the device synchronized first, so a
    step's time is its work, not its launches) and one tick of the profiler's schedule."""

    def __init__(self, sync, tick):
        self.sync, self.tick = sync, tick
        self.ends: list[float] = [time.perf_counter()]

    def __call__(self, *_):
        self.sync()
        self.ends.append(time.perf_counter())
        self.tick()

    def seconds(self, first: int, last: int) -> list[float]:
        """Wall seconds of steps first..last-1 (0-based), those that ran."""
        return [self.ends[i + 1] - self.ends[i] for i in range(first, min(last, len(self.ends) - 1))]


def _top(rows, attr: str, n: int, steps: int) -> list[dict]:
    return [
        {
            "name": e.key[:90],
            "seconds_per_step": round(getattr(e, attr) / 1e6 / steps, 5),
            "calls_per_step": e.count / steps,
        }
        for e in rows[:n]
    ]


def profile_training(experiment: str, address: str, path: str, work: Path, skip: int, steps: int, top: int = 15):
    """Train the step through `path` for skip + 1 + steps optimizer steps: steps 0..skip-1 unprofiled
    (the first half of them warm-up), one profiler warm-up step, then `steps` profiled."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import ProfilerActivity, schedule
    from torch.profiler import profile as torch_profile

    from benchmarks.training_paths import step_inputs
    from harness.runs.train_job import train_job

    registry, step, plan, data = step_inputs(experiment, address)
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    found: dict = {}
    extra = {"fast_training": path == "fast", "max_steps": skip + 1 + steps, "checkpoint_every": 0}
    out = work / path
    with torch_profile(
        activities=activities,
        schedule=schedule(wait=skip, warmup=1, active=steps, repeat=1),
        on_trace_ready=lambda p: found.setdefault("events", p.key_averages()),
    ) as prof:
        clock = StepClock(torch.cuda.synchronize if cuda else (lambda: None), prof.step)
        hook = register_optimizer_step_post_hook(clock)
        try:
            train_job(registry, str(step.system), [data], out, plan.overrides(step, extra))
        finally:
            hook.remove()
    ran = len(clock.ends) - 1
    if "events" not in found:
        raise SystemExit(f"{address}: the run ended after {ran} optimizer steps, before the profiled window")
    log = json.loads((out / "train_log.json").read_text())
    events = found["events"]
    attr = "self_device_time_total" if cuda else "self_cpu_time_total"
    busy = busy_seconds(events, cuda) / steps
    profiled = clock.seconds(skip + 1, skip + 1 + steps)
    unprofiled = clock.seconds(skip // 2, skip) or clock.seconds(0, skip)
    wall = statistics.median(profiled)
    epoch: dict = next((e for e in log["log"] if "tokens_per_second" in e), {})
    return {
        "benchmark": "training-profile",
        "system": log["system"],
        "path": path,
        "device_name": log["device"],
        "git_commit": log["card"]["commit"],
        "finished_at": log["card"]["trained_at"],
        "config": log["config"],
        "results": {
            "optimizer_steps": ran,
            "steps_profiled": len(profiled),
            "step_seconds_unprofiled_median": round(statistics.median(unprofiled), 4) if unprofiled else None,
            "step_seconds_profiled_median": round(wall, 4),
            "tokens_per_s_whole_run": epoch.get("tokens_per_second"),
            "device_busy_seconds_per_step": round(busy, 4),
            "device_busy_share": round(busy / wall, 3) if cuda else None,
            "kernels": _top(device_rows(events, cuda), attr, top, steps),
            "host_ops": _top(host_rows(events), "self_cpu_time_total", top, steps) if cuda else [],
        },
    }


def _print(name: str, fig: dict) -> None:
    r = fig["results"]
    print(
        f"{name} ({fig['path']}) on {fig['device_name']}: {r['steps_profiled']} steps profiled of {r['optimizer_steps']}; "
        f"a step {r['step_seconds_unprofiled_median']} s unprofiled, {r['step_seconds_profiled_median']} s profiled"
    )
    if r["device_busy_share"] is not None:
        print(
            f"device busy {r['device_busy_seconds_per_step']} s a step "
            f"({100 * r['device_busy_share']:.0f}%; the rest the device waits for the host)"
        )
    for title, rows in (("kernels", r["kernels"]), ("host ops (own CPU time)", r["host_ops"])):
        if rows:
            print(f"{title}, per step:")
        for k in rows:
            print(f"  {k['seconds_per_step']:>9.5f} s  {k['calls_per_step']:>8.1f}  {k['name']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", required=True, help="the experiment file")
    ap.add_argument("--step", required=True, help="its train step, e.g. train.reranker-q_p_r")
    ap.add_argument("--path", choices=["fast", "plain"], default="fast", help="fast_training on or off (default fast)")
    ap.add_argument("--skip", type=int, default=20, help="unprofiled steps first (compilation, warm-up; default 20)")
    ap.add_argument("--steps", type=int, default=5, help="profiled steps (default 5)")
    ap.add_argument("--work", type=Path, required=True, help="where the training writes")
    ap.add_argument("--name", required=True, help="a label, e.g. reranker-qwen2.5-0.5b")
    ap.add_argument("--out", type=Path, help="the result file (default in benchmarks/results)")
    args = ap.parse_args(argv)
    if args.skip < 1 or args.steps < 1:
        ap.error("--skip and --steps must be at least 1")
    fig = profile_training(args.experiment, args.step, args.path, args.work, args.skip, args.steps)
    fig["name"] = args.name
    _print(args.name, fig)
    card = re.sub(r"[^a-z0-9]+", "-", fig["device_name"].split(": ")[-1].lower()).strip("-")
    out = args.out or RESULTS / f"training-profile-{args.name}-{args.path}-{card}.json"
    atomic_write_text(out, json.dumps(fig, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
