"""The CLI's listings and help: systems NAME, collections, export, help on every option."""

from __future__ import annotations

import argparse
import csv
import json

import pytest

from harness.cli import build_parser, main
from harness.runs.results import read_result
from tests.conftest import ROOT


def test_systems_name_lists_config_keys_with_type_default_and_help(capsys):
    assert main(["systems", "sbert"]) == 0
    out = capsys.readouterr().out
    assert "| model " in out and "sentence-transformers/all-mpnet-base-v2" in out and "hub id or local folder" in out
    assert "| cache " in out and "bool" in out and "each distinct text encoded once" in out
    assert "can: encode" in out and "aa-harness" in out


def test_collections_says_whether_data_was_found_and_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AA_HARNESS_CORPORA", str(tmp_path / "nowhere"))
    monkeypatch.delenv("AA_HARNESS_HRS_DIR", raising=False)
    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines()[2:] if line.startswith("|")}
    assert "| yes " in rows["demo"] and "built in" in rows["demo"]
    assert "| NO " in rows["pan19-en"] and "nowhere" in rows["pan19-en"]
    assert "| NO " in rows["hrs1"] and "not given" in rows["hrs1"]
    # how to point at missing data: once each, below the table
    assert out.count("AA_HARNESS_HRS_DIR") == 1 and out.count("AA_HARNESS_CORPORA") == 1
    # it was once about 330 characters wide: now the folder's path and about 70 characters
    assert max(len(line) for line in out.splitlines()) <= 70 + len(str(tmp_path / "nowhere"))


def test_collections_name_describes_one(capsys):
    assert main(["collections", "demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("demo: SYNTHETIC") and "data found: yes" in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert main(["collections", "redit"]) == 2
    assert "did you mean 'reddit-xsub'" in capsys.readouterr().err


def test_collections_finds_the_public_corpora(corpora, capsys):
    assert main(["collections", "--data-dir", str(corpora)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| pan19-en"))
    assert "| yes " in line and str(corpora) in line


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_writes_tables_and_per_query_ranks(tmp_path, fmt):
    runs = ROOT / "leaderboards" / "runs"
    record = ROOT / "leaderboards" / "record.toml"
    assert main(["export", "--record", str(record), "--out", str(tmp_path), "--format", fmt]) == 0
    files = {p.name for p in tmp_path.iterdir()}
    assert files == {f"leaderboard.{fmt}", f"per-seed.{fmt}", f"per-query.{fmt}"}
    if fmt == "csv":
        board = list(csv.DictReader((tmp_path / "leaderboard.csv").open()))
        per_query = list(csv.DictReader((tmp_path / "per-query.csv").open()))
    else:
        board = json.loads((tmp_path / "leaderboard.json").read_text())
        per_query = json.loads((tmp_path / "per-query.json").read_text())
    bm25 = next(r for r in board if r["collection"] == "demo" and r["run"] == "bm25")
    committed = read_result(runs / "demo" / "bm25" / "seed-0.json")
    assert abs(float(bm25["success@8 ci95 low"]) - 0) >= 0 and int(bm25["n_seeds"]) == 4
    demo_q = [r for r in per_query if r["collection"] == "demo" and r["run"] == "bm25" and int(r["seed"]) == 0]
    assert len(demo_q) == committed["n_queries"]


def _actions(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), action


def test_every_option_has_help():
    missing = [
        f"{cmd} {'/'.join(a.option_strings) or a.dest}"
        for cmd, a in _actions(build_parser())
        if not a.help or a.help == argparse.SUPPRESS
    ]
    assert not missing, missing


def test_run_name_help_names_the_runs_dir():
    run = next(a for cmd, a in _actions(build_parser()) if cmd == "run" and a.dest == "name")
    assert "<runs-dir>/<collection>/<name>/" in run.help
