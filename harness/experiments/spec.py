"""An experiment file (TOML) read into frozen steps, every key checked before any work starts.

The file is declarative and complete: the data it reads (a file and its sha256, or an embedded
generator), the backbones (a hub id and revision, a local file and its sha256, or a tiny model
the harness builds from a config), and the steps: `curate`, `train`, `run`, `rerank` and one
`leaderboard`. A step names what it needs by the other step's address (`train.sadiri`), so the
file is also its own step graph (harness.experiments.graph). A bad key is one line that names
the file, the key and what was expected.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.errors import HarnessError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KINDS = ("curate", "train", "run", "rerank")
TINY_ARCHITECTURES = ("bert", "qwen3")


class ExperimentError(HarnessError):
    """A bad experiment file: the message names the file, the key and what was expected."""


@dataclass(frozen=True)
class DataSource:
    """Input data: a canonical JSONL(.gz) file found in the corpora folder (or beside the
    experiment file), checked by the sha256 of its bytes; or an embedded generator."""

    name: str
    file: str | None = None
    generate: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Backbone:
    """A model the steps start from: a hub id pinned by its revision, or by one weights file in it
    and that file's sha256 (checked on the local copy before any work); or a tiny model of a stated
    architecture built from a config and a seed (no download). `quantization` says what the
    weights are (e.g. "Q4_K_M GGUF, dequantized to bf16"), `parameters` how many."""

    name: str
    id: str | None = None
    revision: str | None = None
    file: str | None = None
    sha256: str | None = None
    tiny: str | None = None
    seed: int = 0
    quantization: str = "none"
    parameters: str | None = None

    @property
    def reference(self) -> str:
        """What a step's config names as its backbone: the hub id, or `tiny:ARCH:SEED`."""
        return self.id or f"tiny:{self.tiny}:{self.seed}"


@dataclass(frozen=True)
class Step:
    """One unit of work. kind: curate | train | run | rerank | leaderboard; address: `kind.name`."""

    kind: str
    name: str
    system: str | None = None
    inputs: tuple[str, ...] = ()  # curate: data names; train: one data name or curate step
    backbone: str | None = None
    model: str | None = None  # run/rerank: a train step's address
    first_stage: str | None = None  # rerank: a run or rerank step's address
    collections: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # curate settings, or the config's --set values
    gpus: int = 1
    expect: Mapping[str, Any] = field(default_factory=dict)  # e.g. the curated data's sha256
    deviations: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        return self.kind if self.kind == "leaderboard" else f"{self.kind}.{self.name}"


@dataclass(frozen=True)
class Experiment:
    path: Path
    name: str
    description: str
    seeds: tuple[int, ...]
    data: Mapping[str, DataSource]
    backbones: Mapping[str, Backbone]
    steps: Mapping[str, Step]  # by address, in file order
    timings: tuple[Path, ...] = ()  # committed results and training logs whose wall times project GPU-minutes
    leaderboard_out: str = "leaderboard"


# ---- reading, with one-line errors ----------------------------------------------------------------

_TOP = {"experiment", "data", "backbones", "curate", "train", "run", "rerank", "leaderboard"}
_EXPERIMENT = {"name", "description", "seeds", "timings"}
_DATA = {"file", "generate", "sha256"}
_BACKBONE = {"id", "revision", "file", "sha256", "tiny", "seed", "quantization", "parameters"}
_CURATE = {
    "inputs",
    "embedder",
    "min_words",
    "min_docs",
    "max_docs",
    "max_cosine",
    "ner",
    "batch_size",
    "pairs",
    "expect_sha256",
    "gpus",
}
_TRAIN = {"system", "data", "backbone", "set", "gpus", "deviations"}
_RUN = {"system", "model", "backbone", "collections", "set", "gpus", "deviations"}
_RERANK = {"system", "model", "backbone", "first_stage", "collections", "set", "gpus", "deviations"}
_LEADERBOARD = {"out", "plots"}
GENERATORS = ("demo-train",)
UNPINNED = "unpinned"  # a file only its holder has (HRS): the dry run plans, a real run asks for the sha256


