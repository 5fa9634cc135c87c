import subprocess
import sys
import textwrap

import pytest

from harness import hookspecs
from harness.plugins import load_registry, plugin_manager
from harness.runs.results import read_result
from harness.runs.run_job import RunJob, run_job
from tests.conftest import ROOT


def test_builtin_systems_and_collections_are_registered():
    reg = load_registry()
    assert {"bm25", "char-ngram", "sbert"} <= set(reg.systems)
    assert {"demo", "pan19-en", "pan18-en", "hrs1", "hrs2"} <= set(reg.collections)


def test_listing_and_metrics_import_no_torch():
    code = (
        "import sys; from harness.plugins import load_registry; import harness.evaluation.metrics, harness.reports.leaderboard; "
        "load_registry(); from harness.cli import main; main(['systems']); "
        "bad = [m for m in ('torch', 'transformers', 'sentence_transformers', 'sklearn') if m in sys.modules]; "
        "assert not bad, bad"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_hookspec_is_exercised_by_a_test():
    """datasette-style meta-test: a new hook needs a test that names it."""
    specs = [n for n in dir(hookspecs) if n.startswith("register_")]
    tests = "".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    for name in specs:
        assert f"def {name}(" in tests.replace("self, register", "register"), f"no test implements hook {name}"


def test_misspelt_hook_fails_loudly():
    from pluggy import PluginValidationError

    class Bad:
        @hookspecs.hookimpl
        def register_sytems(self, register):
            pass

    with pytest.raises(PluginValidationError):
        plugin_manager(entrypoints=False, extra=(Bad(),))


EXTERNAL = textwrap.dedent('''
    """An external plugin package, installed through the aa_harness entry-point group."""
    from dataclasses import dataclass

    from harness.data.collection import load_collection
    from harness.hookspecs import hookimpl
    from harness.specs import CollectionSpec, SystemSpec


    @dataclass(frozen=True)
    class LengthConfig:
        power: float = 1.0


    class LengthRanker:
        """Ranks candidates by closeness of document length: a tiny, real system."""

        def __init__(self, config):
            self.config = config

        def rank(self, queries, candidates, k):
            out = {}
            for q in queries:
                n = len(q.fullText)
                scored = [(c.documentID, -abs(len(c.fullText) - n) ** self.config.power) for c in candidates]
                out[q.documentID] = sorted(scored, key=lambda cs: -cs[1])[:k]
            return out


    def tiny_collection(path, data_dir=None):
        return load_collection("tiny", [path])


    @hookimpl
    def register_systems(register):
        register(SystemSpec("length", "aa_length_plugin:LengthRanker", "aa_length_plugin:LengthConfig",
                            "length closeness"))


    @hookimpl
    def register_collections(register):
        register(CollectionSpec("tiny", "aa_length_plugin:tiny_collection", "tiny test collection",
                                args=(TINY_PATH,)))
''')


def test_external_plugin_through_entry_points_runs_end_to_end(tmp_path, monkeypatch, small_collection_file):
    site = tmp_path / "site"
    (site / "aa_length_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "aa_length_plugin.py").write_text(EXTERNAL + f"\nTINY_PATH = {str(small_collection_file)!r}\n")
    (site / "aa_length_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: aa-length-plugin\nVersion: 0.1\n"
    )
    (site / "aa_length_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[aa_harness]\nlength = aa_length_plugin\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    try:
        reg = load_registry(plugin_manager())
        assert reg.systems["length"].description == "length closeness"
        out = run_job(
            reg,
            RunJob(
                systems=["length"],
                collection="tiny",
                seeds=[0, 1001],
                runs_dir=tmp_path / "runs",
                splits_dir=tmp_path / "splits",
                progress=False,
                overrides={"power": "2"},
            ),
            log=lambda *_: None,
        )
        res = read_result(out[0].path)
        assert res["system"] == "length" and res["config"] == {"power": 2.0} and res["n_queries"] >= 1
        # the autoload switch keeps it out
        monkeypatch.setenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", "1")
        assert "length" not in load_registry(plugin_manager()).systems
    finally:
        sys.modules.pop("aa_length_plugin", None)


def test_blocking_a_plugin(monkeypatch):
    monkeypatch.setenv("AA_HARNESS_BLOCK_PLUGINS", "plugins.sbert")
    assert "sbert" not in load_registry().systems
