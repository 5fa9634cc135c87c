"""One output set across several folders (`topics --out A --labelled-out B`, pages beside a site):
a kill between the folders' renames leaves, once the owning command recovers, every folder of the
set old or every folder new; a reader meeting the unfinished set says so in one line, reads the
last complete state and writes nothing."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.foundation.output_set import PREFIX, recover, report_unfinished, settled
from tests.conftest import ROOT
from tests.hostile import COMMITTED, DIES_BEFORE_KTH_CHANGE, hostile, snapshot

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

# Writes the set `spec` (argv[2]) names, dying as DIES_BEFORE_KTH_CHANGE says. spec: {"files":
# {path: text}} for the writer `topics` uses, or {"sets": {folder: {name: text}}, "replace":
# {folder: [subfolder]}}.
KILL_AT = (
    DIES_BEFORE_KTH_CHANGE
    + """
from harness.foundation import output_set

spec = json.loads(sys.argv[2])
if "files" in spec:
    output_set.write_files_as_set({Path(p): t for p, t in spec["files"].items()})
else:
    output_set.write_sets({Path(f): s for f, s in spec["sets"].items()}, replace_folders={Path(f): r for f, r in spec["replace"].items()})
"""
)


def _spec(writer: str, root: Path, n: int) -> dict:
    """Set `n` across three folders; "sets" adds subfolders and a folder replaced whole, whose stale
    file (written only by set 0) the new set removes."""
    text = f"set {n}"
    if writer == "files":
        return {"files": {str(root / d / f"{d[0]}{i}.txt"): text for d in ("a", "b", "c/deep") for i in (1, 2)}}
    a = {"a1.txt": text, "sub/a2.txt": text, **({"sub/gone.txt": text} if n == 0 else {})}
    sets = {root / "a": a, root / "b": {"b1.txt": text, "b2/b3.txt": text}, root / "c/deep": {"c1.txt": text}}
    return {"sets": {str(f): s for f, s in sets.items()}, "replace": {str(root / "a"): ["sub"]}}


def _write(spec: dict, kill_at: int = -1) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", KILL_AT, str(kill_at), json.dumps(spec)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
    )


def _folders(root: Path) -> list[Path]:
    return [root / "a", root / "b", root / "c" / "deep"]


def _set_files(folder: Path) -> dict[str, str]:
    """The files of the set in `folder` (not the user's own file, not staging entries)."""
    return {
        p.relative_to(folder).as_posix(): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "mine.txt" and not p.relative_to(folder).parts[0].startswith(PREFIX)
    }


def _which_set(root: Path, expected: dict[str, dict[Path, dict[str, str]]]) -> str:
    """'old' or 'new' when every folder holds exactly that set; else the mix, for the failure message."""
    now = {f: _set_files(f) for f in _folders(root)}
    for name, want in expected.items():
        if now == want:
            return name
    return f"a mix: {now}"


def _reader_view(root: Path, expected: dict[str, dict[Path, dict[str, str]]]) -> dict[Path, dict[str, str]]:
    """What a reader reads through `settled`: every file either set names, where it lies now."""
    view: dict[Path, dict[str, str]] = {}
    for f in _folders(root):
        names = sorted({rel for state in expected.values() for rel in state[f]})
        places = {rel: settled(f, rel) for rel in names}
        view[f] = {rel: p.read_text() for rel, p in places.items() if p is not None and p.is_file()}
    return view


def _setup(tmp_path: Path, writer: str) -> tuple[Path, dict[str, dict[Path, dict[str, str]]]]:
    root = tmp_path / "root"
    assert _write(_spec(writer, root, 0)).returncode == 0
    (root / "a" / "mine.txt").write_text("the user's own file")
    (root / "outside").mkdir()
    (root / "outside" / "notes.txt").write_text("not part of any set")
    old = {f: _set_files(f) for f in _folders(root)}
    assert _write(_spec(writer, tmp_path / "ref", 1)).returncode == 0  # the new set, written whole elsewhere
    new = {f: _set_files(tmp_path / "ref" / f.relative_to(root)) for f in _folders(root)}
    return root, {"old": old, "new": new}


@hostile("kill -9 mid-write", "held")
@pytest.mark.parametrize("writer", ["files", "sets"])
def test_a_kill_at_every_step_leaves_every_folder_old_or_every_folder_new(tmp_path, caplog, writer):
    """Dies before each file-system change of a three-folder set in turn; a reader then reads one
    whole set and changes nothing, and recovery run from any one folder finishes or discards the
    set in all three."""
    root, expected = _setup(tmp_path, writer)
    outcomes = []
    for k in range(200):  # until the writer gets through: it was killed at every step before
        proc = _write(_spec(writer, root, 1), kill_at=k)
        assert proc.returncode in (0, 9), (k, proc.stderr)
        before = snapshot(root)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="harness.foundation.output_set"):
            unfinished = [e for f in _folders(root) for e in report_unfinished(f)]
        lines = [r.getMessage() for r in caplog.records if "interrupted write" in r.getMessage()]
        assert len(lines) == (1 if unfinished else 0), (k, lines)  # one line for the whole set
        view = _reader_view(root, expected)
        assert view in (expected["old"], expected["new"]), (k, view)
        assert snapshot(root) == before, k  # the reader wrote nothing
        recover(_folders(root)[k % 3])  # the next owning command may own any one of the folders
        outcome = _which_set(root, expected)
        assert outcome in ("old", "new"), (k, outcome)
        assert outcome == ("old" if view == expected["old"] else "new"), k  # what the reader read is what stands
        for f in _folders(root):  # debris a folder's own owner clears (a pointer killed mid-write)
            recover(f)
        assert _which_set(root, expected) == outcome, k
        assert not [p for p in root.rglob(f"{PREFIX}*")], (k, list(root.rglob(f"{PREFIX}*")))
        assert (root / "a" / "mine.txt").read_text() == "the user's own file"
        assert snapshot(root / "outside") == {"notes.txt": b"not part of any set"}
        assert sorted(p.name for p in root.iterdir()) == ["a", "b", "c", "outside"]
        outcomes.append(outcome)
        if proc.returncode == 0:
            break
        if outcome == "new":  # back to the old set for the next kill
            for f in _folders(root):
                for rel in _set_files(f):
                    (f / rel).unlink()
                for rel, text in expected["old"][f].items():
                    (f / rel).parent.mkdir(parents=True, exist_ok=True)
                    (f / rel).write_text(text)
    assert proc.returncode == 0 and len(outcomes) > 8, outcomes  # every rename into place was a kill point
    assert "old" in outcomes and "new" in outcomes, outcomes  # kills landed before and after the commit


