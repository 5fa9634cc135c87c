"""Multi-file outputs are written as one set: a crash, a failed write or kill -9 leaves the old set or the new one."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.foundation.output_set import (
    PREFIX,
    recover,
    staged_output,
    write_files_as_set,
    write_output_set,
)
from tests.conftest import ROOT
from tests.hostile import COMMITTED, DIES_BEFORE_KTH_CHANGE, hostile, snapshot


def _state(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_set_replaces_its_files_and_keeps_the_others(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    write_output_set(tmp_path, {"a.md": "old a", "plots/b.png": b"old b"})
    write_output_set(tmp_path, {"a.md": "new a", "plots/b.png": b"new b"})
    assert _state(tmp_path) == {"a.md": "new a", "plots/b.png": "new b", "keep.txt": "mine"}


@hostile("output sets", "clear error")
@pytest.mark.parametrize("fail_after", [0, 1, 2])
def test_an_error_while_building_leaves_the_old_set(tmp_path, fail_after):
    write_output_set(tmp_path, {"a.md": "old a", "b.md": "old b", "c.md": "old c"})
    with pytest.raises(HarnessError, match="No space left"), staged_output(tmp_path) as stage:
        for i, name in enumerate(["a.md", "b.md", "c.md"]):
            if i == fail_after:
                raise OSError(28, "No space left on device")
            stage.write(name, f"new {name}")
    assert _state(tmp_path) == {"a.md": "old a", "b.md": "old b", "c.md": "old c"}


@hostile("output sets", "clear error")
@pytest.mark.parametrize("rel", ["../x.md", "/etc/x.md", "a/../../x.md", f"{PREFIX}1.x/y", ""])
def test_a_file_outside_the_folder_is_refused(tmp_path, rel):
    with pytest.raises(HarnessError):
        write_output_set(tmp_path / "out", {rel: "x"})
    assert not (tmp_path / "x.md").exists()


@hostile("output sets", "clear error")
def test_target_is_a_file(tmp_path):
    (tmp_path / "out").write_text("a file")
    with pytest.raises(HarnessError, match="is a file"):
        write_output_set(tmp_path / "out", {"a.md": "x"})
    assert (tmp_path / "out").read_text() == "a file"


@hostile("output sets", "clear error")
def test_a_folder_where_the_set_has_a_file(tmp_path):
    write_output_set(tmp_path, {"a.md": "old"})
    (tmp_path / "b.md").mkdir()
    with pytest.raises(HarnessError, match="is a folder"):
        write_output_set(tmp_path, {"a.md": "new", "b.md": "new"})
    assert (tmp_path / "a.md").read_text() == "old"


def test_files_in_two_folders(tmp_path):
    write_files_as_set({tmp_path / "x" / "labels.json": "L", tmp_path / "y" / "out.jsonl": "O"})
    assert (tmp_path / "x" / "labels.json").read_text() == "L" and (tmp_path / "y" / "out.jsonl").read_text() == "O"
    assert not [p for p in tmp_path.rglob(f"{PREFIX}*")]


@hostile("kill -9 mid-write", "held")
def test_recover_rolls_a_committed_journal_forward(tmp_path):
    write_output_set(tmp_path, {"a.md": "old a", "b.md": "old b"})
    staging = tmp_path / f"{PREFIX}999999999.dead"
    staging.mkdir()
    (staging / "b.md").write_text("new b")  # a.md was already moved when the writer died
    (tmp_path / "a.md").write_text("new a")
    (tmp_path / f"{staging.name}.journal").write_text('{"files": ["a.md", "b.md"]}')
    recover(tmp_path)
    assert _state(tmp_path) == {"a.md": "new a", "b.md": "new b"}


@hostile("kill -9 mid-write", "held")
def test_recover_discards_an_uncommitted_staging_folder(tmp_path, caplog):
    write_output_set(tmp_path, {"a.md": "old a"})
    staging = tmp_path / f"{PREFIX}999999999.dead"
    staging.mkdir()
    (staging / "a.md").write_text("half")
    (tmp_path / f"{staging.name}.journal.tmp").write_text('{"files": [')  # killed while writing the journal
    recover(tmp_path)
    assert _state(tmp_path) == {"a.md": "old a"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(PREFIX)] and not caplog.records


def _hostile_set(folder: Path, files: list[str], name: str = f"{PREFIX}999999999.x") -> Path:
    """A staging folder of a dead writer with a committed journal naming `files`."""
    staging = folder / name
    staging.mkdir()
    (folder / f"{name}.journal").write_text(json.dumps({"files": files}), encoding="utf-8")
    return staging


@pytest.fixture
def demo_runs(tmp_path):
    for run in ("bm25", "char-ngram"):
        shutil.copytree(COMMITTED / "demo" / run, tmp_path / "runs" / "demo" / run)
    return tmp_path / "runs"


@hostile("output sets", "held")
@pytest.mark.parametrize("verb", ["leaderboard", "export"])
def test_a_reader_follows_no_journal_and_writes_nothing_in_the_runs(tmp_path, demo_runs, caplog, verb):
    victim = tmp_path / "victim" / "thesis.txt"
    victim.parent.mkdir()
    victim.write_text("years of work", encoding="utf-8")
    run_dir = demo_runs / "demo" / "bm25"
    _hostile_set(run_dir, ["../../../../victim/thesis.txt"])
    _hostile_set(run_dir, ["seed-0.json"], name=f"{PREFIX}999999998.y")  # a plain unfinished set: reported too
    before = snapshot(demo_runs)
    extra = ["--no-plots"] if verb == "leaderboard" else []
    assert main([verb, "--runs-dir", str(demo_runs), "--out", str(tmp_path / "out"), *extra]) == 0
    assert victim.read_text(encoding="utf-8") == "years of work"
    assert snapshot(demo_runs) == before and sorted(p.name for p in run_dir.iterdir() if p.name.startswith(PREFIX)) == [
        f"{PREFIX}999999998.y",
        f"{PREFIX}999999998.y.journal",
        f"{PREFIX}999999999.x",
        f"{PREFIX}999999999.x.journal",
    ]
    assert sum("interrupted write" in r.getMessage() for r in caplog.records) == 2


@hostile("output sets", "held")
@pytest.mark.parametrize(
    "case", ["dotdot", "absolute", "link in staging", "linked file", "link in target", "not a list"]
)
def test_the_writer_leaves_a_journal_it_cannot_trust_alone(tmp_path, case):
    target, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("mine", encoding="utf-8")
    write_output_set(target, {"a.md": "old a"})
    names = {
        "dotdot": ["../outside/secret.txt"],
        "absolute": [str(outside / "secret.txt")],
        "link in staging": ["sub/secret.txt"],
        "linked file": ["secret.txt"],
        "link in target": ["sub/a.md"],
        "not a list": "a.md",
    }[case]
    staging = _hostile_set(target, names)  # type: ignore[arg-type]
    if case == "link in staging":
        (staging / "sub").symlink_to(outside)
    if case == "linked file":
        (staging / "secret.txt").symlink_to(outside / "secret.txt")
    if case == "link in target":
        (target / "sub").symlink_to(outside)
        (staging / "sub").mkdir()
        (staging / "sub" / "a.md").write_text("planted", encoding="utf-8")
    recover(target)
    assert snapshot(outside) == {"secret.txt": b"mine"} and [p.name for p in outside.iterdir()] == ["secret.txt"]
    assert (target / "a.md").read_text(encoding="utf-8") == "old a"
    assert staging.exists()  # left alone, and reported


@hostile("output sets", "held")
def test_a_staging_entry_that_is_a_link_pulls_nothing_in(tmp_path):
    target, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    write_output_set(target, {"a.md": "old a"})
    elsewhere.mkdir()
    (elsewhere / "a.md").write_text("from elsewhere", encoding="utf-8")
    (target / f"{PREFIX}999999999.x").symlink_to(elsewhere)
    (target / f"{PREFIX}999999999.x.journal").write_text('{"files": ["a.md"]}', encoding="utf-8")
    write_output_set(target, {"b.md": "b"})
    assert (elsewhere / "a.md").read_text(encoding="utf-8") == "from elsewhere"
    assert (target / "a.md").read_text(encoding="utf-8") == "old a"


def test_a_writer_holds_the_folder_lock_until_its_set_is_in_place(tmp_path):
    import fcntl

    write_output_set(tmp_path, {"a.md": "old"})
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with staged_output(tmp_path) as stage:
            stage.write("a.md", "new")
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with the commit
    finally:
        os.close(fd)
    assert (tmp_path / "a.md").read_text() == "new"


WRITER = """
import sys, time
from harness.foundation.output_set import staged_output
n = int(sys.argv[2])
with staged_output(sys.argv[1]) as stage:
    for i in range(40):
        stage.write(f"f{i:02d}.txt", f"set {n}\\n" * 2000)
