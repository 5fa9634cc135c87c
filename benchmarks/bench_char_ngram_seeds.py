"""char-ngram over four split seeds against one, before and after counting each text once.

    python benchmarks/bench_char_ngram_seeds.py --collection pan19-en

"before" is the previous system, in this process: a TfidfVectorizer fitted on each seed's
pool (`PerSeedFit` below, registered inline). "after" is the char-ngram system, which keeps
every text's n-gram counts across seeds and builds each pool's TF-IDF from them. Each
measurement (wall and CPU seconds of the process) is a whole `aa-harness run` (rank, score, write) into an empty runs folder; the
rankings of the two four-seed runs are compared file by file (they must be identical).
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
        self.config = config

    def rank(self, queries, candidates, k):
        from harness.evaluation.ranking import top_k
        from plugins.char_ngram.system import CharNgramSystem

        vec = CharNgramSystem(self.config).vectorizer()
        cand = vec.fit_transform([d.fullText for d in candidates]).tocsr()
        ids = [d.documentID for d in candidates]
        out = {}
        for start in range(0, len(queries), 256):
            block = queries[start:start + 256]
            scores = (vec.transform([q.fullText for q in block]) @ cand.T).toarray()
            out.update({q.documentID: r for q, r in zip(block, top_k(scores, ids, k))})
        return out


class _Before:
    @hookimpl
    def register_systems(self, register):
        register(SystemSpec(name="char-ngram-per-seed-fit", factory="benchmarks.bench_char_ngram_seeds:PerSeedFit",
                            config="plugins.char_ngram.config:CharNgramConfig"))


def timed_run(registry, system: str, collection: str, seeds, runs_dir: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine the CPU time is the steadier figure."""
    from harness.runs.run_job import RunJob, run_job

    start, cpu = time.perf_counter(), time.process_time()
    run_job(registry, RunJob(systems=[system], collection=collection, seeds=seeds, runs_dir=runs_dir,
                             run_name="char-ngram", progress=False), log=lambda *_: None)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    from harness.evaluation.splits import SEEDS
    from harness.neural.fast.bench.results import write_result
    from harness.neural.fast.bench.timing import device_facts
    from harness.plugins import load_registry, plugin_manager

    p = argparse.ArgumentParser()
    p.add_argument("--collection", default="pan19-en")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    registry = load_registry(plugin_manager(extra=(_Before(),)))
    figures, dirs = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, system in (("after", "char-ngram"), ("before", "char-ngram-per-seed-fit")):
            for n, seeds in (("one_seed", [SEEDS[0]]), ("four_seeds", list(SEEDS))):
                runs = Path(tmp) / f"{label}-{n}"
                seconds, cpu = timed_run(registry, system, args.collection, seeds, runs)
                figures[f"{label}_{n}_seconds"] = round(seconds, 2)
                figures[f"{label}_{n}_cpu_seconds"] = round(cpu, 2)
                dirs[(label, n)] = runs
                print(f"{label:6s} {n:10s} {seconds:8.1f} s wall {cpu:8.1f} s CPU", flush=True)
        identical = []
        for seed in SEEDS:
            a, b = (next(dirs[(lab, "four_seeds")].rglob(f"seed-{seed}.rankings.jsonl.gz")) for lab in ("before", "after"))
            identical.append(gzip.decompress(a.read_bytes()) == gzip.decompress(b.read_bytes()))
    f = figures
    f.update(before_ratio=round(f["before_four_seeds_seconds"] / f["before_one_seed_seconds"], 3),
             after_ratio=round(f["after_four_seeds_seconds"] / f["after_one_seed_seconds"], 3),
             four_seed_speedup=round(f["before_four_seeds_seconds"] / f["after_four_seeds_seconds"], 3),
             before_cpu_ratio=round(f["before_four_seeds_cpu_seconds"] / f["before_one_seed_cpu_seconds"], 3),
             after_cpu_ratio=round(f["after_four_seeds_cpu_seconds"] / f["after_one_seed_cpu_seconds"], 3),
             four_seed_cpu_speedup=round(f["before_four_seeds_cpu_seconds"] / f["after_four_seeds_cpu_seconds"], 3),
             load_average_at_end=[round(x, 2) for x in __import__("os").getloadavg()],
             rankings_identical=bool(np.all(identical)))
    print(f"before: four seeds / one = {f['before_ratio']:.2f}; after: {f['after_ratio']:.2f}; "
          f"four-seed run {f['four_seed_speedup']:.2f}x faster; rankings identical: {f['rankings_identical']}")
    print(f"CPU time: before four / one = {f['before_cpu_ratio']:.2f}; after {f['after_cpu_ratio']:.2f}; "
          f"four-seed run {f['four_seed_cpu_speedup']:.2f}x less CPU; load average {f['load_average_at_end']}")
    write_result("char-ngram-seeds", f"char-ngram-{args.collection}", device_facts(__import__("torch").device("cpu")),
                 {"collection": args.collection, "seeds": list(SEEDS)}, f, args.out)


if __name__ == "__main__":
    main()
