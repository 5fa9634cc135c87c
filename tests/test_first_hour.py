"""Issue 12, "a researcher's first hour": one or more tests per point of the issue."""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harness.cli import build_parser, main
from harness.data.documents import Document
from harness.plugins import load_registry, plugin_manager
from harness.runs.results import read_result
from harness.runs.run_job import RunJob, run_job
from tests.conftest import RECORD, ROOT, doc, write_jsonl

EXAMPLE_SRC = ROOT / "examples" / "aa-harness-example" / "src"


# 1. Offline-aware model loading -----------------------------------------------------------

@pytest.fixture
def no_models(tmp_path, monkeypatch):
    """No local copy anywhere and no hub: an empty model dir, an empty HF cache, a dead endpoint."""

    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_missing_model_fails_fast_in_one_line_naming_where_and_how(no_models):
    from harness.errors import HarnessError
    from harness.neural.models import ModelNotFoundError, resolve_model

    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("sentence-transformers/all-mpnet-base-v2")
    msg = str(e.value)
    assert isinstance(e.value, HarnessError) and "\n" not in msg
    assert "all-mpnet-base-v2" in msg and str(no_models / "models") in msg
    assert "huggingface-cli download sentence-transformers/all-mpnet-base-v2" in msg and "AA_HARNESS_MODEL_DIR" in msg
    assert "shared" not in msg and "fetch_pretrained" not in msg  # no development-only advice


def test_hub_probe_is_bounded(no_models, monkeypatch):
    from harness.neural.models import hub_reachable

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://10.255.255.1")  # unroutable: the connection hangs
    start = time.perf_counter()
    assert not hub_reachable("org/model", timeout=0.5)
    assert time.perf_counter() - start < 5


def test_model_lookup_order(no_models, monkeypatch):
    import harness.neural.models as models
    from harness.neural.models import resolve_model

    cached = no_models / "cache" / "models" / "m"
    cached.mkdir(parents=True)
    assert resolve_model("org/m") == str(cached)  # <cache>/models
    env = no_models / "models" / "m"
    env.mkdir(parents=True)
    assert resolve_model("org/m") == str(env)  # $AA_HARNESS_MODEL_DIR first
    snap = no_models / "hf" / "hub" / "models--org--n" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    assert resolve_model("org/n") == str(snap)  # then the HF cache
    monkeypatch.setattr(models, "hub_reachable", lambda ref, timeout=None: True)
    assert resolve_model("org/other") == "org/other"  # the hub last, when it answers