class _Reader:
    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, what: str) -> ExperimentError:
        return ExperimentError(f"{self.path}: [{key}] {what}")

    def table(self, value: Any, key: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table, got {type(value).__name__}")
        return value

    def keys(self, table: Mapping, allowed: set[str], key: str) -> None:
        for k in table:
            if k not in allowed:
                raise self.fail(key, f"unknown key {k!r} (expected one of: {', '.join(sorted(allowed))})")

    def string(self, table: Mapping, k: str, key: str, *, required: bool = False) -> str | None:
        v = table.get(k)
        if v is None:
            if required:
                raise self.fail(key, f"missing key {k!r}")
            return None
        if not isinstance(v, str) or not v:
            raise self.fail(key, f"{k} must be a non-empty string, got {v!r}")
        return v

    def strings(self, table: Mapping, k: str, key: str) -> tuple[str, ...]:
        v = table.get(k, [])
        if not isinstance(v, list) or not all(isinstance(s, str) and s for s in v):
            raise self.fail(key, f"{k} must be a list of non-empty strings, got {v!r}")
        return tuple(v)

    def integer(self, table: Mapping, k: str, key: str, default: int, lo: int = 0) -> int:
        v = table.get(k, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise self.fail(key, f"{k} must be an integer >= {lo}, got {v!r}")
        return v

    def sha(self, table: Mapping, k: str, key: str) -> str | None:
        v = self.string(table, k, key)
        if v is not None and (len(v) != 64 or any(c not in "0123456789abcdef" for c in v)):
            raise self.fail(key, f"{k} must be 64 lowercase hex digits (a sha256), got {v!r}")
        return v

    def settings(self, table: Mapping, key: str) -> dict[str, Any]:
        v = table.get("set", {})
        if not isinstance(v, dict):
            raise self.fail(key, f"set must be a table of config keys, got {type(v).__name__}")
        for k, x in v.items():
            if not isinstance(x, (str, int, float, bool)):
                raise self.fail(f"{key}.set", f"{k} must be a string, number or boolean, got {type(x).__name__}")
        return dict(v)


def read_experiment(path: str | Path) -> Experiment:
    """Parse and check an experiment file; references between steps are checked by the graph."""
    path = Path(path)
    r = _Reader(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExperimentError(f"{path}: experiment file not found") from None
    except UnicodeDecodeError as e:
        raise ExperimentError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{path}: not valid TOML ({e})") from None
    r.keys(raw, _TOP, "top level")
    head = r.table(raw.get("experiment", {}), "experiment")
    r.keys(head, _EXPERIMENT, "experiment")
    name = r.string(head, "name", "experiment", required=True)
    seeds = head.get("seeds", [0, 1001, 2001, 3001])
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    ):
        raise r.fail("experiment", f"seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    timings = tuple((path.parent / t).resolve() for t in r.strings(head, "timings", "experiment"))
    data = {k: _data(r, k, v) for k, v in r.table(raw.get("data", {}), "data").items()}
    backbones = {k: _backbone(r, k, v) for k, v in r.table(raw.get("backbones", {}), "backbones").items()}
    steps: dict[str, Step] = {}
    for kind in KINDS:
        for k, v in r.table(raw.get(kind, {}), kind).items():
            step = _step(r, kind, k, r.table(v, f"{kind}.{k}"))
            steps[step.address] = step
    board = r.table(raw.get("leaderboard", {}), "leaderboard")
    r.keys(board, _LEADERBOARD, "leaderboard")
    out = r.string(board, "out", "leaderboard") or "leaderboard"
    if "leaderboard" in raw:
        plots = board.get("plots", True)
        if not isinstance(plots, bool):
            raise r.fail("leaderboard", f"plots must be true or false, got {plots!r}")
        steps["leaderboard"] = Step(kind="leaderboard", name="leaderboard", gpus=0, settings={"plots": plots})
    if not steps:
        raise r.fail("top level", "no steps: expected at least one [curate.*], [train.*], [run.*] or [rerank.*] table")
    return Experiment(
        path=path,
        name=name or "",
        description=r.string(head, "description", "experiment") or "",
        seeds=tuple(seeds),
        data=data,
        backbones=backbones,
        steps=steps,
        timings=timings,
        leaderboard_out=out,
    )


def _name_ok(r: _Reader, key: str, name: str) -> None:
    if not name or "/" in name or name.startswith(".") or any(c.isspace() for c in name):
        raise r.fail(key, f"{name!r} is not a usable name (no '/', no spaces, not starting with '.')")


def _data(r: _Reader, name: str, value: Any) -> DataSource:
    key = f"data.{name}"
    _name_ok(r, key, name)
    t = r.table(value, key)
    r.keys(t, _DATA, key)
    file, generate = r.string(t, "file", key), r.string(t, "generate", key)
    if (file is None) == (generate is None):
        raise r.fail(
            key, "expected exactly one of 'file' (a canonical JSONL file) or 'generate' (an embedded generator)"
        )
    if generate is not None and generate not in GENERATORS:
        raise r.fail(key, f"unknown generator {generate!r} (expected one of: {', '.join(GENERATORS)})")
    sha = t.get("sha256") if t.get("sha256") == UNPINNED else r.sha(t, "sha256", key)
    if sha is None:
        raise r.fail(key, "missing key 'sha256' (the sha256 of the file's bytes, checked before any work)")
    if sha == UNPINNED and generate is not None:
        raise r.fail(key, "a generated file's sha256 is known: give it")
    return DataSource(name=name, file=file, generate=generate, sha256=sha)


def _backbone(r: _Reader, name: str, value: Any) -> Backbone:
    key = f"backbones.{name}"
    _name_ok(r, key, name)
    t = r.table(value, key)
    r.keys(t, _BACKBONE, key)
    b = Backbone(
        name=name,
        id=r.string(t, "id", key),
        revision=r.string(t, "revision", key),
        file=r.string(t, "file", key),
        sha256=r.sha(t, "sha256", key),
        tiny=r.string(t, "tiny", key),
        seed=r.integer(t, "seed", key, 0),
        quantization=r.string(t, "quantization", key) or "none",
        parameters=r.string(t, "parameters", key),
    )
    if (b.id is None) == (b.tiny is None):
        raise r.fail(
            key,
            "expected exactly one of 'id' (a hub id) or 'tiny' "
            f"(a model built from a config: one of {', '.join(TINY_ARCHITECTURES)})",
        )
    if b.id is not None and b.revision is None and (b.file is None or b.sha256 is None):
        raise r.fail(
            key,
            "pin the weights: 'revision' (the hub revision), or 'file' and 'sha256' (one weights "
            "file of the model and its sha256)",
        )
    if (b.file is None) != (b.sha256 is None):
        raise r.fail(key, "'file' and 'sha256' go together (a weights file of the model and its sha256)")
    if b.tiny is not None and b.tiny not in TINY_ARCHITECTURES:
        raise r.fail(key, f"tiny must be one of: {', '.join(TINY_ARCHITECTURES)}, got {b.tiny!r}")
    return b


def _step(r: _Reader, kind: str, name: str, t: dict) -> Step:
    key = f"{kind}.{name}"
    _name_ok(r, key, name)
    gpus = r.integer(t, "gpus", key, 1)
    if kind == "curate":
        r.keys(t, _CURATE, key)
        inputs = r.strings(t, "inputs", key)
        if not inputs:
            raise r.fail(key, "missing key 'inputs' (the data names to curate)")
        settings = {k: v for k, v in t.items() if k not in ("inputs", "expect_sha256", "gpus", "embedder")}
        expect = {"sha256": r.sha(t, "expect_sha256", key)} if "expect_sha256" in t else {}
        return Step(
            kind=kind,
            name=name,
            inputs=inputs,
            backbone=r.string(t, "embedder", key, required=True),
            settings=settings,
            gpus=gpus,
            expect=expect,
        )
    allowed = {"train": _TRAIN, "run": _RUN, "rerank": _RERANK}[kind]
    r.keys(t, allowed, key)
    system = r.string(t, "system", key, required=True)
    deviations = r.strings(t, "deviations", key)
    if kind == "train":
        return Step(
            kind=kind,
            name=name,
            system=system,
            inputs=(r.string(t, "data", key, required=True) or "",),
            backbone=r.string(t, "backbone", key, required=True),
            settings=r.settings(t, key),
            gpus=gpus,
            deviations=deviations,
        )
    collections = r.strings(t, "collections", key)
    if not collections:
        raise r.fail(key, "missing key 'collections' (the collections to run on)")
    return Step(
        kind=kind,
        name=name,
        system=system,
        backbone=r.string(t, "backbone", key),
        model=r.string(t, "model", key),
        first_stage=r.string(t, "first_stage", key, required=kind == "rerank"),
        collections=collections,
        settings=r.settings(t, key),
        gpus=gpus,
        deviations=deviations,
    )
