"""char-ngram over four split seeds against one, before and after: a TfidfVectorizer fitted per
seed against one count matrix per collection.

    python -m benchmarks.bench_char_ngram_seeds --collection pan19-en [--repeats 2]

"before" is the system as it first was, in this process: a TfidfVectorizer fitted on each
seed's pool (`CharNgramSystem.rank_refit`, registered inline as `PerSeedFit`). "after" is the
char-ngram system: every text counted once into one matrix, each seed's idf from its pool's
document frequencies, its scores from one blocked sparse x dense product. Each measurement
(wall and CPU seconds of the process) is a whole `aa-harness run` (rank, score, write) into an
empty runs folder, in a process already warmed by one untimed run (imports, heap), so that the
first measurement does not pay for what later ones find done; with --repeats the four runs are
timed in turn that many times and the medians reported (the machine is shared: a run's time
varies by a second between repeats). The rankings files of the four-seed runs are compared
byte for byte (ids and scores: they must be identical).
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.hookspecs import hookimpl
from harness.specs import SystemSpec


class PerSeedFit:
    """The char-ngram system as it was: TfidfVectorizer.fit_transform on every pool."""

    def __init__(self, config):
        from plugins.char_ngram.system import CharNgramSystem

        self.system = CharNgramSystem(config)

    def rank(self, queries, candidates, k):
        return self.system.rank_refit(queries, candidates, k)


class _Before:
    @hookimpl
    def register_systems(self, register):
        register(
            SystemSpec(
                name="char-ngram-per-seed-fit",
                factory="benchmarks.bench_char_ngram_seeds:PerSeedFit",
                config="plugins.char_ngram.config:CharNgramConfig",
            )
        )


def timed_run(registry, system: str, collection: str, seeds, runs_dir: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine the CPU time is the steadier figure."""
    from harness.runs.run_job import RunJob, run_job

    start, cpu = time.perf_counter(), time.process_time()
    run_job(
        registry,
        RunJob(
            systems=[system],
            collection=collection,
            seeds=seeds,
            runs_dir=runs_dir,
            run_name="char-ngram",
            progress=False,
        ),
        log=lambda *_: None,
    )
    return time.perf_counter() - start, time.process_time() - cpu


def warm_up() -> None:
    """Import what both paths use, before any timing, so that no measurement pays for it."""
    import importlib

    for name in ("pandas", "scipy.sparse", "sklearn.feature_extraction.text", "sklearn.preprocessing"):
        importlib.import_module(name)


def main() -> None:
    from aa_harness_bench.results import write_result
    from aa_harness_bench.timing import device_facts
    from harness.evaluation.split_settings import SEEDS
    from harness.plugins import load_registry, plugin_manager

    p = argparse.ArgumentParser()
    p.add_argument("--collection", default="pan19-en")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="time each of the four runs this many times, in turn, and report the medians",
    )
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    registry = load_registry(plugin_manager(extra=(_Before(),)))
    warm_up()
    runs = [
        (label, system, n, seeds)
        for label, system in (("after", "char-ngram"), ("before", "char-ngram-per-seed-fit"))
        for n, seeds in (("one_seed", [SEEDS[0]]), ("four_seeds", list(SEEDS)))
    ]
    timings = {(label, n): [] for label, _, n, _ in runs}
    with tempfile.TemporaryDirectory() as tmp:
        # a first run warms the process (its heap, the collection's pages, lazy imports): the first
        # timed run would otherwise pay for that alone (about 1 s here)
        timed_run(registry, "char-ngram", args.collection, [SEEDS[0]], Path(tmp) / "warm-up")
        for r in range(args.repeats):
            for label, system, n, seeds in runs:
                seconds, cpu = timed_run(registry, system, args.collection, seeds, Path(tmp) / f"{label}-{n}-{r}")
                timings[(label, n)].append((seconds, cpu))
                print(f"{label:6s} {n:10s} {seconds:8.1f} s wall {cpu:8.1f} s CPU", flush=True)
        identical = []
        for r in range(args.repeats):
            for seed in SEEDS:
                a, b = (
                    next((Path(tmp) / f"{lab}-four_seeds-{r}").rglob(f"seed-{seed}.rankings.jsonl.gz"))
                    for lab in ("before", "after")
                )
                identical.append(gzip.decompress(a.read_bytes()) == gzip.decompress(b.read_bytes()))
    f = {}
    for (label, n), values in timings.items():
        f[f"{label}_{n}_seconds"] = round(float(np.median([v[0] for v in values])), 2)
        f[f"{label}_{n}_cpu_seconds"] = round(float(np.median([v[1] for v in values])), 2)
        f[f"{label}_{n}_all"] = [[round(w, 2), round(c, 2)] for w, c in values]  # (wall, CPU) of each repeat
    f.update(
        before_ratio=round(f["before_four_seeds_seconds"] / f["before_one_seed_seconds"], 3),
        after_ratio=round(f["after_four_seeds_seconds"] / f["after_one_seed_seconds"], 3),
        four_seed_speedup=round(f["before_four_seeds_seconds"] / f["after_four_seeds_seconds"], 3),
        before_cpu_ratio=round(f["before_four_seeds_cpu_seconds"] / f["before_one_seed_cpu_seconds"], 3),
        after_cpu_ratio=round(f["after_four_seeds_cpu_seconds"] / f["after_one_seed_cpu_seconds"], 3),
        four_seed_cpu_speedup=round(f["before_four_seeds_cpu_seconds"] / f["after_four_seeds_cpu_seconds"], 3),
        load_average_at_end=[round(x, 2) for x in __import__("os").getloadavg()],
        rankings_identical=bool(np.all(identical)),
    )
    print(
        f"before: four seeds / one = {f['before_ratio']:.2f}; after: {f['after_ratio']:.2f}; "
        f"four-seed run {f['four_seed_speedup']:.2f}x faster; rankings identical: {f['rankings_identical']}"
    )
    print(
        f"CPU time: before four / one = {f['before_cpu_ratio']:.2f}; after {f['after_cpu_ratio']:.2f}; "
        f"four-seed run {f['four_seed_cpu_speedup']:.2f}x less CPU; load average {f['load_average_at_end']}"
    )
    write_result(
        "char-ngram-seeds",
        f"char-ngram-{args.collection}",
        device_facts(__import__("torch").device("cpu")),
        {"collection": args.collection, "seeds": list(SEEDS), "repeats": args.repeats},
        f,
        args.out,
    )


if __name__ == "__main__":
    main()
