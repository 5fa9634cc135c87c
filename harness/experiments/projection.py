"""GPU-minutes of a step. Projected for a step to run, from measured precedents: the committed
training logs (seconds per epoch) and results (wall seconds per seed) of the same system on the
same backbone, read from the folders the experiment names under `timings`; no precedent, no
projection. Measured for a step that is done: its model's training log (found by the model id its
card gives) or the wall seconds its results recorded on a GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Collection, Mapping

from harness.experiments.spec import Experiment, Step


def _backbone(config: dict[str, Any]) -> Any:
    return config.get("backbone") or config.get("model")


class Projection:
    def __init__(self, exp: Experiment, extra: Collection[Path] = ()):
        """Reads the experiment's `timings` folders, then `extra` ones (whose logs win for a model
        both hold: a rerun's)."""
        self.trainings: list[tuple[str, Any, float]] = []  # (system, backbone, GPU-seconds)
        self.by_model: dict[str, float] = {}  # model id -> GPU-seconds of its training
        self.device_of_model: dict[str, str] = {}  # model id -> the device its training log names
        self.results: list[tuple[str, Any, str, float]] = []  # (system, backbone, collection, wall seconds)
        for folder in [*exp.timings, *extra]:
            if folder.is_dir():
                self._read(folder)

    def _read(self, folder: Path) -> None:
        # committed logs are named <model>.train_log.json; a store keeps <id>/train_log.json
        for path in sorted({*folder.rglob("*.train_log.json"), *folder.rglob("train_log.json")}):
            try:
                log = json.loads(path.read_text(encoding="utf-8"))
                seconds = sum(float(e.get("epoch_seconds", 0)) for e in log.get("log", []) if isinstance(e, dict))
                gpus = int(log.get("world_size") or 1)
                self.trainings.append((log["system"], (log.get("recipe") or {}).get("backbone"), seconds * gpus))
                if isinstance(log.get("card"), dict) and seconds > 0:
                    from harness.runs.model_cards import model_id

                    self.by_model[model_id(log["card"])] = seconds * gpus
                    self.device_of_model[model_id(log["card"])] = str(log.get("device", "?"))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # not a training log of this harness: no precedent
        for path in sorted(folder.rglob("seed-*.json")):
            try:
                res = json.loads(path.read_text(encoding="utf-8"))
                wall = float(res["provenance"]["wall_seconds"])
                if str(res["provenance"].get("device", "")).startswith("cuda"):
                    self.results.append((res["system"], _backbone(res["config"]), res["collection"], wall))
            except (ValueError, KeyError, TypeError):
                continue

    def minutes(self, step: Step, plan, seeds_left: Mapping[str, int] | None = None) -> float | None:
        """Projected GPU-minutes: a training's mean epochs; a run's or rerank's mean wall seconds per
        seed on each collection, times the seeds left there (default: every seed of every collection)."""
        if step.kind not in ("train", "run", "rerank"):
            return None
        from harness.config import config_dict

        backbone = _backbone(config_dict(plan.config(step)))
        if step.kind == "train":
            found = [s for system, b, s in self.trainings if system == step.system and b == backbone and s > 0]
            return round(sum(found) / len(found) / 60, 1) if found else None
        per = {
            c: [w for system, b, c2, w in self.results if system == step.system and b == backbone and c2 == c]
            for c in {r[2] for r in self.results}
        }
        known = {c: sum(w) / len(w) for c, w in per.items() if w}
        if not known:
            return None
        fallback = sum(known.values()) / len(known)  # a collection without a precedent: the mean of the others
        if seeds_left is None:
            seeds_left = {c: len(plan.exp.seeds) for c in step.collections}
        total = sum(known.get(c, fallback) * n for c, n in seeds_left.items())
        return round(total / 60, 1)

    def minutes_left(self, step: Step, plan) -> float | None:
        """`minutes` for the seeds of a run or rerank that have no current result yet."""
        if step.kind not in ("run", "rerank"):
            return self.minutes(step, plan)
        left = {c: len(m) for c, m in plan.missing_seeds(step).items() if m}
        return self.minutes(step, plan, left)

    def measured(self, step: Step, plan, skip: Mapping[str, Collection[int]] | None = None) -> float | None:
        """GPU-minutes a done step took: its training (epochs only), or its results' wall time on a GPU
        (less the seeds `skip` names per collection: those without a current result)."""
        if step.kind == "train":
            mid = plan.model_id(step)
            seconds = self.by_model.get(mid) if mid else None
            return round(seconds / 60, 1) if seconds else None
        if step.kind not in ("run", "rerank"):
            return None
        from harness.runs.results import result_path

        total, on_gpu = 0.0, False
        for c in step.collections:
            for seed in plan.exp.seeds:
                if skip and seed in skip.get(c, ()):
                    continue
                path = result_path(plan.runs_dir, c, plan.run_name(step), seed)
                try:
                    prov = json.loads(path.read_text(encoding="utf-8"))["provenance"]
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                if str(prov.get("device", "")).startswith("cuda"):
                    total += float(prov.get("wall_seconds") or 0)
                    on_gpu = True
        return round(total / 60, 1) if on_gpu else None