"""


@hostile("kill -9 mid-write", "held")
@pytest.mark.slow
def test_kill_9_leaves_one_whole_set(tmp_path):
    """kill -9 at random moments of a 40-file set: after recovery every file is of one set."""
    import random

    target = tmp_path / "out"
    subprocess.run(
        [sys.executable, "-c", WRITER, str(target), "0"],
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rng = random.Random(7)
    for n in range(1, 16):
        p = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(n)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        time.sleep(rng.uniform(0.05, 0.4))
        p.send_signal(signal.SIGKILL)
        p.wait()
        recover(target)
        sets = {text.split("\n")[0] for text in _state(target).values()}
        assert len(sets) == 1 and len(_state(target)) == 40, sets


@hostile("kill -9 mid-write", "held")
@pytest.mark.slow
def test_kill_9_during_run_leaves_results_that_verify(tmp_path):
    """A result and its rankings are one set: whatever moment `run` dies at, each seed left verifies."""
    import random

    from harness.runs.verified import verified_results
    from tests.hostile import committed_splits

    runs = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "bm25",
        "char-ngram",
        "--collection",
        "demo",
        "--overwrite",
        "--runs-dir",
        str(runs),
        "--splits-dir",
        str(committed_splits()),
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True)
    rng = random.Random(3)
    for _ in range(8):
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.0, 6.0))
        p.send_signal(signal.SIGKILL)
        p.wait()
        for run_dir in runs.glob("*/*"):
            recover(run_dir)  # as the next `run` into the folder does (readers only report a killed set)
        found = verified_results(runs, committed_splits())
        assert sum(len(v) for v in found.values()) == 8  # every seed of both runs, old or new, verifies


@hostile("output sets", "held")
def test_files_of_several_folders_are_staged_beside_each_never_in_a_common_parent(tmp_path):
    """topics --out /dev/shm/l.json --labelled-out /tmp/x/c.jsonl once staged in `/` and failed across devices."""
    from harness.foundation.output_set import write_files_as_set

    a, b = tmp_path / "one" / "l.json", tmp_path / "two" / "deep" / "c.jsonl"
    write_files_as_set({a: "labels", b: b"corpus"})
    assert a.read_text() == "labels" and b.read_bytes() == b"corpus"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["c.jsonl", "deep", "l.json", "one", "two"]


@hostile("output sets", "held")
def test_a_set_across_folders_that_fails_changes_nothing(tmp_path):
    from harness.errors import HarnessError
    from harness.foundation.output_set import write_files_as_set

    a = tmp_path / "one" / "l.json"
    a.parent.mkdir()
    a.write_text("old labels")
    blocked = tmp_path / "file"
    blocked.write_text("a file where a folder is needed")
    with pytest.raises(HarnessError, match="nothing was changed"):
        write_files_as_set({a: "new labels", blocked / "c.jsonl": "corpus"})
    assert a.read_text() == "old labels"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["file", "l.json", "one"]


# Rewrites seed 0 of a run folder with the result and rankings in the file argv[2] names, dying as
# DIES_BEFORE_KTH_CHANGE says.
PAIR_WRITER = (
    DIES_BEFORE_KTH_CHANGE
    + """
