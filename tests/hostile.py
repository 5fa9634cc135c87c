"""Helpers shared by the hostile-case test files (results, manifests, plugins, outputs, errors).

Each hostile case carries `@pytest.mark.hostile(subject, verdict)`; tests/hostile_table.py runs
them and counts them by subject and verdict. Verdicts:
- "clear error": exit 2 (or a HarnessError), one `aa-harness: error:` line, no traceback, nothing written;
- "held": the command does the right thing anyway (the attack has no effect on what is shown).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "leaderboards" / "runs"


# The start of a child script that dies (os._exit, as kill -9: no cleanup runs) just before its
# k-th call that changes the file system, k from argv[1] (k < 0: never). What follows it writes.
DIES_BEFORE_KTH_CHANGE = """
import json, os, sys
from pathlib import Path

k = int(sys.argv[1])
calls = 0

def dies_at_k(fn):
    def wrapped(*a, **kw):
        global calls
        if calls == k:
            os._exit(9)
        calls += 1
        return fn(*a, **kw)
    return wrapped

for name in ("replace", "rename", "unlink", "rmdir"):
    setattr(os, name, dies_at_k(getattr(os, name)))
"""


def committed_splits() -> Path:
    """The harness's own manifests."""
    return ROOT / "splits"


def hostile(subject: str, verdict: str):
    return pytest.mark.hostile(subject=subject, verdict=verdict)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str) -> str:
    """The error line, after checking exit 2, no traceback and exactly one error line."""
    assert rc == 2, f"exit {rc}: {err}"
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("aa-harness: error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], err
    assert "\n" not in errors[0]
    return errors[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def save(path: Path, obj: dict, *, reseal: bool = False) -> None:
    if reseal:
        from harness.runs.results import SEAL, seal

        obj = {**obj, SEAL: seal(obj)} if SEAL in obj else obj
    Path(path).write_text(json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def read_rankings_lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_rankings_lines(path: Path, rows: list[dict]) -> None:
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as zf:
        for r in rows:
            zf.write((json.dumps(r) + "\n").encode("utf-8"))
    Path(path).write_bytes(buf.getvalue())


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
