"""What each step of an experiment is, by content, and whether it is done.

A step's identity is its content, never a timestamp:
- data: the sha256 of the file's bytes (checked before any work);
- curate: a key over its settings, its inputs' sha256 and its embedder;
- train: the model id its card will have (harness.runs.model_cards.model_id: system, recipe, step cap,
  training data sha256), so a model trained once is found again by any experiment;
- run / rerank: the results under `<runs>/<collection>/<name>/` whose system and config are the
  step's (a trained model is matched by its card's id, not by where its weights lie);
- leaderboard: a stamp over the seals of the results it was made from.
A step is done when what it would make is already there; `reproduce` runs only what is not.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.experiments.spec import UNPINNED, Experiment, ExperimentError, Step
from harness.foundation import locations

DONE = "done.json"


def canonical_sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Status:
    done: bool
    why: str


class Plan:
    """An experiment bound to the places it reads and writes."""

    def __init__(self, exp: Experiment, registry, runs_dir: Path, store: Path | None = None, data_dir=None):
        self.exp = exp
        self.registry = registry
        self.runs_dir = Path(runs_dir).resolve()
        self.store = Path(store or locations.store_dir()).resolve()
        self.data_dir = data_dir
        self._data_paths: dict[str, Path] = {}
        self._model_ids: dict[str, str | None] = {}

    # ---- data --------------------------------------------------------------------------------

    def data_path(self, name: str, *, check: bool = True) -> Path | None:
        """The data source's file, its sha256 checked (a generated one is written first); None
        when a file is absent and check is False."""
        if name in self._data_paths:
            return self._data_paths[name]
        src = self.exp.data[name]
        if src.generate:
            path = self.store / "data" / f"{src.generate}-{(src.sha256 or '')[:16]}.jsonl"
            if not path.is_file():
                if not check:
                    return None
                from harness.experiments.generated import write_generated

                write_generated(src.generate, path)
        else:
            candidates = [locations.corpora_dir(self.data_dir) / str(src.file), self.exp.path.parent / str(src.file)]
            path = next((p for p in candidates if p.is_file()), candidates[0])
            if not path.is_file():
                if not check:
                    return None
                raise ExperimentError(
                    f"{self.exp.path}: [data.{name}] file {src.file!r} not found in "
                    f"{candidates[0].parent} (--data-dir or ${locations.CORPORA_ENV}) nor beside the "
                    "experiment file"
                )
        actual = file_sha256(path)
        if src.sha256 == UNPINNED:
            raise ExperimentError(
                f"{self.exp.path}: [data.{name}] sha256 is {UNPINNED!r}: pin the file you use, "
                f'sha256 = "{actual}" ({path})'
            )
        if actual != src.sha256:
            raise ExperimentError(f"{self.exp.path}: [data.{name}] {path} has sha256 {actual}, expected {src.sha256}")
        self._data_paths[name] = path
        return path

    def check_backbone(self, name: str) -> None:
        """The backbone can be loaded (a local copy, or the hub) and a declared weights file has its
        sha256; a backbone that cannot be found is one line, before any work."""
        from harness.neural.models import ModelNotFoundError, resolve_model

        b = self.exp.backbones[name]
        if b.tiny:
            return
        try:
            where = resolve_model(str(b.id))
        except ModelNotFoundError as e:
            raise ExperimentError(f"{self.exp.path}: [backbones.{name}] {e}") from None
        weights = Path(where) / str(b.file)
        if b.file and Path(where).is_dir():
            if not weights.is_file():  # a local copy may name its one weights file otherwise; its sha256 decides
                same_kind = sorted(Path(where).glob(f"*{weights.suffix}")) if weights.suffix else []
                weights = same_kind[0] if len(same_kind) == 1 else weights
            if not weights.is_file():
                raise ExperimentError(f"{self.exp.path}: [backbones.{name}] {weights} not found (file = {b.file!r})")
            actual = file_sha256(weights)
            if actual != b.sha256:
                raise ExperimentError(
                    f"{self.exp.path}: [backbones.{name}] {weights} has sha256 {actual}, expected {b.sha256}"
                )

    # ---- curate ------------------------------------------------------------------------------

    def curate_key(self, step: Step) -> str:
        embedder = self.exp.backbones[str(step.backbone)]
        return canonical_sha(
            {
                "settings": dict(step.settings),
                "embedder": [embedder.reference, embedder.revision],
                "inputs": [self.exp.data[i].sha256 for i in step.inputs],
            }
        )[:16]

    def curated_dir(self, step: Step) -> Path:
        return self.store / "curated" / f"{step.name}-{self.curate_key(step)}"

    def curated_record(self, step: Step) -> dict | None:
        path = self.curated_dir(step) / DONE
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    # ---- train -------------------------------------------------------------------------------

    def backbone_ref(self, step: Step) -> str | None:
        return self.exp.backbones[step.backbone].reference if step.backbone else None

    def overrides(self, step: Step, extra: dict | None = None) -> dict[str, Any]:
        """The step's config values: those of the train step that made its model (less how that
        training ran), its backbone (as `backbone`, or `model` for a system whose config has no
        backbone key, such as sbert's), its own `set` table, and `extra`."""
        from harness.config import field_purposes
        from harness.specs import load_object

        cls = load_object(self.registry.system(str(step.system)).config)
        out: dict[str, Any] = {}
        if step.model:
            trained = self.exp.steps[step.model]
            purposes = field_purposes(cls)
            out.update({k: v for k, v in self.overrides(trained).items() if purposes.get(k) != "training run"})
        ref = self.backbone_ref(step)
        if ref is not None:
            out["backbone" if "backbone" in getattr(cls, "__dataclass_fields__", {}) else "model"] = ref
        out.update(step.settings)
        out.update(extra or {})
        return out

    def config(self, step: Step, extra: dict | None = None):
        """The step's system config (torch-free), built as the CLI builds it."""
        from harness.config import build_config
        from harness.specs import load_object

        cls = load_object(self.registry.system(str(step.system)).config)
        try:
            return build_config(cls, self.overrides(step, extra))
        except Exception as e:  # an unknown key or a bad value, said where it is
            raise ExperimentError(f"{self.exp.path}: [{step.address}.set] {e}") from None

    def training_data(self, step: Step) -> tuple[Path | None, str | None]:
        """(the training file if it exists, the training data's sha256 if known) of a train step."""
        ref = step.inputs[0]
        if ref in self.exp.data:
            path = self.data_path(ref, check=False)
            if path is None:
                return None, None
            return path, self._fingerprint(path)
        curate = self.exp.steps[ref]
        record = self.curated_record(curate)
        if record:
            return self.curated_dir(curate) / record["file"], record["training_data"]["sha256"]
        return None, curate.expect.get("sha256")

    def _fingerprint(self, path: Path) -> str:
        from harness.data.collection import read_documents
        from harness.runs.model_cards import training_data_fingerprint

        return training_data_fingerprint(list(read_documents([path]).values()))["sha256"]

    def model_id(self, step: Step) -> str | None:
        """The id the trained model's card will have; None while its training data is unknown."""
        if self._model_ids.get(step.address) is None:  # unknown until its training data is made
            from harness.config import config_sections
            from harness.runs.model_cards import model_id

            _, sha = self.training_data(step)
            sections = config_sections(self.config(step))
            self._model_ids[step.address] = (
                None
                if sha is None
                else model_id(
                    {
                        "system": step.system,
                        "recipe": sections.get("recipe", {}),
                        "training_run": sections.get("training run", {}),
                        "training_data": {"sha256": sha},
                    }
                )
            )
        return self._model_ids[step.address]

    def same_models(self) -> list[tuple[str, str]]:
        """Pairs of train steps that would make one model: the same system, recipe, step cap and
        training input, differing only in settings that do not decide the weights (fast_training,
        the device). Their model id is one, so side by side they would write one store entry, and
        after the first the second would be done without running."""
        from harness.config import config_sections
        from harness.runs.model_cards import model_id

        seen: dict[str, str] = {}
        pairs = []
        for step in self.exp.steps.values():
            if step.kind != "train":
                continue
            sections = config_sections(self.config(step))
            key = model_id(
                {
                    "system": step.system,
                    "recipe": sections.get("recipe", {}),
                    "training_run": sections.get("training run", {}),
                    "training_data": {"sha256": f"input {step.inputs[0]}"},  # one input, one training set
                }
            )
            if key in seen:
                pairs.append((seen[key], step.address))
            seen.setdefault(key, step.address)
        return pairs

    def model_folder(self, model_id: str) -> Path:
        return self.store / "models" / model_id

    # ---- run / rerank ------------------------------------------------------------------------

    def run_name(self, step: Step) -> str:
        return step.name

    def expected_config(self, step: Step) -> dict[str, Any]:
        """The config a done result of this step records, less the trained model's address and
        how a training runs (settings that never change a ranking)."""
        from harness.config import config_dict, field_purposes

        config = self.config(step)
        cfg = {k: v for k, v in config_dict(config).items() if field_purposes(type(config)).get(k) != "training run"}
        if step.model:
            cfg.pop("model", None)
        if step.kind == "rerank":
            cfg["first_stage"] = self.run_name(self.exp.steps[str(step.first_stage)])
        return cfg

    def result_status(self, step: Step) -> Status:
        if step.model and self.model_id(self.exp.steps[step.model]) is None:
            return Status(False, f"its model ({step.model}) is not trained yet")
        missing = [m for ms in self.missing_results(step).values() for m in ms]
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            return Status(False, f"no current result for {shown}")
        return Status(True, f"{len(step.collections) * len(self.exp.seeds)} results current")

    def missing_results(self, step: Step) -> dict[str, list[str]]:
        """Per collection of a run or rerank step, the seeds without a current result (and why);
        a collection whose seeds are all current maps to an empty list."""
        return {
            c: [f"{c} seed {seed}" + (f" ({why})" if why else "") for seed, why in missing]
            for c, missing in self.missing_seeds(step).items()
        }

    def missing_seeds(self, step: Step) -> dict[str, list[tuple[int, str]]]:
        """`missing_results` as (seed, why) pairs; why is "" where there is no result at all."""
        from harness.config import field_purposes
        from harness.errors import HarnessError
        from harness.runs.later_keys import without_earlier_values
        from harness.runs.model_cards import model_id
        from harness.runs.results import read_result, result_path

        want = without_earlier_values(self.expected_config(step))  # a key added later, at its old value, as absent
        training_run = {k for k, p in field_purposes(type(self.config(step))).items() if p == "training run"}
        want_model = self.model_id(self.exp.steps[step.model]) if step.model else None
        out: dict[str, list[tuple[int, str]]] = {}
        for collection in step.collections:
            missing = out.setdefault(collection, [])
            for seed in self.exp.seeds:
                path = result_path(self.runs_dir, collection, self.run_name(step), seed)
                try:
                    res = read_result(path) if path.is_file() else None
                except HarnessError:
                    res = None
                if res is None or res.get("system") != step.system:
                    missing.append((seed, ""))
                    continue
                if res.get("split_sha256") != self.split_sha256(collection, seed):
                    missing.append((seed, "made on another split"))
                    continue
                got = {
                    k: v
                    for k, v in res.get("config", {}).items()
                    if k != "first_stage_rankings_sha256" and k not in training_run
                }
                if step.model:
                    got.pop("model", None)
                    card = (res.get("extra") or {}).get("model_card") or {}
                    if want_model is None or model_id(card) != want_model:
                        missing.append((seed, "made with another model"))
                        continue
                got = without_earlier_values(got)
                if got != want:
                    diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
                    missing.append((seed, f"config differs: {', '.join(diff)}"))
        return out

    def split_sha256(self, collection: str, seed: int) -> str | None:
        """The sha256 of the manifest a run of this collection and seed reads now (None: none yet)."""
        from harness.errors import HarnessError
        from harness.evaluation.manifests import find_manifest, read_manifest

        try:
            return read_manifest(find_manifest(locations.manifest_dirs(self.runs_dir), collection, seed)).sha256
        except HarnessError:
            return None

    # ---- leaderboard -------------------------------------------------------------------------

    def leaderboard_dir(self) -> Path:
        return self.runs_dir / self.exp.leaderboard_out

    def leaderboard_inputs(self) -> str:
        """A stamp over the result files of every run and rerank step (their bytes' sha256)."""
        from harness.runs.results import result_path

        files = []
        for step in self.exp.steps.values():
            if step.kind in ("run", "rerank"):
                for c in step.collections:
                    for seed in self.exp.seeds:
                        p = result_path(self.runs_dir, c, self.run_name(step), seed)
                        files.append([str(p.relative_to(self.runs_dir)), file_sha256(p) if p.is_file() else None])
        return canonical_sha(sorted(files))

    # ---- status ------------------------------------------------------------------------------

    def status(self, address: str) -> Status:
        step = self.exp.steps[address]
        if step.kind == "curate":
            record = self.curated_record(step)
            return (
                Status(True, f"curated: {record['training_data']['documents']} documents")
                if record
                else Status(False, "not curated yet")
            )
        if step.kind == "train":
            mid = self.model_id(step)
            if mid is None:
                return Status(False, "its training data is not curated yet")
            card = self.model_folder(mid) / "model" / "aa_model.json"
            return (
                Status(True, f"model {mid} in the store")
                if card.is_file()
                else Status(False, f"model {mid} not in the store")
            )
        if step.kind in ("run", "rerank"):
            return self.result_status(step)
        stamp = self.leaderboard_dir() / ".inputs.sha256"
        if stamp.is_file() and stamp.read_text().strip() == self.leaderboard_inputs():
            return Status(True, f"pages current in {self.leaderboard_dir()}")
        return Status(False, "pages missing or made from other results")
