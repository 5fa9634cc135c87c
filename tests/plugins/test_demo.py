"""The built-in demo ranks: simple stylometric baselines stay well below a perfect score, and a
topic matcher < character n-grams < a style model, on all four seeds."""

from __future__ import annotations

import statistics
import sys

import pytest

from tests.conftest import ROOT

EXAMPLE_SRC = ROOT / "examples" / "aa-harness-example" / "src"


def test_demo_is_deterministic_and_style_families_are_shared():
    from harness.data.demo import N_FAMILIES, N_FOREGROUND, demo_documents

    a, b = demo_documents(), demo_documents()
    assert [d.fullText for d in a] == [d.fullText for d in b]
    assert N_FAMILIES < N_FOREGROUND  # several authors share a family


@pytest.fixture
def plugins(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_SRC))
    import aa_example.plugin

    import tests.trigram_plugin

    yield aa_example.plugin, tests.trigram_plugin
    for name in [m for m in sys.modules if m.startswith("aa_example")]:
        sys.modules.pop(name)


@pytest.mark.slow
def test_demo_ranks_the_systems_and_a_plain_trigram_plugin_does_not_saturate_it(plugins, tmp_path):
    from harness.plugins import load_registry, plugin_manager
    from harness.runs.results import read_result
    from harness.runs.run_job import RunJob, run_job

    reg = load_registry(plugin_manager(entrypoints=False, extra=plugins))
    s8 = {}
    for system in ("bm25", "char-ngram", "function-words", "char-3gram-cosine"):
        out = run_job(
            reg,
            RunJob(
                systems=[system],
                collection="demo",
                runs_dir=tmp_path / "runs",
                splits_dir=tmp_path / "splits",
                progress=False,
            ),
            log=lambda *_: None,
        )
        assert len(out) == 4
        s8[system] = statistics.mean(read_result(o.path)["metrics"]["success@8"] for o in out)
    assert s8["bm25"] < s8["char-ngram"] < s8["function-words"], s8
    assert s8["char-3gram-cosine"] < 0.90, s8
    assert s8["char-ngram"] - s8["bm25"] > 0.05 and s8["function-words"] - s8["char-ngram"] > 0.2, s8
