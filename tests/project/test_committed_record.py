"""The golden set: the tests that read the committed record (leaderboards/: its runs, registries and pages).

Every other test builds what it reads in a temporary folder. These check that the committed pages
are what the committed runs give; the README's generated parts are checked in test_docs.py.
"""

from __future__ import annotations

import pytest

from harness.reports.fixes import load_fixes
from harness.reports.leaderboard import write_leaderboards
from tests.conftest import ROOT, committed_registries

PAGES = ROOT / "leaderboards" / "pages"


@pytest.mark.slow
def test_committed_tables_equal_regenerated(tmp_path):
    write_leaderboards(
        ROOT / "leaderboards" / "runs",
        tmp_path,
        plots=False,
        reported=True,
        bench_dir=ROOT / "benchmarks" / "results",
        registries=committed_registries(),
    )
    for name in ("main.md", "per-genre.md", "reported.md", "training.md", "rerank.md", "performance.md"):
        committed = (PAGES / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / name).read_text(encoding="utf-8"), (
            f"leaderboards/pages/{name} differs from what `aa-harness leaderboard` generates; rerun it and commit"
        )
    pages = sorted(p.name for p in (tmp_path / "collections").glob("*.md"))
    assert pages == sorted(p.name for p in (PAGES / "collections").glob("*.md"))
    for name in pages:
        committed = (PAGES / "collections" / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / "collections" / name).read_text(encoding="utf-8"), (
            f"collections/{name} is stale"
        )


@pytest.mark.slow
def test_plots_are_written_for_each_collection(tmp_path):
    written = write_leaderboards(ROOT / "leaderboards" / "runs", tmp_path, registries=committed_registries())
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert all((PAGES / p.name).is_file() for p in pngs), "a committed plot is missing"


def test_main_table_has_every_run():
    from harness.runs.results import iter_results

    main = (PAGES / "main.md").read_text(encoding="utf-8")
    for _, res in iter_results(ROOT / "leaderboards" / "runs"):
        assert f"| {res['run_name']} " in main


def test_the_committed_registry_names_the_seed_fix():
    fixes = load_fixes(ROOT / "leaderboards" / "fixes.json")
    assert [f.commit[:7] for f in fixes] == ["da837aa"] and fixes[0].systems == ("sadiri-v2-retriever",)
    main = (PAGES / "main.md").read_text(encoding="utf-8")
    assert "| sadiri-v2-smollm2 †" in main and "| smollm2-untrained †" not in main


def test_the_runs_moved_out_still_verify_on_the_manifests_they_were_made_on():
    """pan19-en's bm25 and char-ngram made before the cap: moved to leaderboards/stale/, checked against the
    kept manifests (splits/pan19-en-v2-uncapped), which tests/evaluation/test_splits.py rebuilds."""
    from harness.runs.verified import verified_results

    moved = ROOT / "leaderboards" / "stale" / "pan19-en-v2-uncapped"
    runs = {("pan19-en", r): "pan19-en-v2-uncapped" for r in ("bm25", "char-ngram")}
    found = verified_results(moved, ROOT / "splits", manifests_of=runs)
    assert sorted(found) == sorted(runs)
    assert all([res["seed"] for _, res in v] == [0, 1001, 2001, 3001] for v in found.values())
