"""Fixtures of the experiment tests."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

SMOKE = ROOT / "experiments" / "smoke.toml"


@pytest.fixture
def smoke_curated(tmp_path, monkeypatch, capsys):
    """The smoke experiment's training data curated, in a home and runs folder of this test's own."""
    from harness.cli import main

    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AA_HARNESS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["reproduce", str(SMOKE), "--only", "curate.demo-train", "--no-progress"]) == 0
    capsys.readouterr()
