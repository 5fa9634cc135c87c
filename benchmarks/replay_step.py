"""Why a training step's loss or gradient is not finite: an experiment's train step trained up to
optimizer step --at, and that step's batch replayed with the weights and random state it met.

    python -m benchmarks.replay_step --experiment experiments/table2-public.toml \\
        --step train.reranker-q_p_r --at 130 --work /tmp/replay

The replays: the whole batch as trained; each of its examples alone (a query with its candidates,
or an author's documents); then the first example that is not finite (or the whole batch, if
only the batch is) once under autograd's anomaly mode, which names the backward function that
returned NaN, with the shapes of the padded batches it ran, and again with the backbone's eager
attention and with each of PyTorch's scaled-dot-product attention kernels forced (math,
memory-efficient, flash, cuDNN); a kernel that cannot run the inputs says so. These last replays
run without gradient checkpointing (the same values; a forced kernel and the recomputation
disagree on the saved tensors' layout). Each replay reports its loss and how many trainable tensors got a non-finite
gradient. The plain path by default (`--path fast` for the fast one); one batch an optimizer step
(grad_accumulation 1), so step N is the N-th batch. Writes <work>/replay-step-<N>.json.
"""

from __future__ import annotations

import argparse
import json
import math
from contextlib import nullcontext
from pathlib import Path

from harness.foundation.atomic import atomic_write_text

KERNELS = ("MATH", "EFFICIENT_ATTENTION", "FLASH_ATTENTION", "CUDNN_ATTENTION")


class _Replayed(Exception):
    """Ends the training once the step has been replayed."""


def _nonfinite(model) -> list[str]:
    import torch

    return [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]