LOOP = """
import sys
from pathlib import Path
from harness.foundation.output_set import write_files_as_set
root = Path(sys.argv[1])
n = int(sys.argv[2])
while True:
    n += 1
    write_files_as_set({root / d / f"f{i}.txt": f"{n}\\n" + "x" * 4000 for d in ("a", "b", "c/deep") for i in range(8)})
"""


@hostile("kill -9 mid-write", "held")
def test_kill_9_at_random_moments_leaves_one_whole_set_across_the_folders(tmp_path):
    """SIGKILL a process rewriting a three-folder set in a loop, 40 times at random moments after its
    first whole set; after the owning command's recovery (from any one folder) all 24 files are of
    one set."""
    root = tmp_path / "root"
    (root / "outside").mkdir(parents=True)
    (root / "outside" / "notes.txt").write_text("not part of any set")
    first = root / "c" / "deep" / "f7.txt"  # the last file of a set to be moved in
    rng = random.Random(11)
    n, committed, unfinished = 0, 0, 0
    for _ in range(40):
        p = subprocess.Popen([sys.executable, "-c", LOOP, str(root), str(n)], cwd=ROOT, env=ENV)
        for _wait in range(6000):  # until it has written a set (no timing compared: a bound against a hang)
            if first.is_file() and int(first.read_text().split("\n")[0] or 0) > n:
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = [e for f in _folders(root) for e in f.glob(f"{PREFIX}*")]
        unfinished += bool(left)
        committed += any(e.name.endswith(".journal") for e in left)
        recover(_folders(root)[rng.randrange(3)])
        texts = [t.split("\n")[0] for f in _folders(root) for t in _set_files(f).values()]
        assert len(set(texts)) == 1 and len(texts) == 24, sorted(set(texts))
        for f in _folders(root):
            recover(f)
        assert not [p for p in root.rglob(f"{PREFIX}*")]
        assert snapshot(root / "outside") == {"notes.txt": b"not part of any set"}
        n = int(texts[0])  # the next process goes on from the set that stands
    assert unfinished > 0, "no kill landed inside a write"


@hostile("output sets", "held")
def test_a_reader_meeting_a_set_across_run_folders_says_it_once_and_writes_nothing(tmp_path, caplog):
    """A set killed between its two folders' renames: `leaderboard` reads both folders, logs the
    unfinished set in one line, exits 0 and changes nothing in the runs."""
    runs = tmp_path / "runs"
    for run in ("bm25", "char-ngram"):
        shutil.copytree(COMMITTED / "demo" / run, runs / "demo" / run)
    folders = [runs / "demo" / "bm25", runs / "demo" / "char-ngram"]
    # steps: the pointer, the journal (the commit), then the first folder's rename: killed before the second
    proc = _write({"files": {str(f / "notes.txt"): "new" for f in folders}}, kill_at=3)
    assert proc.returncode == 9, proc.stderr
    assert [(f / "notes.txt").exists() for f in folders] == [True, False]  # one folder moved, one not
    before = snapshot(runs)
    with caplog.at_level(logging.WARNING):
        assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    lines = [r.getMessage() for r in caplog.records if "interrupted write" in r.getMessage()]
    assert len(lines) == 1 and "one set across" in lines[0], lines
    assert snapshot(runs) == before
    assert [settled(f, "notes.txt").read_text() for f in folders] == ["new", "new"]  # type: ignore[union-attr]


