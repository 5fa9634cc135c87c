"""Runs kept in place but out of the tables: made on data since corrected, or with a defect since
fixed, and not yet rerun.

The stale-runs registry lists them, a JSON file named by the leaderboard's record (its `stale` key,
harness.reports.record), never one found beside the runs folder:

    {"runs": [{"collection": "pan19-en", "run": "sadiri-mpnet", "manifests": "pan19-en-v1",
               "reason": "made on pan19-en v1 (label noise); rerun pending"}]}

A stale run's results stay where they are and still verify, against the manifests they were made on,
which are kept in the manifests folder under `manifests` (the collection's earlier manifests, byte for
byte); an entry without `manifests` was made on the collection's current ones (a run made with a
defect since fixed, say). The pages list stale runs in a section of their own with the reason, never in a results table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import DataError


@dataclass(frozen=True)
class StaleRun:
    collection: str
    run: str
    manifests: str  # the folder name, beside the collection's, of the manifests the run was made on ("": the current)
    reason: str


def load_stale(path: Path | None) -> dict[tuple[str, str], StaleRun]:
    """(collection, run name) -> its entry, from the registry file at `path`; empty without one."""
    if path is None:
        return {}
    from harness.data.jsonl import read_json

    obj = read_json(path, "stale-runs registry")  # bounded: not UTF-8, malformed or too deep is one line
    try:
        entries = [
            StaleRun(
                str(e["collection"]),
                str(e["run"]),
                str(e.get("manifests") or ""),
                str(e["reason"]),
            )
            for e in obj["runs"]
        ]
    except (KeyError, TypeError) as e:
        raise DataError(f"{path}: not a stale-runs registry ({type(e).__name__}: {e})") from None
    return {(e.collection, e.run): e for e in entries}


def stale_section(
    stale_runs: dict,
    entries: dict[tuple[str, str], StaleRun],
    collection: str | None = None,
    marks: dict | None = None,
) -> str:
    """A page section listing the stale runs (of one collection, or all) with their reason and Success@8.
    marks: run name -> the fixes its code predates (harness.reports.fixes), shown after the name."""
    from harness.foundation.markdown_table import markdown_table
    from harness.reports.cells import mean_sd_cell
    from harness.reports.fixes import footnotes, label

    marks = marks or {}
    used: list = []
    rows = []
    for (c, name), res in sorted(stale_runs.items()):
        if collection is not None and c != collection:
            continue
        cell = mean_sd_cell([r["metrics"]["success@8"] for r in res])
        used += marks.get(name, [])
        rows.append(
            [
                label(name, marks.get(name, [])),
                c,
                " ".join(str(r["seed"]) for r in res),
                cell,
                entries[(c, name)].reason,
            ]
        )
    if not rows:
        return ""
    table = markdown_table(
        rows,
        headers=["run", "collection", "seeds", "S@8 (as made)", "why stale"],
        disable_numparse=True,
    )
    return (
        "\n## Stale runs\n\nMade on data since corrected, or with a defect since fixed, and not rerun yet; "
        "kept, and verified against the manifests they were made on, but left out of every table above and "
        "of the comparisons.\n\n"
        f"{table}\n{footnotes(used)}"
    )
