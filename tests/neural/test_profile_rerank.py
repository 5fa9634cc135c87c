"""benchmarks/profile_rerank.py: a rerank's figures on a first stage's saved ranking, as
`aa-harness rerank` would run it (here on a CPU, with a tiny reranker)."""

import json

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_profile_rerank_prints_and_writes_the_figures_of_the_queries_it_rescored(saved_reranker, tmp_path, capsys):
    from benchmarks.profile_rerank import main

    first = ROOT / "leaderboards" / "runs" / "demo" / "bm25" / "seed-0.json"
    out = tmp_path / "fig.json"
    model = saved_reranker.model
    args = ["--collection", "demo", "--first-stage", str(first), "--queries", "3", "--depth", "5", "--out", str(out)]
    settings = {"model": model, "device": "cpu", "backbone": saved_reranker.backbone, "strategy": "r"}
    settings.update(max_query_tokens=48, max_candidate_tokens=48)  # as it was saved
    main([*args, *(x for k, v in settings.items() for x in ("--set", f"{k}={v}"))])
    fig = json.loads(out.read_text())
    assert fig["queries"] == 3 and fig["pairs"] == 15 and fig["device"] == "cpu"
    assert fig["benchmark"] == "rerank-profile" and fig["git_commit"] and fig["args"]["queries"] == 3
    assert fig["tokens"] > fig["pairs"] and fig["wall_seconds"] > 0 and fig["top"]
    assert fig["host_ops"] == []  # on a CPU the ops are the device's own: listed once, under "top"
    printed = capsys.readouterr().out
    assert "3 queries, 15 pairs" in printed and "tokenizing every text cold" in printed
