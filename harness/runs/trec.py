"""TREC run and qrels files: the plain-text formats the retrieval field's tools read.

A run line is `qid Q0 docid rank score tag`; a qrels line is `qid 0 docid relevance`. TREC tools
(trec_eval, pytrec_eval, ir_measures) ignore the rank column and order a query's documents by
score, breaking ties by document id *descending*, the opposite of the harness's tie rule (score
descending, then id ascending). And trec_eval (pytrec_eval with it) holds a score in single
precision, so two scores that differ only beyond float32's 7 digits are a tie there. So a written
run's scores are strictly decreasing within each query *in single precision*: the tools then see
the harness's order, whatever they do with ties.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import DataError, HarnessError

RUN_FIELDS = "qid Q0 docid rank score tag"


def _plain(ident: str, what: str, where: str) -> str:
    """An id a TREC line can carry: non-empty, no whitespace (the fields are whitespace-separated)."""
    if not ident or any(ch.isspace() for ch in ident):
        raise HarnessError(f"{where}: {what} {ident!r} is empty or holds whitespace, which a TREC file cannot carry")
    return ident


def strictly_decreasing(scores: Sequence[float]) -> list[str]:
    """Scores in rank order as text that is strictly decreasing even when read in single precision.

    Each score is rounded to float32; one that is then not below the score before it (a tie, or a
    difference float32 cannot hold) is lowered to the next float32 below that one. When this would
    leave float32's range (scores near -3.4e38), the query's scores are its ranks counted down
    instead, a decreasing function of rank that any reader holds exactly.
    """
    import numpy as np

    limit = float(np.finfo(np.float32).max)
    out: list[np.float32] = []
    for s in scores:
        x = np.float32(min(max(s, -limit), limit))
        if out and x >= out[-1]:
            if out[-1] <= -limit:
                return [str(len(scores) - i) for i in range(len(scores))]
            x = np.nextafter(out[-1], np.float32(-np.inf))
        out.append(x)
    return [str(x) for x in out]  # the shortest text that reads back as this float32


def format_run(rankings: Mapping[str, Sequence[tuple[str, float]]], tag: str, where: str) -> str:
    """TREC run lines for rankings already in rank order (qids sorted, ranks 1-based). A ranking
    whose scores are all tied is left out: the harness scores its query as not ranked
    (harness.evaluation.metrics), and so will trec_eval.

    where: the file the rankings came from, named in an error (an id holding whitespace)."""
    from harness.evaluation.metrics import all_tied

    _plain(tag, "run tag", where)
    lines = []
    for qid in sorted(rankings):
        ranking = rankings[qid]
        if all_tied(ranking):
            continue
        scores = strictly_decreasing([float(s) for _, s in ranking])
        for rank, ((doc, _), score) in enumerate(zip(ranking, scores), 1):
            lines.append(
                f"{_plain(qid, 'query id', where)} Q0 {_plain(doc, 'document id', where)} {rank} {score} {tag}\n"
            )
    return "".join(lines)


def format_qrels(needles: Mapping[str, Sequence[str]], where: str) -> str:
    """TREC qrels lines, `qid 0 docid 1` for each needle of each query (sorted)."""
    return "".join(
        f"{_plain(q, 'query id', where)} 0 {_plain(d, 'document id', where)} 1\n"
        for q in sorted(needles)
        for d in sorted(needles[q])
    )


@dataclass(frozen=True)
class RunLine:
    """One line of a TREC run file, with its line number for error messages."""

    lineno: int
    qid: str
    docid: str
    rank: int
    score: float
    tag: str


def read_run(path: Path) -> Iterator[RunLine]:
    """The lines of a TREC run file (plain or .gz; blank lines skipped), or a DataError naming the file,
    the line and what was expected. The Q0 column is not read, as TREC tools do."""
    from harness.data.jsonl import open_text

    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder, not a TREC run file")
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        with open_text(path) as f:
            for lineno, line in enumerate(f, 1):
                fields = line.split()
                if not fields:
                    continue
                yield _parse(fields, f"{path}:{lineno}", lineno)
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None


def _parse(fields: list[str], where: str, lineno: int) -> RunLine:
    if len(fields) != 6:
        raise DataError(
            f"{where}: expected `{RUN_FIELDS}` (6 fields separated by whitespace), got {len(fields)} field(s)"
        )
    qid, _, docid, rank, score, tag = fields
    try:
        r = int(rank)
    except ValueError:
        r = -1
    if r < 0:
        raise DataError(f"{where}: expected a rank (a whole number, 0 or more) in the 4th field, got {rank!r}")
    try:
        s = float(score)
    except ValueError:
        s = math.nan
    if not math.isfinite(s):
        raise DataError(f"{where}: expected a finite score in the 5th field, got {score!r}")
    return RunLine(lineno, qid, docid, r, s, tag)
