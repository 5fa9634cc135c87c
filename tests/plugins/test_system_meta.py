"""Systems declare what they are (SystemSpec.meta): checked when declared, read by the pages, which name no system."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.hookspecs import hookimpl
from harness.plugins import load_registry, plugin_manager
from harness.specs import SystemSpec
from harness.system_meta import MetaError, SystemMeta
from tests.conftest import ROOT

BUILT_IN_NAMES = re.compile(r'"(bm25|char-ngram|sbert)"')


def _spec(meta=None, **kw):
    return SystemSpec(
        "acme-lex", "plugins.bm25.system:BM25System", "plugins.bm25.config:BM25Config", meta=meta or {}, **kw
    )


@pytest.mark.parametrize(
    "meta, says",
    [
        ({"role": "basline"}, "role 'basline' is not one of: baseline, retriever, reranker"),
        ({"rol": "baseline"}, "has no field 'rol'; did you mean 'role'?"),
        ({"backbone": "acme/x", "parameters": "42 million"}, "parameters '42 million' is not a size"),
        ({"parameters": "42M"}, "describe `backbone`, which is not given"),
        ({"backbones": {"acme/x": {"params": "1B"}}}, "backbones['acme/x']: has no field 'params'"),
        ({"has_model": "no"}, "has_model must be true or false"),
        ({"role": "baseline", "plot_style": ("grey", "o")}, "plot_style ('grey', 'o') is not (colour"),
        ({"plot_style": ("#222222", "o")}, "plot_style is for baselines"),
        ({"own_settings": "k1"}, "own_settings must be a tuple of strings"),
    ],
)
def test_bad_metadata_is_one_line_naming_the_system_and_the_field(meta, says):
    with pytest.raises(MetaError) as e:
        _spec(meta)
    assert str(e.value).startswith("system 'acme-lex': meta ") and says in str(e.value)
    assert "\n" not in str(e.value)


def test_metadata_made_directly_names_the_field_and_is_frozen():
    with pytest.raises(MetaError, match=r"^role 'judge' is not one of"):
        SystemMeta(role="judge")
    meta = SystemMeta(backbones={"acme/x": {"parameters": "1.5B", "quantization": "Q4_K_M GGUF"}})
    assert meta.backbone_facts("acme/x").parameters == "1.5B"  # a dict of Backbone's fields, made a Backbone
    with pytest.raises(TypeError):
        meta.backbones["acme/y"] = meta.backbones["acme/x"]  # read-only, as the dataclass is frozen
    assert _spec(SystemMeta(role="baseline")).meta.role == "baseline"  # a SystemMeta is taken as it is


def test_capabilities_come_from_a_closed_set():
    with pytest.raises(MetaError, match=r"^system 'acme-lex': capabilities has 'fly'; each must be one of: rank, "):
        _spec(capabilities=("rank", "fly"))
    with pytest.raises(MetaError, match="must be a tuple, got the string 'rank'"):
        _spec(capabilities="rank")


def test_a_plugin_with_bad_metadata_is_left_out_in_one_line_and_the_others_work_on():
    class Bad:
        @hookimpl
        def register_systems(self, register):
            register(_spec({"role": "judge"}))

    warned: list[str] = []
    reg = load_registry(plugin_manager(entrypoints=False, extra=(Bad(),)), warn=warned.append)
    assert "acme-lex" not in reg.systems and "bm25" in reg.systems
    assert len(warned) == 1 and "system 'acme-lex': meta role 'judge'" in warned[0]


def test_every_built_in_system_declares_what_the_pages_read():
    reg = load_registry(plugin_manager(entrypoints=False))
    baselines = sorted(n for n, s in reg.systems.items() if s.meta.role == "baseline")
    assert baselines == ["bm25", "char-ngram"] and all(reg.systems[n].meta.plot_style for n in baselines)
    assert [n for n, s in reg.systems.items() if "reference-embedder" in s.capabilities] == ["sbert"]
    assert reg.systems["sadiri-v2-reranker"].meta.role == "reranker"
    from harness.reports.paper_recipes import PAPER_RECIPES

    assert {s.meta.recipe for s in reg.systems.values()} - {""} <= set(PAPER_RECIPES)


def test_no_module_of_the_harness_names_a_built_in_system():
    """The pages, the identity table and curation read the systems' metadata, never a name."""
    for path in (ROOT / "harness").rglob("*.py"):
        hits = BUILT_IN_NAMES.findall(path.read_text(encoding="utf-8"))
        assert not hits, f"{path.relative_to(ROOT)} names {hits}"


class AcmePlugin:
    """A third-party system: BM25's code under another name, declared a baseline with a backbone of 42M."""

    @hookimpl
    def register_systems(self, register):
        register(
            _spec(
                {
                    "role": "baseline",
                    "backbone": "acme/lexicon-v1",
                    "parameters": "42M",
                    "plot_style": ("#444444", "D"),
                }
            )
        )


def test_a_third_party_baseline_leads_the_pages_with_its_declared_size(tmp_path: Path, monkeypatch):
    import harness.plugins
    from harness.reports.board import load_board
    from harness.reports.leaderboard import collection_pages, main_page
    from harness.runs.run_job import RunJob, run_job

    reg = load_registry(plugin_manager(entrypoints=False, extra=(AcmePlugin(),)))
    monkeypatch.setattr(harness.plugins, "load_registry", lambda *a, **k: reg)
    runs = tmp_path / "runs"
    job = RunJob(systems=["acme-lex", "char-ngram"], collection="demo", seeds=[0], runs_dir=runs, progress=False)
    run_job(reg, job, log=lambda *_: None)

    board = load_board(runs, plots=False)
    assert board.baseline("demo") == "acme-lex"  # first by run order: acme-lex sorts before char-ngram
    identity = main_page(board).split("## What each run is")[1]
    row = next(line for line in identity.splitlines() if line.startswith("| acme-lex "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:3] == ["acme/lexicon-v1", "42M"]  # "What each run is": backbone, parameters
    page = collection_pages(board)["collections/demo.md"]
    assert "S@8 vs acme-lex" in page and "`†` from acme-lex" in page and "(baseline)" in page
    assert "difference char-ngram − acme-lex" in page  # the power note compares the first two baselines
    assert board.catalog.baselines(board.runs, "demo", board.names("demo")) == ["acme-lex", "char-ngram"]
    assert board.catalog.plot_style("acme-lex") == ("#444444", "D")