def test_cli_run_without_a_model_copy_is_one_line(no_models, tmp_path, capsys):
    code = main(["run", "sbert", "--collection", "demo", "--seeds", "0", "--runs-dir", str(tmp_path / "runs"),
                 "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "huggingface-cli download" in err[0]


# 2. CPU awareness: an estimate and one bar per phase -----------------------------------------

class SlowEncoder:
    """Encodes by length, slowly."""

    def __init__(self, config=None):
        pass

    def encode(self, documents):
        time.sleep(0.002 * len(documents))
        return np.array([[len(d.fullText), 1.0] for d in documents], dtype=np.float32)

    def device_name(self):
        return "cpu: test"


def test_slow_encoding_is_estimated_and_warned_with_advice(monkeypatch, capsys):
    from harness import progress
    from harness.protocols import DenseRanker

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.05")
    docs = [Document(f"d{i}", ("a",), "x" * i, "g") for i in range(60)]
    with progress.enabled(False), progress.seed_scope(len(docs), what="slow") as timings:
        DenseRanker(SlowEncoder()).rank(docs[:5], docs[5:], 10)
    err = capsys.readouterr().err
    assert err.count("warning: encoding 60 documents with slow on cpu: test will take about") == 1
    assert "GPU" in err and "smaller model" in err
    assert list(timings) == ["encode candidates", "encode queries", "search"]


def test_a_slow_first_chunk_alone_does_not_warn(monkeypatch, capsys):
    """One-time costs (CUDA start, compilation, dequantization) land in the first chunk: no warning from it."""
    from harness import progress

    class WarmUpThenFast(SlowEncoder):
        calls = 0

        def encode(self, documents):
            self.calls += 1
            if self.calls == 1:
                time.sleep(0.2)
            return np.ones((len(documents), 2), dtype=np.float32)

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.5")
    docs = [Document(f"d{i}", ("a",), "x", "g") for i in range(200)]
    with progress.enabled(False), progress.seed_scope(len(docs), what="warm"):
        progress.encode_with_progress(WarmUpThenFast().encode, docs, "encode candidates")
    assert "warning" not in capsys.readouterr().err


def test_cached_first_documents_do_not_hide_a_slow_model(monkeypatch, capsys):
    """The first documents come from an embedding cache (instant); the rest are slow: still warned."""
    from harness import progress

    class CachedThenSlow(SlowEncoder):
        seen = 0

        def encode(self, documents):
            self.seen += len(documents)
            if self.seen > 8:
                time.sleep(0.003 * len(documents))
            return np.ones((len(documents), 2), dtype=np.float32)

    monkeypatch.setenv("AA_HARNESS_WARN_SECONDS", "0.1")
    docs = [Document(f"d{i}", ("a",), "x", "g") for i in range(200)]
    with progress.enabled(False), progress.seed_scope(len(docs)):
        progress.encode_with_progress(CachedThenSlow().encode, docs, "encode candidates")
    assert capsys.readouterr().err.count("warning: encoding 200 documents") == 1


def test_a_run_shows_one_phase_after_another(tmp_path, small_collection_file, capsys):
    from harness.runs.runner import run_split

    reg = load_registry()
    from harness.evaluation.splits import build_split
    from harness.runs.run_job import open_collection

    collection = open_collection(reg, str(small_collection_file))
    split = build_split(collection, 0)
    out = run_split(system_name="slow", system=SlowEncoder(), config={}, collection=collection, split=split,
                    runs_dir=tmp_path)
    assert list(out.phases) == ["encode candidates", "encode queries", "search", "score"]
    bars = capsys.readouterr().err
    assert "encode candidates" in bars and "score" in bars
    # a system that ranks by itself: one "rank" phase
    out = run_split(system_name="bm25", system=load_bm25(), config={}, collection=collection, split=split,
                    runs_dir=tmp_path)
    assert list(out.phases) == ["rank", "score"]


def load_bm25():
    from plugins.bm25.config import BM25Config
    from plugins.bm25.system import BM25System

    return BM25System(BM25Config())


def test_no_library_bar_nests_under_the_harness_bars():
    source = (ROOT / "plugins" / "sbert" / "system.py").read_text()
    assert "show_progress_bar=False" in source
    run_job_source = (ROOT / "harness" / "runs" / "run_job.py").read_text()
    assert "tqdm(" not in run_job_source  # no seed bar for the phase bars to nest under


# 3. Fast default tests -------------------------------------------------------------------------

def test_default_test_command_leaves_out_slow_tests_and_ci_runs_them():
    import re

    addopts = re.search(r'^addopts = (.*)$', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert "not slow" in addopts and "not gpu" in addopts
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python -m pytest -m "not gpu"' in ci
    readme = (ROOT / "README.md").read_text()
    assert "&& python -m pytest\n" in readme and 'python -m pytest -m "not gpu"' in readme


# 4. The plugin guide, the example plugin, provenance --------------------------------------------

def test_plugin_guide_covers_every_hook_and_spec_field():
    import dataclasses

    from harness import hookspecs
    from harness.specs import CollectionSpec, SystemSpec

    guide = (ROOT / "docs" / "plugins.md").read_text()
    import inspect

    for name in (n for n in dir(hookspecs) if n.startswith("register_")):
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"`{name}({params})`" in guide, f"docs/plugins.md does not explain the hook {name}"
    for spec in (SystemSpec, CollectionSpec):
        for f in dataclasses.fields(spec):
            assert f"`{f.name}`" in guide, f"docs/plugins.md does not explain {spec.__name__}.{f.name}"
    for word in ("capabilities", "`encode`", "`rank`", "`rerank`", "trainer", "Collection", "--set", "provenance"):
        assert word in guide


@pytest.fixture
def example_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    import aa_example.plugin

    yield aa_example.plugin
    for name in [m for m in sys.modules if m.startswith("aa_example")]:
        sys.modules.pop(name)


def test_example_plugin_runs_end_to_end(example_plugin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reg = load_registry(plugin_manager(entrypoints=False, extra=(example_plugin,)))
    assert reg.systems["function-words"].capabilities == ("encode",)
    out = run_job(reg, RunJob(systems=["function-words"], collection="example-letters", seeds=[0, 1001],
                              runs_dir=tmp_path / "runs", progress=False, overrides={"smoothing": "1"}),
                  log=lambda *_: None)
    res = read_result(out[0].path)
    assert res["config"]["smoothing"] == 1.0 and res["metrics"]["success@100"] > 0
    assert res["provenance"]["plugin"]["name"] == example_plugin.__name__
    assert (tmp_path / "runs-splits" / "example-letters" / "seed-0.json").is_file()  # not the harness's splits/
    assert not (RECORD / "example-letters").exists()


def test_provenance_records_the_plugin_distribution_and_version(tmp_path, monkeypatch, small_collection_file):
    site = tmp_path / "site"
    (site / "aa_len_plugin-0.3.dist-info").mkdir(parents=True)
    (site / "aa_len_plugin.py").write_text(
        "from harness.hookspecs import hookimpl\nfrom harness.specs import SystemSpec\n"
        "@hookimpl\ndef register_systems(register):\n"
        "    register(SystemSpec('len2', 'plugins.bm25.system:BM25System', 'plugins.bm25.config:BM25Config'))\n")
    (site / "aa_len_plugin-0.3.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: aa-len-plugin\nVersion: 0.3\n")
    (site / "aa_len_plugin-0.3.dist-info" / "entry_points.txt").write_text("[aa_harness]\nlen2 = aa_len_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    try:
        reg = load_registry(plugin_manager())
        out = run_job(reg, RunJob(systems=["len2"], collection=str(small_collection_file), seeds=[0],
                                  runs_dir=tmp_path / "runs", progress=False), log=lambda *_: None)
        plugin = read_result(out[0].path)["provenance"]["plugin"]
        assert plugin["distribution"] == "aa-len-plugin" and plugin["version"] == "0.3"
        builtin = run_job(reg, RunJob(systems=["bm25"], collection=str(small_collection_file), seeds=[0],
                                      runs_dir=tmp_path / "runs", progress=False), log=lambda *_: None)
        assert read_result(builtin[0].path)["provenance"]["plugin"]["distribution"] == "aa-harness"
    finally:
        sys.modules.pop("aa_len_plugin", None)


# 5. Path collections: named, manifests beside the runs, collisions explained ---------------------

def _tiny(path: Path, texts_suffix: str) -> Path:
    recs = [doc(1, "a", "g1"), doc(2, "a", "g2"), doc(3, "b", "g1"), doc(4, "b", "g2"), doc(5, "c", "g1")]
    for r in recs:
        r["fullText"] += texts_suffix
    return write_jsonl(path, recs)


def test_path_collections_are_named_and_keep_their_manifests_apart(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first, second = _tiny(tmp_path / "a" / "tiny.jsonl", " one"), _tiny(tmp_path / "b" / "tiny.jsonl", " two")
    runs = tmp_path / "my-runs"
    common = ["--seeds", "0", "--runs-dir", str(runs), "--no-progress"]
    assert main(["run", "bm25", "--collection", str(first), *common]) == 0
    assert (tmp_path / "my-runs-splits" / "tiny" / "seed-0.json").is_file()
    assert not (tmp_path / "splits").exists() and not (RECORD / "tiny").exists()
    capsys.readouterr()
    assert main(["run", "bm25", "--collection", str(second), *common]) == 2
    err = capsys.readouterr().err
    assert "--name-collection" in err and "--splits-dir" in err
    assert err.index("--name-collection") < err.index("--overwrite")  # the safe choices first
    assert main(["run", "bm25", "--collection", str(second), "--name-collection", "tiny-b", *common]) == 0
    assert (runs / "tiny-b" / "bm25" / "seed-0.json").is_file()
    assert (tmp_path / "my-runs-splits" / "tiny-b" / "seed-0.json").is_file()


def test_registered_collections_use_the_committed_manifests_wherever_run(tmp_path, monkeypatch):
    from harness.runs.run_job import split_places

    monkeypatch.chdir(tmp_path)
    places = split_places(load_registry(), "demo", tmp_path / "runs", None)
    assert places.record == RECORD and places.folder == tmp_path / "runs-splits"


# 6. leaderboard --out DIR --------------------------------------------------------------------

def test_leaderboard_of_other_runs_writes_only_its_pages_and_a_short_summary(tmp_path, capsys):
    runs, out = tmp_path / "my-runs", tmp_path / "my-runs"
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert len(printed.splitlines()) <= 6 and "demo: 1 run(s); best Success@8: bm25" in printed
    assert sorted(p.name for p in out.glob("*.md")) == ["main.md", "per-genre.md"]
    page = (out / "main.md").read_text()
    assert str(tmp_path) not in page and "my-runs" not in page  # no machine path
    assert "leaderboards/runs" not in page and "training-loss.png" not in page and "performance.md" not in page
    assert "success-at-k-demo.png" in page  # linked whether or not drawn: the page does not depend on --no-plots


# 8. systems NAME, collections, export, help ------------------------------------------------------

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
    rows = {line.split("|")[1].strip(): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "| yes " in rows["demo"] and "built in" in rows["demo"]
    assert "| NO " in rows["pan19-en"] and "nowhere" in rows["pan19-en"]
    assert "| NO " in rows["hrs1"] and "AA_HARNESS_HRS_DIR" in rows["hrs1"]


def test_collections_finds_the_public_corpora(corpora, capsys):
    assert main(["collections", "--data-dir", str(corpora)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| pan19-en"))
    assert "| yes " in line and str(corpora) in line


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_writes_tables_and_per_query_ranks(tmp_path, fmt):
    runs = ROOT / "leaderboards" / "runs"
    assert main(["export", "--runs-dir", str(runs), "--out", str(tmp_path), "--format", fmt]) == 0
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
    missing = [f"{cmd} {'/'.join(a.option_strings) or a.dest}" for cmd, a in _actions(build_parser())
               if not a.help or a.help == argparse.SUPPRESS]
    assert not missing, missing


def test_run_name_help_names_the_runs_dir():
    run = next(a for cmd, a in _actions(build_parser()) if cmd == "run" and a.dest == "name")
    assert "<runs-dir>/<collection>/<name>/" in run.help