def _leaderboard_killed_at(args: list[str], kill_at: int, under: Path) -> int:
    """Run `aa-harness leaderboard` in a forked child (no interpreter start per kill) that dies, as kill -9
    does, before its kill_at-th file-system change under `under`; returns its exit status (9: killed)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 70
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            logging.disable(logging.CRITICAL)
            calls = 0

            def dies_at_k(fn):
                def wrapped(*a, **kw):
                    nonlocal calls
                    if any(str(x).startswith(str(under)) for x in a):
                        if calls == kill_at:
                            os._exit(9)
                        calls += 1
                    return fn(*a, **kw)

                return wrapped

            for name in ("replace", "rename", "unlink", "rmdir"):
                setattr(os, name, dies_at_k(getattr(os, name)))
            code = main(args)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@hostile("kill -9 mid-write", "held")
def test_a_kill_at_every_step_of_leaderboard_leaves_pages_and_site_both_old_or_both_new(tmp_path):
    """`leaderboard --out PAGES --html SITE` after a run is removed: killed before each rename, removal
    and journal step in turn, then recovered from either folder, the pages and the site are both the
    old build or both the new one; the page the new build retires (reported.md) goes only with the
    new set, and the site's CNAME and .git stay."""
    for runs, names in (("old", ["bm25", "char-ngram"]), ("new", ["bm25"])):
        for name in names:
            shutil.copytree(COMMITTED / "demo" / name, tmp_path / runs / "demo" / name)
    out = tmp_path / "out"
    pages, site = out / "pages", out / "site"

    def args(runs: str) -> list[str]:
        extra = ["--reported"] if runs == "old" else []  # the old build has a page the new one retires
        return [
            "leaderboard",
            "--runs-dir",
            str(tmp_path / runs),
            "--out",
            str(pages),
            "--html",
            str(site),
            "--no-plots",
        ] + extra

    def state() -> dict[str, dict[str, bytes]]:
        return {f.name: {k: v for k, v in snapshot(f).items() if not k.startswith(PREFIX)} for f in (pages, site)}

    def which() -> str:
        """'old' or 'new' when both folders hold that build; else which build each folder holds."""
        now = state()
        for name, want in (("old", old), ("new", new)):
            if now == want:
                return name
        each = {f: [n for n, w in (("old", old), ("new", new)) if now[f] == w[f]] or "neither" for f in now}
        return f"a mix: {each}"

    assert main(args("old")) == 0
    (site / "CNAME").write_text("leaderboard.example.org\n")
    (site / ".git").mkdir()
    (site / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n")
    shutil.copytree(out, tmp_path / "pristine")
    old = state()
    assert main(args("new")) == 0
    new = state()
    assert "reported.md" in old["pages"] and "reported.md" not in new["pages"]
    assert len(old["site"]) > len(new["site"])  # the removed run's page goes too
    shutil.rmtree(out)
    shutil.copytree(tmp_path / "pristine", out)

    outcomes = []
    for k in range(200):  # until the writer gets through: it was killed at every step before
        code = _leaderboard_killed_at(args("new"), k, out)
        assert code in (0, 9), (k, code)
        recover([pages, site][k % 2])  # what the next leaderboard does first, from either folder
        outcome = which()
        assert outcome in ("old", "new"), (k, outcome)
        assert (pages / "reported.md").is_file() == (outcome == "old"), k  # retired only with the new set
        assert (site / "CNAME").is_file() and (site / ".git" / "HEAD").is_file(), k
        for f in (pages, site):  # the other folder's own recovery finds nothing left to finish
            recover(f)
        assert which() == outcome, (k, outcome, which())
        assert not list(out.rglob(f"{PREFIX}*")), (k, list(out.rglob(f"{PREFIX}*")))
        outcomes.append(outcome)
        if code == 0:
            break
        shutil.rmtree(out)
        shutil.copytree(tmp_path / "pristine", out)
    assert code == 0 and len(outcomes) > 8, outcomes  # every step was a kill point
    assert "old" in outcomes and "new" in outcomes, outcomes  # kills landed before and after the commit
