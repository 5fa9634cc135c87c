"""Carrying an experiment's backbones and data to a machine that cannot reach the model hub:
`aa-harness stage pack` cuts the local copies into numbered chunks of at most a given size, with a
manifest of every file's sha256; `aa-harness stage unpack` joins whatever chunks have arrived
(several transfers, if the link limits their size) into a model folder and a corpora folder there
(with the store entries and the results the steps still to run read, where there are any),
checking each file's sha256, and says which chunks are still missing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import BinaryIO, Sequence

from harness.errors import HarnessError
from harness.experiments.plan import Plan, file_sha256
from harness.foundation.atomic import atomic_write_text

MANIFEST = "stage.json"


def _sources(plan: Plan, names: list[str] | None) -> list[tuple[str, Path]]:
    """(where it goes, local path) of the experiment's data files and backbones' local copies."""
    from harness.foundation import locations
    from harness.neural.models import ModelNotFoundError, resolve_model

    read = _read_by_named_steps(plan, names)
    out: list[tuple[str, Path]] = []
    for name, src in plan.exp.data.items():
        if src.file and (names is None or name in names or name in read):
            path = plan.data_path(name)
            if path is not None:
                out.append((f"corpora/{src.file}", path))
    # the files of the collections the steps run on (CollectionSpec.files), from the corpora folder
    folder = locations.corpora_dir(plan.data_dir)
    collections = sorted({c for step in plan.exp.steps.values() for c in step.collections})
    named = [c for c in collections if names is not None and c in names]
    for c in collections:
        if names is not None and c not in (named or read):
            continue
        for f in plan.registry.collections[c].files:
            if (folder / f).is_file() and f"corpora/{f}" not in {d for d, _ in out}:
                out.append((f"corpora/{f}", folder / f))
            elif not (folder / f).is_file():
                raise HarnessError(
                    f"collection {c!r}: its file {f} is not in {folder} (--data-dir or ${locations.CORPORA_ENV})"
                )
    for name, b in plan.exp.backbones.items():
        if b.tiny or (names is not None and name not in names and name not in read):
            continue
        try:
            folder = Path(resolve_model(str(b.id), hub=False))
        except ModelNotFoundError as e:
            raise HarnessError(f"{plan.exp.path}: [backbones.{name}] {e}") from None
        plan.check_backbone(name)
        last = str(b.id).rstrip("/").split("/")[-1]
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            out.append((f"models/{last}/{f.relative_to(folder).as_posix()}", f))
    from harness.experiments.reproduce import needed, outputs

    todo, _ = needed(plan, outputs(plan.exp), explicit=False)  # judged once: it reads every result
    out += _store_entries(plan, names, todo)
    out += _run_inputs(plan, names, todo)
    return out


def _carried_steps(plan: Plan, names: list[str] | None, todo: Sequence[str]) -> list[str]:
    """The steps still to run whose inputs travel: all of them, or under --only the ones named (every
    one, where --only names data, backbones or collections but no step)."""
    if names is None or not any(n in plan.exp.steps for n in names):
        return list(todo)
    return [a for a in todo if a in names]


def _read_by_named_steps(plan: Plan, names: list[str] | None) -> set[str]:
    """The backbones, data names and collections the steps named under --only read (a run of a
    trained model loads its training's backbone): naming a step carries what it runs on, as
    naming a backbone or a collection carries that. Empty where --only names no step."""
    exp = plan.exp
    read: set[str] = set()
    for step in (exp.steps[n] for n in names or () if n in exp.steps):
        trained = exp.steps[step.model] if step.model else None
        read |= {b for b in (step.backbone, trained.backbone if trained else None) if b}
        read |= {d for d in step.inputs if d in exp.data} | set(step.collections)
    return read


def _store_entries(plan: Plan, names: list[str] | None, todo: Sequence[str]) -> list[tuple[str, Path]]:
    """The store entries the steps still to run read and that are made already: a curated set, a
    trained model (a reranker trained in an earlier allotment, say), so the machine there need
    not make them again (a curated set may need what it has not: spaCy for the names). Under
    --only, those of the carried steps (_carried_steps) and the done steps named, also where no step
    left reads them (to profile or rerun them there)."""
    from harness.experiments.graph import dependencies

    exp = plan.exp
    made = {d for a in todo for d in dependencies(exp, exp.steps[a]) if d not in todo}
    made |= {n for n in names or () if n in exp.steps and n not in todo}  # a done step named, read or not
    read = {d for a in _carried_steps(plan, names, todo) for d in dependencies(exp, exp.steps[a])}
    out: list[tuple[str, Path]] = []
    for address in sorted(made):
        if names is not None and address not in names and address not in read:
            continue
        step = exp.steps[address]
        if step.kind == "curate":
            folder = plan.curated_dir(step)
        elif step.kind == "train" and (mid := plan.model_id(step)):
            folder = plan.model_folder(mid)
        else:
            continue
        if not folder.is_dir():
            continue  # done because nothing to run needs it made
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            out.append((f"store/{folder.relative_to(plan.store).as_posix()}/{f.relative_to(folder).as_posix()}", f))
    return out


def _run_inputs(plan: Plan, names: list[str] | None, todo: Sequence[str]) -> list[tuple[str, Path]]:
    """The results the run and rerank steps still to run read, made already (each result file with
    its rankings): a rerank's first stage, and a step's own seeds that are current, which a step
    left half done keeps rather than makes again. Under --only, those of the carried steps
    (_carried_steps), on the collections named, if any."""
    from harness.runs.results import rankings_path, result_path

    exp = plan.exp
    out: list[tuple[str, Path]] = []
    for address in sorted(_carried_steps(plan, names, todo)):
        step = exp.steps[address]
        if step.kind not in ("run", "rerank"):
            continue
        collections = [c for c in step.collections if names is None or c in names] or list(step.collections)
        missing = plan.missing_seeds(step)
        wanted = [(step, c, seed) for c in collections for seed in exp.seeds if seed not in dict(missing.get(c, []))]
        if step.kind == "rerank":
            first = exp.steps[str(step.first_stage)]
            wanted += [(first, c, seed) for c in collections for seed in exp.seeds]
        for s, c, seed in wanted:
            result = result_path(plan.runs_dir, c, plan.run_name(s), seed)
            for f in (result, rankings_path(result)):
                if result.is_file() and f.is_file():
                    out.append((f"runs/{c}/{plan.run_name(s)}/{f.name}", f))
    return list(dict.fromkeys(out))  # a first stage two reranks read travels once


def pack(plan: Plan, out: Path, chunk_mib: int, names: list[str] | None = None) -> list[Path]:
    """Chunks `out/stage.NNNN` holding the files back to back, and `out/stage.json` saying which."""
    if chunk_mib < 1:
        raise HarnessError(f"--chunk-mib {chunk_mib}: give at least 1")
    limit = chunk_mib << 20
    sources = _sources(plan, names)  # every file found before anything is written
    out.mkdir(parents=True, exist_ok=True)
    files: list[dict] = []
    chunks: list[Path] = []
    current: BinaryIO | None = None
    room = 0
    try:
        for dest, path in sources:
            files.append({"path": dest, "size": path.stat().st_size, "sha256": file_sha256(path)})
            with open(path, "rb") as f:
                while block := f.read(min(1 << 22, room if room else limit)):
                    if room == 0:  # the chunk is full (or there is none yet): start the next
                        if current is not None:
                            current.close()
                        chunks.append(out / f"stage.{len(chunks):04d}")
                        current, room = open(chunks[-1], "wb"), limit
                    assert current is not None
                    current.write(block)
                    room -= len(block)
    finally:
        if current is not None:
            current.close()
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in chunks]
    atomic_write_text(
        out / MANIFEST,
        json.dumps(
            {"experiment": plan.exp.name, "files": files, "chunks": [p.name for p in chunks], "chunk_sha256": digests},
            indent=1,
        )
        + "\n",
    )
    return chunks + [out / MANIFEST]


def unpack(folder: Path, dest: Path) -> list[str]:
    """Join the chunks in `folder` into `dest` (models/… and corpora/…); the files' sha256 checked.
    Returns the missing chunk names (nothing is written while any is missing)."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise HarnessError(f"{manifest_path}: no stage manifest here (`aa-harness stage pack` writes it)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    missing = [c for c in manifest["chunks"] if not (folder / c).is_file()]
    if missing:
        return missing
    for name, want in zip(manifest["chunks"], manifest["chunk_sha256"]):
        if hashlib.sha256((folder / name).read_bytes()).hexdigest() != want:
            raise HarnessError(f"{folder / name}: sha256 differs from {MANIFEST}'s (a broken transfer: send it again)")
    stream = _ChunkReader([folder / c for c in manifest["chunks"]])
    for entry in manifest["files"]:
        target = dest / entry["path"]
        if ".." in Path(entry["path"]).parts or Path(entry["path"]).is_absolute():
            raise HarnessError(f"{manifest_path}: {entry['path']!r} is not a relative path inside the stage")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.part")
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            left = entry["size"]
            while left:
                block = stream.read(min(left, 1 << 22))
                f.write(block)
                h.update(block)
                left -= len(block)
        if h.hexdigest() != entry["sha256"]:
            tmp.unlink()
            raise HarnessError(f"{target}: sha256 differs from {MANIFEST}'s")
        os.replace(tmp, target)
    return []


class _ChunkReader:
    def __init__(self, paths: list[Path]):
        self.paths = list(paths)
        self.f: BinaryIO | None = None

    def read(self, n: int) -> bytes:
        while True:
            if self.f is None:
                if not self.paths:
                    raise HarnessError("the stage's chunks end before its files do (a broken transfer)")
                self.f = open(self.paths.pop(0), "rb")
            block = self.f.read(n)
            if block:
                return block
            self.f.close()
            self.f = None
