"""What four split seeds cost against one: the embedding cache encodes documents shared by
the seeds' candidate pools once.

    python benchmarks/bench_seeds.py --system sbert --collection pan19-en \
        --set model=.cache/models/all-MiniLM-L6-v2

Each measurement starts from an empty embedding cache and an empty runs folder (temporary),
so the one-seed run and the four-seed run both pay for every encoding they need.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def timed_run(system: str, collection: str, seeds: list[int], overrides: dict) -> float:
    from harness.plugins import load_registry
    from harness.runs.run_job import RunJob, run_job

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AA_HARNESS_CACHE"] = str(Path(tmp) / "cache")
        start = time.perf_counter()
        run_job(
            load_registry(),
            RunJob(
                systems=[system],
                collection=collection,
                seeds=seeds,
                overrides=overrides,
                runs_dir=Path(tmp) / "runs",
                progress=False,
            ),
            log=lambda *_: None,
        )
        return time.perf_counter() - start


def main() -> None:
    from harness.config import parse_set_args
    from harness.evaluation.split_settings import SEEDS

    p = argparse.ArgumentParser()
    p.add_argument("--system", default="sbert")
    p.add_argument("--collection", default="pan19-en")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    overrides = parse_set_args(args.set)
    one = timed_run(args.system, args.collection, [SEEDS[0]], overrides)
    four = timed_run(args.system, args.collection, list(SEEDS), overrides)
    ratio = four / one
    print(f"{args.system} on {args.collection}: one seed {one:.1f} s, four seeds {four:.1f} s ({ratio:.2f}x)")
    from aa_harness_bench.results import write_result
    from aa_harness_bench.timing import device_facts
    from harness.neural.device import pick_device

    write_result(
        "seeds",
        f"{args.system}-{args.collection}",
        device_facts(pick_device(overrides.get("device", "auto"))),
        {"system": args.system, "collection": args.collection, "set": args.set},
        {"one_seed_seconds": round(one, 2), "four_seeds_seconds": round(four, 2), "ratio": round(ratio, 3)},
        args.out,
    )


if __name__ == "__main__":
    main()
