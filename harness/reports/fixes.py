"""Result-changing fixes, and which recorded runs were made with code older than one.

The registry is data, a JSON file the leaderboard's record names (harness.reports.record; the
committed one: `leaderboards/fixes.json`), a list of
  {"commit": ..., "date": ISO time of the commit, "systems": [names], "trained_only": bool,
   "mark": "†", "what": "what changed, and what it means for older results"}.
A run (or training log) of an affected system is marked when its recorded commit does not
contain the fix: by `git merge-base --is-ancestor` where the repository knows both commits,
else by time (made before the fix's date). `trained_only`: only runs of a trained model
(config `model` set) and training logs are affected.
"""

from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from harness.foundation.provenance import development_checkout


@dataclass(frozen=True)
class Fix:
    commit: str
    date: str
    systems: tuple[str, ...]
    what: str
    mark: str = "†"
    trained_only: bool = False


def load_fixes(path: Path) -> list[Fix]:
    """The fixes registry; a malformed one is a DataError naming the file and the entry."""
    from harness.data.jsonl import read_json
    from harness.errors import DataError

    if not Path(path).is_file():
        return []
    entries = read_json(path, "fixes registry")
    if not isinstance(entries, list):
        raise DataError(f"{path}: the fixes registry must be a JSON list of fixes, got {type(entries).__name__}")
    fixes = []
    for i, f in enumerate(entries):
        ok = (
            isinstance(f, dict)
            and all(isinstance(f.get(k), str) for k in ("commit", "date", "what"))
            and isinstance(f.get("systems"), list)
            and all(isinstance(s, str) for s in f["systems"])
            and isinstance(f.get("mark", "†"), str)
        )
        if not ok:
            raise DataError(
                f"{path}: fix #{i + 1} must be {{commit, date, what: strings; systems: list of names; "
                f"mark, trained_only optional}}, got {str(f)[:80]}"
            )
        fixes.append(
            Fix(
                commit=f["commit"],
                date=f["date"],
                systems=tuple(f["systems"]),
                what=f["what"],
                mark=f.get("mark", "†"),
                trained_only=bool(f.get("trained_only", False)),
            )
        )
    return fixes


@functools.cache
def _contains(commit: str, fix: str) -> bool | None:
    """Whether `commit` has `fix` in its history (None: git cannot tell)."""
    checkout = development_checkout()  # installed: no repository to ask; the dates decide
    if checkout is None:
        return None
    try:
        r = subprocess.run(
            ["git", "merge-base", "--is-ancestor", fix, commit], cwd=checkout, capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(r.returncode)


def predates(fix: Fix, commit: str | None, when: str | None) -> bool:
    known = _contains(commit.removesuffix("-dirty"), fix.commit) if commit and commit != "unknown" else None
    if known is not None:
        return not known
    return bool(when and when < fix.date)


def marks_for(
    fixes: Iterable[Fix], system: str | None, *, trained: bool, commit: str | None, when: str | None
) -> list[Fix]:
    return [f for f in fixes if system in f.systems and (trained or not f.trained_only) and predates(f, commit, when)]


def run_marks(fixes: list[Fix], results: Sequence[Mapping[str, Any]]) -> list[Fix]:
    """Fixes any seed of a run predates."""
    out: list[Fix] = []
    for r in results:
        for f in marks_for(
            fixes,
            r.get("system"),
            trained=r.get("config", {}).get("model") is not None,
            commit=r.get("provenance", {}).get("git_commit"),
            when=r.get("provenance", {}).get("finished_at"),
        ):
            if f not in out:
                out.append(f)
    return out


def label(name: str, fixes: list[Fix]) -> str:
    return name + ("" if not fixes else " " + "".join(f.mark for f in fixes))


def footnotes(fixes: Iterable[Fix]) -> str:
    """One line per fix used on a page ("" when none)."""
    seen = []
    for f in fixes:
        if f not in seen:
            seen.append(f)
    return "".join(f"\n{f.mark} Made with code older than {f.commit[:7]} ({f.date[:10]}): {f.what}\n" for f in seen)