class StepReplay:
    """The step's arguments and random state, replayable under any context."""

    def __init__(self, task, step, args: tuple):
        import torch

        self.task, self.step, self.args = task, step, args
        self.model = args[1]
        self.cpu_rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state() if torch.cuda.is_available() else None
        self.shapes: list[list[int]] = []

    def run(self, shard: list, context=None) -> dict:
        """Forward and backward of `shard` from the step's weights and random state: its loss and
        the trainable tensors whose gradient is not finite (an error, if the step raised one)."""
        import torch

        wrapped, model, _, _, device, amp, scale, last = self.args
        model.zero_grad(set_to_none=True)
        torch.set_rng_state(self.cpu_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state(self.cuda_rng)
        try:
            with context() if context else nullcontext():
                out = self.step(wrapped, model, shard, [len(shard)], device, amp, scale, last)
        except Exception as e:  # a kernel that cannot run these inputs, or anomaly mode's finding
            return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
        bad = _nonfinite(model)
        return {
            "loss": out.loss if math.isfinite(out.loss) else str(out.loss),
            "nonfinite_gradients": len(bad),
            "first_nonfinite": bad[:3],
        }

    def padded_shapes(self, shard: list) -> list[list[int]]:
        """The (rows, length) of each padded batch the plain forward collates for `shard`."""
        collate = self.model.collate
        seen: list[list[int]] = []

        def recording(features):
            tensors = collate(features)
            seen.append(list(tensors["input_ids"].shape))
            return tensors

        self.model.collate = recording
        try:
            self.run(shard)
        finally:
            del self.model.collate  # the class's own again
        return seen


def _eager_attention(model):
    """A context that switches the Hugging Face backbone to eager attention, or None without one."""
    from contextlib import contextmanager

    base = _hf_base(model)
    if base is None or not hasattr(base, "set_attn_implementation"):
        return None
    before = base.config._attn_implementation

    @contextmanager
    def eager():
        base.set_attn_implementation("eager")
        try:
            yield
        finally:
            base.set_attn_implementation(before)

    return eager


def _hf_base(model):
    backbone = getattr(model, "backbone", None)
    return backbone.get_base_model() if hasattr(backbone, "get_base_model") else backbone


def _checkpointing_off(model) -> bool:
    """Stop the Hugging Face backbone recomputing its layers: a forced attention kernel and the
    recomputation disagree on the saved tensors' layout, and the values are the same either way
    (the recomputation replays the random state). True if it was on."""
    base = _hf_base(model)
    new = hasattr(base, "activation_checkpointing_disable")  # the older names before transformers 5
    if not getattr(base, "is_activation_checkpointing" if new else "is_gradient_checkpointing", False):
        return False
    base.activation_checkpointing_disable() if new else base.gradient_checkpointing_disable()
    return True


def replay(task, step, args: tuple) -> dict:
    """Every replay of one step's batch (see the module's doc)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    r = StepReplay(task, step, args)
    shard = list(args[2])
    out: dict = {"batch": task.describe(shard), "whole": r.run(shard)}
    out["examples"] = [r.run([ex]) for ex in shard]
    culprit = next((i for i, e in enumerate(out["examples"]) if _is_nonfinite(e)), None)
    out["first_nonfinite_example"] = culprit
    if culprit is not None:
        one, out["kernels_replay"] = [shard[culprit]], f"example {culprit}"
    elif _is_nonfinite(out["whole"]):  # not finite only with its batch mates (SupCon's in-batch negatives)
        one, out["kernels_replay"] = shard, "the whole batch"
    else:
        return out
    out["checkpointing_turned_off"] = _checkpointing_off(r.model)
    found = r.run(one, lambda: torch.autograd.detect_anomaly(check_nan=True))
    out["anomaly"] = found.get("error", "anomaly mode raised nothing")
    if hasattr(r.model, "collate"):
        out["padded_shapes"] = r.padded_shapes(one)
    out["kernels"] = {}
    eager = _eager_attention(r.model)
    if eager is not None:
        out["kernels"]["eager"] = r.run(one, eager)
    for k in KERNELS:
        out["kernels"][k.lower()] = r.run(one, lambda k=k: sdpa_kernel([getattr(SDPBackend, k)]))
    return out


def _is_nonfinite(entry: dict) -> bool:
    return bool(entry.get("nonfinite_gradients")) or isinstance(entry.get("loss"), str)


def replay_step(experiment: str, address: str, at: int, work: Path, path: str = "plain") -> dict:
    """Train the step through `path` up to optimizer step `at`, then replay it (see the module's doc)."""
    from benchmarks.training_paths import step_inputs
    from harness.neural import training
    from harness.runs.train_job import train_job

    registry, step, plan, data = step_inputs(experiment, address)
    settings = plan.overrides(step, {"fast_training": path == "fast", "max_steps": at, "checkpoint_every": 0})
    if int(settings.get("grad_accumulation", 1)) != 1:
        raise SystemExit(f"{address}: replay needs one batch an optimizer step (grad_accumulation 1)")
    found: dict = {}
    start = training._Run.__init__

    def watching(run, *a, **k):
        start(run, *a, **k)
        inner, calls = run.task.step, [0]

        def step_(*args):
            calls[0] += 1
            if calls[0] < at:
                return inner(*args)
            found.update(replay(run.task, inner, args))
            raise _Replayed

        run.task.step = step_

    training._Run.__init__ = watching
    try:
        train_job(registry, str(step.system), [data], work / path, settings)
    except _Replayed:
        pass
    finally:
        training._Run.__init__ = start
    if not found:
        raise SystemExit(f"{address}: the training ended before optimizer step {at}")
    return {"experiment": experiment, "step": address, "path": path, "optimizer_step": at, **found}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", required=True, help="the experiment file")
    ap.add_argument("--step", required=True, help="its train step, e.g. train.reranker-q_p_r")
    ap.add_argument("--at", type=int, required=True, help="the optimizer step to replay (1 is the first)")
    ap.add_argument("--path", choices=["plain", "fast"], default="plain", help="fast_training off or on (default off)")
    ap.add_argument("--work", type=Path, required=True, help="where the training writes, and the report")
    args = ap.parse_args(argv)
    if args.at < 1:
        ap.error("--at counts from 1")
    report = replay_step(args.experiment, args.step, args.at, args.work, args.path)
    out = args.work / f"replay-step-{args.at}.json"
    args.work.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=1, default=str) + "\n")
    print(f"{args.step} step {args.at} ({args.path}): whole batch {report['whole']}")
    for i, e in enumerate(report["examples"]):
        print(f"  example {i} alone: {e}")
    for name, e in report.get("kernels", {}).items():
        print(f"  {report['kernels_replay']} with {name}: {e}")
    if "anomaly" in report:
        print(f"  padded batches {report.get('padded_shapes')}; anomaly mode: {report['anomaly']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
