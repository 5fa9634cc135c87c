"""fast_training in a real training run: the same short `aa-harness train` through the Hugging
Face path and through the speed layer (`--set fast_training=true`), compared from their training
logs of two `aa-harness train` runs that differ only in `fast_training`.

    python -m benchmarks.training_paths --hf HF.train_log.json --fast FAST.train_log.json --name reranker-qwen2.5-0.5b

Writes benchmarks/results/training-paths-<name>-<card>.json: per path the epoch's seconds,
tokens/s and documents (pairs)/s from the log, the speed-up, and the per-step losses side by side
(the two paths draw their own LoRA dropout masks and round differently in bf16, so the losses
agree closely, not exactly).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from harness.foundation.atomic import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "results"


def _summary(log: dict) -> dict:
    epoch = next(e for e in log["log"] if "epoch_seconds" in e)
    return {
        "fast_training": bool(log["config"].get("fast_training")),
        "seconds": epoch["epoch_seconds"],
        "tokens_per_s": epoch["tokens_per_second"],
        "docs_per_s": epoch["docs_per_second"],
        "losses": [round(e["loss"], 6) for e in log["log"] if "loss" in e],
    }


def compare(hf_log: dict, fast_log: dict, name: str) -> dict:
    hf, fast = _summary(hf_log), _summary(fast_log)
    if hf["fast_training"] or not fast["fast_training"]:
        raise SystemExit("--hf must be a log without fast_training and --fast one with it")
    differ = {k for k in hf_log["config"] if k != "fast_training" and hf_log["config"][k] != fast_log["config"].get(k)}
    if differ:
        raise SystemExit(f"the two runs differ in more than fast_training: {', '.join(sorted(differ))}")
    gaps = [abs(a - b) for a, b in zip(hf["losses"], fast["losses"])]
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
            "max_abs_loss_gap": round(max(gaps), 6),
            "steps": len(gaps),
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf", required=True, help="training log of the Hugging Face path")
    ap.add_argument("--fast", required=True, help="training log of the same run with fast_training")
    ap.add_argument("--name", required=True, help="a label, e.g. reranker-qwen2.5-0.5b")
    args = ap.parse_args(argv)
    record = compare(json.loads(Path(args.hf).read_text()), json.loads(Path(args.fast).read_text()), args.name)
    card = re.sub(r"[^a-z0-9]+", "-", record["device_name"].split(": ")[-1].lower()).strip("-")
    out = RESULTS / f"training-paths-{args.name}-{card}.json"
    atomic_write_text(out, json.dumps(record, indent=1) + "\n")
    print(
        f"{args.name}: fast_training {record['results']['speedup']:.2f}x tokens/s, max loss gap "
        f"{record['results']['max_abs_loss_gap']:.4f} over {record['results']['steps']} steps -> {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