from harness.runs.results import write_result

spec = json.loads(Path(sys.argv[2]).read_text())
write_result(Path(spec["path"]), spec["result"], {q: [tuple(cs) for cs in r] for q, r in spec["rankings"].items()})
"""
)


def _better_seed_0(run_dir: Path) -> dict:
    """Seed 0 of the run again, with each of the first 20 queries' needle moved to the top: a result and
    rankings that verify and give other figures than the old pair."""
    from harness.evaluation.manifests import find_manifest, read_manifest
    from harness.evaluation.metrics import evaluate
    from harness.runs.results import RECOMPUTED, SEAL, read_rankings
    from tests.hostile import committed_splits, load

    path = run_dir / "seed-0.json"
    old = load(path)
    split = read_manifest(find_manifest([committed_splits()], "demo", 0), "demo")
    rankings = read_rankings(path)
    for q in sorted(rankings)[:20]:
        needle = sorted(split.needles[q])[0]
        rest = [cs for cs in rankings[q] if cs[0] != needle][: old["depth"] - 1]
        rankings[q] = [(needle, rest[0][1] + 1.0 if rest else 1.0), *rest]
    scores = evaluate(rankings, split.needles, split.query_genres)
    result = {k: v for k, v in old.items() if k not in ("rankings_sha256", SEAL)}
    result |= {k: scores[k] for k in (*RECOMPUTED, "ci95")}
    assert result["metrics"] != old["metrics"]
    return {"path": str(path), "result": result, "rankings": rankings}


@hostile("kill -9 mid-write", "held")
def test_a_reader_of_a_run_folder_killed_mid_pair_sees_the_old_pair_or_the_new_one(tmp_path, caplog, monkeypatch):
    """A writer of seed 0's result and rankings dies before each file-system step in turn (after the
    commit that can leave the new result beside the old rankings): leaderboard and both exports exit 0
    with the old figures or the new ones, never a mix, say so in one line, and change nothing."""
    from harness.foundation import output_set

    runs = tmp_path / "runs"
    shutil.copytree(COMMITTED / "demo" / "bm25", runs / "demo" / "bm25")
    run_dir = runs / "demo" / "bm25"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_better_seed_0(run_dir)))
    shutil.copytree(runs, tmp_path / "pristine")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    verbs = {
        "leaderboard": ["--no-plots"],
        "export": ["--format", "csv"],
        "trec": ["--format", "trec"],
    }

    def read_all() -> dict[str, dict[str, bytes]]:
        """What each reader gives: its output files, written afresh."""
        out = {}
        for verb, extra in verbs.items():
            folder = tmp_path / "out" / verb
            shutil.rmtree(folder, ignore_errors=True)
            monkeypatch.setattr(output_set, "_reported", set())  # each command is a process of its own
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                rc = main(
                    ["leaderboard" if verb == "leaderboard" else "export", "--runs-dir", str(runs)]
                    + ["--out", str(folder), *extra]
                )
            assert rc == 0, (verb, caplog.text)
            said = [r.getMessage() for r in caplog.records if "interrupted write" in r.getMessage()]
            assert len(said) == (1 if unfinished else 0), (verb, said)
            out[verb] = snapshot(folder)
        return out

    unfinished = False
    old = read_all()
    proc = subprocess.run([sys.executable, "-c", PAIR_WRITER, "-1", str(spec)], cwd=ROOT, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    new = read_all()
    assert old != new
    new_pair = {n: (run_dir / n).read_bytes() for n in ("seed-0.json", "seed-0.rankings.jsonl.gz")}

    seen = []
    for k in range(50):  # until the writer gets through: it was killed at every step before
        shutil.rmtree(runs)
        shutil.copytree(tmp_path / "pristine", runs)
        proc = subprocess.run(
            [sys.executable, "-c", PAIR_WRITER, str(k), str(spec)], cwd=ROOT, env=env, capture_output=True
        )
        assert proc.returncode in (0, 9), (k, proc.stderr)
        unfinished = bool(list(run_dir.glob(f"{PREFIX}*")))
        before = snapshot(runs)
        now = read_all()
        outcome = "old" if now == old else "new" if now == new else "a mix"
        assert outcome != "a mix", (k, {v: now[v] == old[v] or now[v] == new[v] for v in now})
        assert snapshot(runs) == before, k  # the readers wrote nothing
        recover(run_dir)  # what the next `run` there does: what stands is what the readers read
        pair = {n: (run_dir / n).read_bytes() for n in new_pair}
        stands = "new" if pair == new_pair else "old"
        assert stands == outcome, (k, f"the readers read the {outcome} pair; the {stands} one stands")
        seen.append((outcome, unfinished))
        if proc.returncode == 0:
            break
    assert proc.returncode == 0 and ("new", True) in seen and ("old", True) in seen, seen
