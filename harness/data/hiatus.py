"""HIATUS HRS releases read as shipped: TA1 sample folders, each already a split.

A folder `<base>_sample-<N>_<genre label>/` (e.g. HRS1_english_long_sample-0_perGenre-HRS1.3)
holds data/<base>_TA1_input_queries.jsonl, data/<base>_TA1_input_candidates.jsonl
(documentID, fullText) and groundtruth/<base>_TA1_groundtruth.jsonl (documentID, authorIDs).
Genre appears only in the folder name, so every query of a folder gets that label and
candidates get none. Folders with the same label and different sample numbers become the
seeds of one collection, e.g. `hrs1-perGenre-HRS1.3` with seed 0. A query's needles are
the candidates that share an author with it in the groundtruth.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.data.collection import Collection, GivenSplit
from harness.data.documents import Document, document_from_record
from harness.data.jsonl import iter_jsonl
from harness.errors import DataError

FOLDER = re.compile(r"^(?P<release>HRS\d+)_.*_sample-(?P<sample>\d+)_(?P<label>.+)$")


def find_ta1_folders(root: Path) -> dict[str, dict[int, Path]]:
    """collection name -> sample number -> folder, for every TA1 folder under `root`."""
    found: dict[str, dict[int, Path]] = {}
    for folder in sorted(root.glob("**/TA1/*")):
        m = FOLDER.match(folder.name)
        if m and folder.is_dir():
            name = f"{m['release'].lower()}-{m['label']}"
            found.setdefault(name, {})[int(m["sample"])] = folder
    return found


def _one(folder: Path, sub: str, suffix: str) -> Path:
    matches = sorted((folder / sub).glob(f"*{suffix}"))
    if len(matches) != 1:
        raise DataError(f"{folder / sub}: expected exactly one *{suffix} file, found {len(matches)}")
    return matches[0]


def read_ta1_folder(folder: Path, label: str) -> tuple[dict[str, Document], GivenSplit]:
    truth: dict[str, tuple[str, ...]] = {}
    gt_path = _one(folder, "groundtruth", "_TA1_groundtruth.jsonl")
    for lineno, rec in iter_jsonl(gt_path):
        where = f"{gt_path}:{lineno}"
        if "documentID" not in rec or "authorIDs" not in rec:
            raise DataError(f"{where}: groundtruth record needs 'documentID' and 'authorIDs'")
        if rec["documentID"] in truth:
            raise DataError(f"{where}: duplicate documentID {rec['documentID']!r}")
        truth[rec["documentID"]] = tuple(rec["authorIDs"] if isinstance(rec["authorIDs"], list) else [rec["authorIDs"]])

    def read(suffix: str, genre: str) -> dict[str, Document]:
        path = _one(folder, "data", suffix)
        out: dict[str, Document] = {}
        for lineno, rec in iter_jsonl(path):
            where = f"{path}:{lineno}"
            doc = document_from_record(rec, where, required=("documentID", "fullText"))
            if doc.documentID in out:
                raise DataError(f"{where}: duplicate documentID {doc.documentID!r}")
            if doc.documentID not in truth:
                raise DataError(f"{where}: documentID {doc.documentID!r} has no groundtruth authors in {gt_path}")
            out[doc.documentID] = Document(doc.documentID, truth[doc.documentID], doc.fullText, genre, doc.extra)
        return out

    queries = read("_TA1_input_queries.jsonl", label)
    candidates = read("_TA1_input_candidates.jsonl", "")
    both = set(queries) & set(candidates)
    if both:
        raise DataError(f"{folder}: documentID {sorted(both)[0]!r} is both a query and a candidate")
    by_author: dict[str, list[str]] = {}
    for c, doc in candidates.items():
        for a in doc.authorIDs:
            by_author.setdefault(a, []).append(c)
    needles = {q: tuple(sorted({c for a in doc.authorIDs for c in by_author.get(a, ())})) for q, doc in queries.items()}
    without = sorted(q for q, n in needles.items() if not n)
    if without:
        raise DataError(
            f"{folder}: {len(without)} query(ies) have no candidate by the same author (first: {without[0]!r})"
        )
    split = GivenSplit(
        queries=tuple((q, queries[q].authorIDs, label) for q in sorted(queries)),
        candidates=tuple(sorted(candidates)),
        needles=needles,
        builder={"name": "hiatus-ta1", "folder": folder.name},
    )
    return {**queries, **candidates}, split


def ta1_collection(name: str, folders: dict[int, Path]) -> Collection:
    docs: dict[str, Document] = {}
    splits = {}
    label = name.split("-", 1)[1]
    for seed, folder in sorted(folders.items()):
        more, split = read_ta1_folder(folder, label)
        for d, doc in more.items():
            if d in docs and docs[d].fullText != doc.fullText:
                raise DataError(f"{folder}: documentID {d!r} has a different text in another sample of {name}")
            docs.setdefault(d, doc)
        splits[seed] = split
    return Collection(name=name, documents=docs, sources=tuple(str(f) for f in folders.values()), given_splits=splits)
