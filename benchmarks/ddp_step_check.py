"""A DDP training step on several GPUs gives the loss of one GPU with the same global batch.

    python benchmarks/ddp_step_check.py prepare DIR TOKENIZER   # random qwen3-0.6b + demo data
    aa-harness train sadiri-v2-retriever --train DIR/demo.jsonl --out DIR/one --set backbone=DIR/backbone ...
    torchrun --nproc_per_node 2 -m harness train ... --out DIR/two
    python benchmarks/ddp_step_check.py compare DIR/one DIR/two [--out RESULT.json]

The backbone is Qwen3-0.6B's architecture with random weights and the Qwen3 tokenizer; the
data are the built-in synthetic demo documents. The recipe is the SADIRI-v2 retriever's
(LoRA, projection, SupCon), with random batches so both runs see the same ones.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def prepare(folder: Path, tokenizer: Path) -> None:
    import torch

    from aa_harness_bench.archs import build_model
    from harness.data.demo import demo_documents

    folder.mkdir(parents=True, exist_ok=True)
    model = build_model("qwen3-0.6b", "cpu", torch.float32, seed=0)
    model.save_pretrained(folder / "backbone")
    for f in Path(tokenizer).iterdir():
        if f.is_file():
            shutil.copy(f, folder / "backbone" / f.name)
    with open(folder / "demo.jsonl", "w", encoding="utf-8") as out:
        for d in demo_documents():
            out.write(
                json.dumps(
                    {
                        "documentID": d.documentID,
                        "authorIDs": list(d.authorIDs),
                        "fullText": d.fullText,
                        "genre": d.genre,
                    }
                )
                + "\n"
            )


def compare(one: Path, two: Path, out: Path | None) -> None:
    logs = [json.loads((p / "train_log.json").read_text()) for p in (one, two)]
    losses = [[e["loss"] for e in log["log"] if "loss" in e] for log in logs]
    diff = max(abs(a - b) for a, b in zip(*losses))
    record = {
        "world_sizes": [log["world_size"] for log in logs],
        "devices": [log["device"] for log in logs],
        "losses_one_process": losses[0],
        "losses_ddp": losses[1],
        "max_abs_loss_diff": diff,
    }
    print(json.dumps(record, indent=1))
    if out:
        from aa_harness_bench.results import write_result

        facts = {"device_name": logs[1]["device"].removeprefix("cuda: ").split(" (x")[0]}
        write_result("ddp-step", "qwen3-0.6b-lora", facts, {"one": str(one), "two": str(two)}, record, out)


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    a.add_argument("folder", type=Path)
    a.add_argument("tokenizer", type=Path)
    b = sub.add_parser("compare")
    b.add_argument("one", type=Path)
    b.add_argument("two", type=Path)
    b.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.cmd == "prepare":
        prepare(args.folder, args.tokenizer)
    else:
        compare(args.one, args.two, args.out)


if __name__ == "__main__":
    main()
