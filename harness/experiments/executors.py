"""Where the steps run: here, one after another; here, side by side on N GPUs (one process a
step, CUDA_VISIBLE_DEVICES naming its GPUs, `torchrun` for a step that asks for several); or on
a Slurm cluster through submitit. Every step that leaves this process runs the same command,
`aa-harness reproduce FILE --only STEP`, so a step does the same work wherever it runs."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.errors import HarnessError
from harness.experiments.spec import Experiment

_log = logging.getLogger(__name__)
EXECUTORS = ("local", "slurm")


def step_command(
    exp: Experiment, address: str, runs_dir: Path, gpus: int, data_dir=None, collections: Sequence[str] = ()
) -> list[str]:
    """The command that does one step on its own (under torchrun when it asks for several GPUs)."""
    tail = (
        [
            "-m",
            "harness",
            "reproduce",
            str(exp.path.resolve()),
            "--only",
            address,
            "--runs-dir",
            str(runs_dir),
            "--no-progress",
        ]
        + (["--data-dir", str(data_dir)] if data_dir else [])
        + (["--collections", *collections] if collections else [])
    )
    if gpus > 1:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={gpus}"] + tail
    return [sys.executable] + tail


def critical_first(todo: Sequence[str], deps: dict[str, list[str]], minutes: dict[str, float]) -> list[str]:
    """The steps, those heading the longest chain of projected minutes first (ties in graph
    order), so that a long training is not left to start after the short runs."""
    chain: dict[str, float] = {}
    for a in reversed(todo):  # `todo` is in graph order: every step after the steps it needs
        after = [chain[b] for b in todo if a in deps.get(b, ()) and b in chain]
        chain[a] = minutes.get(a, 0.0) + max(after, default=0.0)
    return sorted(todo, key=lambda a: -chain[a])


# The host thread pools each process sizes to every core unless told: torch's and OpenMP's, BLAS's
# (numpy), and Rayon's (the Hugging Face tokenizers). N steps side by side, each taking every core,
# oversubscribe the host N times over.
THREAD_POOLS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")


def host_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_share(slots: int, cores: int, environ: dict[str, str]) -> dict[str, str]:
    """The thread-pool sizes each of `slots` steps running side by side is given: its share of
    the host's cores (at least one), for each pool the user has not sized already (as torchrun
    gives its workers one thread unless told)."""
    share = str(max(1, cores // max(1, slots)))
    return {name: share for name in THREAD_POOLS if name not in environ}


def visible_gpus(gpus: int) -> list[str]:
    """The GPUs `--gpus N` hands out: the first N that CUDA_VISIBLE_DEVICES names (so two reproduce
    commands given disjoint sets share a machine without sharing a card), else 0..N-1."""
    named = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not named:
        return [str(i) for i in range(gpus)]
    listed = [d.strip() for d in named.split(",") if d.strip()]
    if len(listed) < gpus:
        raise HarnessError(f"--gpus {gpus}: CUDA_VISIBLE_DEVICES names only {len(listed)} ({named})")
    return listed[:gpus]


def run_in_process(todo: Sequence[str], perform: Callable[[str], None], report: Callable[[str, float], None]) -> None:
    for address in todo:
        start = time.perf_counter()
        perform(address)
        report(address, time.perf_counter() - start)


def run_side_by_side(
    exp: Experiment,
    todo: Sequence[str],
    deps: dict[str, list[str]],
    gpus: int,
    runs_dir: Path,
    report: Callable[[str, float], None],
    data_dir=None,
    logs: Path | None = None,
    collections: Sequence[str] = (),
) -> None:
    """Each step in its own process as soon as the steps it needs are done and enough GPUs are
    free; a step of `gpus = 0` takes none (one such step at a time). Each process sizes its host
    thread pools to its share of the cores (`thread_share`). The first failure stops the
    launching of new steps; the running ones finish, and the failure is reported."""
    pending = list(todo)
    cards = visible_gpus(gpus)
    threads = thread_share(len(cards), host_cores(), dict(os.environ))
    free = list(cards)
    running: dict[str, tuple[subprocess.Popen, list[str], float, Path]] = {}
    finished: set[str] = set()
    failed: list[str] = []
    logs = logs or runs_dir / ".reproduce" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    while pending or running:
        for address in list(pending) if not failed else []:
            need = exp.steps[address].gpus
            if any(d in pending or d in running for d in deps[address]):
                continue
            if need > gpus:
                raise HarnessError(f"{exp.path}: [{address}] asks for {need} GPUs; --gpus gives {gpus}")
            if need > len(free) or (need == 0 and any(exp.steps[a].gpus == 0 for a in running)):
                continue
            mine, free = free[:need], free[need:]
            env = {**os.environ, **threads, "CUDA_VISIBLE_DEVICES": ",".join(map(str, mine))}
            log_path = logs / f"{address}.log"
            with open(log_path, "w") as log:
                proc = subprocess.Popen(
                    step_command(exp, address, runs_dir, need, data_dir, collections),
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            _log.info(
                f"{address}: started on {'GPU ' + ','.join(map(str, mine)) if mine else 'the CPU'} (log {log_path})"
            )
            running[address] = (proc, mine, time.perf_counter(), log_path)
            pending.remove(address)
        for address, (proc, mine, start, log_path) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[address]
            free = [g for g in cards if g in free or g in mine]
            if proc.returncode == 0:
                finished.add(address)
                report(address, time.perf_counter() - start)
            else:
                failed.append(f"{address} (exit {proc.returncode}; log {log_path}: {_last_line(log_path)})")
        if failed and not running:
            break
        time.sleep(0.5)
    if failed:
        raise HarnessError(f"{exp.path}: step failed: {'; '.join(failed)}")


def run_on_slurm(
    exp: Experiment,
    todo: Sequence[str],
    deps: dict[str, list[str]],
    runs_dir: Path,
    report: Callable[[str, float], None],
    partition: str | None,
    timeout_min: int,
    data_dir=None,
    collections: Sequence[str] = (),
) -> None:
    """Each step as a Slurm job through submitit, submitted once the steps it needs are done."""
    try:
        import submitit
    except ImportError:
        raise HarnessError("--executor slurm needs submitit (pip install submitit)") from None
    folder = runs_dir / ".reproduce" / "slurm"
    pending = list(todo)
    running: dict[str, tuple[Any, float]] = {}
    while pending or running:
        for address in list(pending):
            if any(d in pending or d in running for d in deps[address]):
                continue
            step = exp.steps[address]
            executor = submitit.AutoExecutor(folder=folder / address, cluster="slurm")
            params: dict = {
                "timeout_min": timeout_min,
                "slurm_job_name": f"aa-{address}",
                "nodes": 1,
                "tasks_per_node": 1,
            }
            if partition:
                params["slurm_partition"] = partition
            if step.gpus:
                params["gpus_per_node"] = step.gpus
            executor.update_parameters(**params)
            command = step_command(exp, address, runs_dir, step.gpus, data_dir, collections)
            job = executor.submit(submitit.helpers.CommandFunction(command, cwd=os.getcwd()))
            _log.info(f"{address}: Slurm job {job.job_id}")
            running[address] = (job, time.perf_counter())
            pending.remove(address)
        for address, (job, start) in list(running.items()):
            if not job.done():
                continue
            del running[address]
            try:
                job.result()
            except Exception as e:  # the step's own error, as submitit relays it
                lines = [ln for ln in str(e).splitlines() if ln.strip()]
                error = next((ln for ln in reversed(lines) if "aa-harness: error:" in ln), lines[-1] if lines else "?")
                raise HarnessError(
                    f"{exp.path}: step {address} failed on Slurm job {job.job_id}: "
                    f"{error.strip()} (logs in {folder / address})"
                ) from None
            report(address, time.perf_counter() - start)
        time.sleep(1.0)


def _last_line(path: Path) -> str:
    lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or ["no output"])[-1].strip()
