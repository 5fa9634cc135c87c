"""Projected GPU-minutes of a step, from measured precedents: the committed training logs
(seconds per epoch) and results (wall seconds per seed) of the same system on the same backbone,
read from the folders the experiment names under `timings`. No precedent, no projection."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.experiments.spec import Experiment, Step


def _backbone(config: dict[str, Any]) -> Any:
    return config.get("backbone") or config.get("model")


class Projection:
    def __init__(self, exp: Experiment):
        self.trainings: list[tuple[str, Any, float]] = []  # (system, backbone, GPU-seconds)
        self.results: list[tuple[str, Any, str, float]] = []  # (system, backbone, collection, wall seconds)
        for folder in exp.timings:
            if folder.is_dir():
                self._read(folder)

    def _read(self, folder: Path) -> None:
        for path in sorted(folder.rglob("*.train_log.json")):
            try:
                log = json.loads(path.read_text(encoding="utf-8"))
                seconds = sum(float(e.get("epoch_seconds", 0)) for e in log.get("log", []) if isinstance(e, dict))
                gpus = int(log.get("world_size") or 1)
                self.trainings.append((log["system"], (log.get("recipe") or {}).get("backbone"), seconds * gpus))
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

    def minutes(self, step: Step, plan) -> float | None:
        if step.kind not in ("train", "run", "rerank"):
            return None
        from harness.config import config_dict

        backbone = _backbone(config_dict(plan.config(step)))
        if step.kind == "train":
            found = [s for system, b, s in self.trainings if system == step.system and b == backbone and s > 0]
            return round(sum(found) / len(found) / 60, 1) if found else None
        per = {c: [w for system, b, c2, w in self.results if system == step.system and b == backbone and c2 == c]
               for c in {r[2] for r in self.results}}
        known = {c: sum(w) / len(w) for c, w in per.items() if w}
        if not known:
            return None
        fallback = sum(known.values()) / len(known)  # a collection without a precedent: the mean of the others
        total = sum(known.get(c, fallback) for c in step.collections) * len(plan.exp.seeds)
        return round(total / 60, 1)
