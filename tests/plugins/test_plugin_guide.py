"""The plugin guide and the example plugin: every hook and spec field explained, the example runs, results name its distribution."""

from __future__ import annotations

import sys

import pytest

from harness.plugins import load_registry, plugin_manager
from harness.runs.results import read_result
from harness.runs.run_job import RunJob, run_job
from tests.conftest import RECORD, ROOT

EXAMPLE_SRC = ROOT / "examples" / "aa-harness-example" / "src"


def test_plugin_guide_covers_every_hook_and_spec_field():
    import dataclasses

    from harness import hookspecs
    from harness.specs import CollectionSpec, PageSpec, SystemSpec

    guide = (ROOT / "docs" / "plugins.md").read_text()
    import inspect

    for name in (n for n in dir(hookspecs) if n.startswith("register_")):
        params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        assert f"`{name}({params})`" in guide, f"docs/plugins.md does not explain the hook {name}"
    for spec in (SystemSpec, CollectionSpec, PageSpec):
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
    out = run_job(
        reg,
        RunJob(
            systems=["function-words"],
            collection="example-letters",
            seeds=[0, 1001],
            runs_dir=tmp_path / "runs",
            progress=False,
            overrides={"smoothing": "1"},
        ),
        log=lambda *_: None,
    )
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
        "    register(SystemSpec('len2', 'plugins.bm25.system:BM25System', 'plugins.bm25.config:BM25Config'))\n"
    )
    (site / "aa_len_plugin-0.3.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: aa-len-plugin\nVersion: 0.3\n"
    )
    (site / "aa_len_plugin-0.3.dist-info" / "entry_points.txt").write_text("[aa_harness]\nlen2 = aa_len_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    try:
        reg = load_registry(plugin_manager())
        out = run_job(
            reg,
            RunJob(
                systems=["len2"],
                collection=str(small_collection_file),
                seeds=[0],
                runs_dir=tmp_path / "runs",
                progress=False,
            ),
            log=lambda *_: None,
        )
        plugin = read_result(out[0].path)["provenance"]["plugin"]
        assert plugin["distribution"] == "aa-len-plugin" and plugin["version"] == "0.3"
        builtin = run_job(
            reg,
            RunJob(
                systems=["bm25"],
                collection=str(small_collection_file),
                seeds=[0],
                runs_dir=tmp_path / "runs",
                progress=False,
            ),
            log=lambda *_: None,
        )
        assert read_result(builtin[0].path)["provenance"]["plugin"]["distribution"] == "aa-harness"
    finally:
        sys.modules.pop("aa_len_plugin", None)


def test_the_plugin_api_is_one_torch_free_module_that_plugins_use():
    """Plugins and the example import the harness only through harness.api; every name in its
    __all__ resolves, the neural ones on first use, and importing it loads no torch."""
    import re
    import subprocess
    import sys

    import harness.api as api

    assert set(api._NEURAL) <= set(api.__all__)
    code = "import sys, harness.api; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    assert all(hasattr(api, name) for name in api.__all__)
    with pytest.raises(AttributeError, match="no attribute 'load_backbones'"):
        api.load_backbones  # noqa: B018 -- a misspelt name fails like any module attribute
    for path in [*(ROOT / "plugins").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"\s*(from|import) harness\b", line):
                assert line.strip().startswith("from harness.api import"), f"{path.relative_to(ROOT)}: {line.strip()}"
