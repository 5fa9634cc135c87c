"""Split manifest files: one JSON file per collection and seed (`<dir>/<collection>/seed-<seed>.json`),
sealed by the sha256 of its content.

Reading checks the sha256, the types and the place (seed and collection against the file name and
folder); writing writes a set of seeds at once. Checking a manifest against the data is
harness.evaluation.split_store's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.errors import DataError
from harness.evaluation.split import Query, Split


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_place(split: Split, path: Path, collection: str | None = None) -> None:
    """The manifest's seed and collection are the ones its file name and folder say (or `collection`,
    for a folder of a collection's earlier manifests kept under another name)."""
    path = Path(path)
    if path.name != f"seed-{split.seed}.json":
        raise DataError(
            f"{path}: the manifest is of seed {split.seed}, but the file is named {path.name} "
            f"(copied by hand? seed-{split.seed}.json is its name)"
        )
    if (collection or path.parent.name) != split.collection:
        raise DataError(
            f"{path}: the manifest is of collection {split.collection!r}, but lies in folder {path.parent.name!r}"
        )


def split_from_manifest(obj: Mapping[str, Any], where: str) -> Split:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: not a split manifest (a JSON object is expected)")
    queries, needles = obj.get("queries"), obj.get("needles")
    well_typed = (
        isinstance(obj.get("collection"), str)
        and isinstance(obj.get("seed"), int)
        and not isinstance(obj.get("seed"), bool)
        and _strings(obj.get("candidates"))
        and isinstance(queries, list)
        and all(
            isinstance(q, dict)
            and isinstance(q.get("documentID"), str)
            and _strings(q.get("authorIDs"))
            and isinstance(q.get("genre"), str)
            for q in queries
        )
        and isinstance(needles, dict)
        and all(_strings(v) for v in needles.values())
        and isinstance(obj.get("builder", {}), dict)
        and isinstance(obj.get("source_sha256", ""), str)
    )
    if not well_typed:
        raise DataError(
            f"{where}: not a split manifest (collection and seed, candidates as a list of ids, queries "
            "as {documentID, authorIDs, genre}, needles as lists of ids)"
        )
    try:
        split = Split(
            collection=obj["collection"],
            seed=int(obj["seed"]),
            queries=tuple(Query(q["documentID"], tuple(q["authorIDs"]), q["genre"]) for q in obj["queries"]),
            candidates=tuple(obj["candidates"]),
            needles={k: tuple(v) for k, v in obj["needles"].items()},
            builder=obj.get("builder", {}),
            source_sha256=obj.get("source_sha256", ""),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{where}: not a split manifest ({type(e).__name__}: {e})") from None
    if obj.get("sha256") != split.sha256:
        raise DataError(f"{where}: sha256 does not match the manifest content (edited by hand or truncated?)")
    return split


def manifest_path(splits_dir: Path, collection: str, seed: int) -> Path:
    return Path(splits_dir) / collection / f"seed-{seed}.json"


def find_manifest(places: Sequence[Path], collection: str, seed: int) -> Path:
    """The first of `places` holding the manifest; a missing one is one line naming --splits-dir."""
    for place in places:
        path = manifest_path(place, collection, seed)
        if path.is_file():
            return path
    raise DataError(
        f"{manifest_path(places[-1], collection, seed)}: split manifest of {collection!r} seed {seed} "
        f"not found (looked in {', '.join(str(p) for p in places)}); name its folder with --splits-dir"
    )


def read_manifest(path: Path, collection: str | None = None) -> Split:
    """A manifest whose sha256 and place (seed and collection against the file name and folder) check
    out; its structure is check_split's, and rebuilding it from the data check_by_rebuilding's."""
    from harness.data.jsonl import read_json

    split = split_from_manifest(read_json(path, "split manifest"), str(path))
    check_place(split, Path(path), collection)
    return split


def write_manifest(split: Split, splits_dir: Path) -> Path:
    return write_manifests([split], splits_dir)[0]


def write_manifests(splits: Sequence[Split], splits_dir: Path) -> list[Path]:
    """The manifests of several seeds, written as one set (a crash leaves all old or all new)."""
    from harness.foundation.output_set import write_output_set

    if not splits:
        return []
    return write_output_set(splits_dir, {f"{s.collection}/seed-{s.seed}.json": s.to_json() for s in splits})
