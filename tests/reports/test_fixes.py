"""Runs made with code older than a result-changing fix are marked on the report pages."""

import shutil
import subprocess

import pytest

from harness.reports.fixes import Fix, footnotes, run_marks
from tests.conftest import ROOT

FIX = Fix(
    commit="da837aa214a9c32ab6ecaaa2f045f7ed112c8127",
    date="2026-11-26T03:56:55+00:00",
    systems=("sadiri-v2-retriever",),
    what="seeded.",
    trained_only=True,
)


def _run(system="sadiri-v2-retriever", model="m", commit="unknown", when="2026-11-26T01:44:08+00:00"):
    return {"system": system, "config": {"model": model}, "provenance": {"git_commit": commit, "finished_at": when}}


def test_marks_by_time_when_git_cannot_tell():
    assert run_marks([FIX], [_run()]) == [FIX]
    assert run_marks([FIX], [_run(when="2026-11-26T05:00:00+00:00")]) == []
    assert run_marks([FIX], [_run(model=None)]) == []  # untrained: no fresh weights to seed
    assert run_marks([FIX], [_run(system="sadiri")]) == []
    assert footnotes([FIX, FIX]).count("†") == 1


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs the git history")
def test_marks_by_history_when_git_knows_the_commits():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    early = "ca63d7f040631633f50f5fd74addd559542fa3d5"  # before the fix, whatever the time says
    assert run_marks([FIX], [_run(commit=early, when="2030-01-01")]) == [FIX]
    assert run_marks([FIX], [_run(commit=head + "-dirty", when="2000-01-01")]) == []
