"""Submitted rankings: a ranking made by a user's own pipeline, recorded as a run of a split.

`aa-harness submit FILE --collection C --seed S --name NAME` reads a TREC run or a rankings file
in the harness's own format, checks it against the split's manifest (the split's queries and
candidates only; one document per rank and each document once per query; ranks that follow the
scores), puts each query in the harness's tie-rule order, cut at `depth`, scores it exactly as a
run is scored, and writes <runs-dir>/<collection>/<name>/seed-<S>.json and its rankings, sealed
like any result. The result's system is `submitted` (a name no plugin may register), its config
is empty (no code ran here), and its `submission` field records the format, the file's name and
sha256, the TREC run tag and the submitter's description. The verified reader recomputes it like
any other result; the leaderboard marks it.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import DataError, HarnessError
from harness.foundation import locations
from harness.specs import SUBMITTED

_log = logging.getLogger(__name__)

FORMATS = ("trec", "rankings")


@dataclass(frozen=True)
class Submission:
    """What `aa-harness submit` was given."""

    file: Path
    collection: str
    seed: int
    name: str
    format: str = "trec"
    description: str = ""
    submitter: str = ""
    depth: int = 100
    overwrite: bool = False
    runs_dir: Path | None = None  # None: harness.foundation.locations.runs_dir()
    splits_dir: Path | None = None  # None: the record, then <runs-dir>-splits/
    data_dir: str | None = None  # where the collection's data is, to check the manifest by rebuilding it


@dataclass(frozen=True)
class Entry:
    """One ranked document of a submitted file, with the line it came from."""

    lineno: int
    qid: str
    docid: str
    rank: int
    score: float


def trec_entries(path: Path, tags: list[str]) -> Iterator[Entry]:
    """The entries of a TREC run file; its one run tag is appended to `tags`."""
    from harness.runs.trec import read_run

    first: tuple[str, int] | None = None
    for line in read_run(path):
        if first is None:
            first = (line.tag, line.lineno)
            tags.append(line.tag)
        elif line.tag != first[0]:
            raise DataError(
                f"{path}:{line.lineno}: run tag {line.tag!r}, but line {first[1]} has {first[0]!r}; "
                "expected one run (one tag) per file"
            )
        yield Entry(line.lineno, line.qid, line.docid, line.rank, line.score)


def rankings_entries(path: Path) -> Iterator[Entry]:
    """The entries of a rankings file in the harness's format: one line per query,
    {"queryID": ..., "ranking": [[documentID, score], ...]}, best first (rank = position)."""
    from harness.data.jsonl import iter_jsonl

    expected = 'expected {"queryID": "...", "ranking": [["documentID", score], ...]}'
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        qid, ranking = obj.get("queryID"), obj.get("ranking")
        if not isinstance(qid, str) or not isinstance(ranking, list):
            raise DataError(f"{path}:{lineno}: {expected}")
        if qid in seen:
            raise DataError(
                f"{path}:{lineno}: query {qid!r} again (also line {seen[qid]}); expected one line per query"
            )
        seen[qid] = lineno
        for rank, item in enumerate(ranking, 1):
            ok = (
                isinstance(item, list)
                and len(item) == 2
                and isinstance(item[0], str)
                and isinstance(item[1], (int, float))
                and not isinstance(item[1], bool)
            )
            if not ok:
                raise DataError(f"{path}:{lineno}: query {qid!r}, item {rank}: {expected}")
            if not math.isfinite(item[1]):
                raise DataError(
                    f"{path}:{lineno}: query {qid!r} gives {item[0]!r} the score {item[1]!r}; expected a finite score"
                )
            yield Entry(lineno, qid, item[0], rank, float(item[1]))


def check_entries(path: Path, entries: Iterable[Entry], split) -> dict[str, list[tuple[str, float]]]:
    """queryID -> [(documentID, score)] in the submitted rank order, or a DataError naming the file and
    line: a query or document not in the split, a rank or a document twice in one query, or a rank
    scored above the rank before it."""
    queries = {q.documentID for q in split.queries}
    candidates = set(split.candidates)
    what = f"{split.collection} seed {split.seed}"
    by_query: dict[str, list[Entry]] = defaultdict(list)
    doc_line: dict[tuple[str, str], int] = {}
    rank_line: dict[tuple[str, int], int] = {}
    for e in entries:
        if e.qid not in queries:
            raise DataError(
                f"{path}:{e.lineno}: query {e.qid!r} is not a query of {what} "
                f"(expected one of its {len(queries)} query ids)"
            )
        if e.docid not in candidates:
            raise DataError(
                f"{path}:{e.lineno}: document {e.docid!r} is not a candidate of {what} "
                f"(expected one of its {len(candidates)} candidate ids)"
            )
        if (e.qid, e.docid) in doc_line:
            raise DataError(
                f"{path}:{e.lineno}: query {e.qid!r} ranks document {e.docid!r} again (also line "
                f"{doc_line[(e.qid, e.docid)]}); expected each document once per query"
            )
        if (e.qid, e.rank) in rank_line:
            raise DataError(
                f"{path}:{e.lineno}: query {e.qid!r} has rank {e.rank} again (also line "
                f"{rank_line[(e.qid, e.rank)]}); expected one document per rank"
            )
        doc_line[(e.qid, e.docid)] = rank_line[(e.qid, e.rank)] = e.lineno
        by_query[e.qid].append(e)
    if not by_query:
        raise DataError(f"{path}: no rankings in the file; expected at least one ranked document")
    out = {}
    for qid, ranked in by_query.items():
        ranked.sort(key=lambda e: e.rank)
        for above, e in zip(ranked, ranked[1:]):
            if e.score > above.score:
                raise DataError(
                    f"{path}:{e.lineno}: query {qid!r}: rank {e.rank} scores {e.score!r}, above rank "
                    f"{above.rank}'s {above.score!r} (line {above.lineno}); expected scores that do "
                    "not increase down the ranks"
                )
        out[qid] = [(e.docid, e.score) for e in ranked]
    return out


def read_submitted(path: Path, fmt: str, split) -> tuple[dict[str, list[tuple[str, float]]], str]:
    """The checked rankings of a submitted file and its TREC run tag ("" for the rankings format)."""
    if fmt not in FORMATS:
        raise HarnessError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    tags: list[str] = []
    entries = trec_entries(path, tags) if fmt == "trec" else rankings_entries(path)
    return check_entries(path, entries, split), (tags[0] if tags else "")


def check_own_run(run_dir: Path, name: str) -> None:
    """Submitted rankings go under a run name of their own: a run folder holding a registered system's
    results is refused, --overwrite or not (a submission never replaces a run the harness made)."""
    from harness.runs.results import read_result

    for path in sorted(Path(run_dir).glob("seed-*.json")):
        try:
            system = read_result(path)["system"]
        except HarnessError:
            continue  # unreadable: the leaderboard reports it
        if system != SUBMITTED:
            raise HarnessError(
                f"{path}: run {name!r} holds results of system {system!r}; submitted rankings go "
                "under a run name of their own: choose another --name"
            )


def _one_line(text: str) -> str:
    """Free text for tables: runs of whitespace (newlines too) made one space."""
    return " ".join(str(text).split())


def submit(registry, sub: Submission, log=_log.info):
    """Check, score and record a submitted ranking (see the module's docstring); returns the RunOutcome.
    Every check runs before anything is written; on an error nothing is."""
    from harness.evaluation.metrics import evaluate, metrics_line
    from harness.foundation.provenance import provenance
    from harness.runs.results import (
        SCHEMA_VERSION,
        absolute,
        check_run_name,
        check_runs_dir,
        result_path,
        write_result,
    )
    from harness.runs.runner import RunOutcome, check_rankings
    from harness.runs.verified import ManifestSource, manifest_places

    check_run_name(sub.name)
    if sub.depth < 100:
        raise HarnessError("--depth must be at least 100 (Success@100 needs the top 100)")
    runs_dir = absolute(locations.runs_dir(sub.runs_dir))
    check_runs_dir(runs_dir, sub.collection, sub.name)
    path = result_path(runs_dir, sub.collection, sub.name, sub.seed)
    if path.exists() and not sub.overwrite:
        raise HarnessError(
            f"{path}: seed {sub.seed} of run {sub.name!r} exists; --overwrite replaces it, or choose another --name"
        )
    check_own_run(path.parent, sub.name)
    source = ManifestSource(manifest_places(runs_dir, sub.splits_dir), registry, sub.data_dir)
    split = source.get(sub.collection, sub.seed, Path(sub.file))
    file = Path(sub.file)
    submitted, tag = read_submitted(file, sub.format, split)
    ranked = check_rankings(submitted, split, sub.depth, SUBMITTED)  # the tie rule, cut at depth
    reordered = sum(1 for q, r in submitted.items() if [c for c, _ in r[: sub.depth]] != [c for c, _ in ranked[q]])
    if reordered:
        log(
            f"{file}: {reordered} quer{'y' if reordered == 1 else 'ies'} with tied scores put in the harness's tie "
            "order (score descending, then document id ascending)"
        )
    cut = sum(1 for r in submitted.values() if len(r) > sub.depth)
    if cut:
        log(
            f"{file}: {cut} quer{'y' if cut == 1 else 'ies'} ranked more than {sub.depth} documents; the top "
            f"{sub.depth} are kept (--depth)"
        )
    scores = evaluate(ranked, split.needles, split.query_genres)
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "system": SUBMITTED,
        "run_name": sub.name,
        "config": {},
        "collection": split.collection,
        "seed": split.seed,
        "split_sha256": split.sha256,
        "depth": sub.depth,
        "n_candidates": len(split.candidates),
        **scores,
        "provenance": {**provenance(), "device": "not recorded (submitted rankings)"},
        "extra": {},
        "submission": {
            "format": sub.format,
            "file": file.name,
            "file_sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
            "tag": tag,
            "submitter": _one_line(sub.submitter),
            "description": _one_line(sub.description),
        },
    }
    from harness.runs.job import run_folder_lock

    with run_folder_lock(path.parent):  # one writer of the run folder at a time; the check again under the lock
        if path.exists() and not sub.overwrite:
            raise HarnessError(
                f"{path}: seed {sub.seed} of run {sub.name!r} exists; --overwrite replaces it, or choose another --name"
            )
        write_result(path, result, ranked)
    log(
        f"{sub.name} on {split.collection} seed {split.seed} (submitted, {scores['n_ranked']} of "
        f"{scores['n_queries']} queries ranked): {metrics_line(scores['metrics'])}  -> {path}"
    )
    return RunOutcome(path, False, scores["metrics"])
