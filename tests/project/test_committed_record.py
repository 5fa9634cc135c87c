"""The golden set: the tests that read the committed record (leaderboards/: its runs, registries and pages).

Every other test builds what it reads in a temporary folder. These check that the committed pages
are what the committed runs give; the README's generated parts are checked in test_docs.py.
"""

from __future__ import annotations

import pytest

from harness.reports.fixes import load_fixes
from harness.reports.leaderboard import leaderboard_files, record_board, write_pages
from tests.conftest import ROOT, committed_record

PAGES = ROOT / "leaderboards" / "pages"


def test_the_committed_record_is_valid_and_names_all_the_leaderboard_reads():
    """Every entry of leaderboards/ is the record file, a path it names, or the runs kept apart (stale/)."""
    record = committed_record()
    assert record.pages == PAGES and record.runs == ROOT / "leaderboards" / "runs"
    registries = record.registries
    named = [record.runs, record.pages, record.splits, record.bench_results, *vars(registries).values()]
    assert None not in named, "the committed record leaves an input out"
    kept_apart = {"record.toml", "stale"}  # stale/: runs moved out of the runs folder, read by no page
    unnamed = [p.name for p in (ROOT / "leaderboards").iterdir() if p not in named and p.name not in kept_apart]
    assert not unnamed, f"leaderboards/ holds {unnamed}, which leaderboards/record.toml does not name"


@pytest.mark.slow
def test_committed_pages_equal_regenerated(tmp_path, bench_installed):
    """The pages `aa-harness leaderboard --record leaderboards/record.toml --reported` writes (plots aside), the
    bench distribution installed (its performance page)."""
    write_pages(leaderboard_files(record_board(committed_record(), plots=False, reported=True)), tmp_path)
    generated = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md"))
    assert generated == sorted(p.relative_to(PAGES).as_posix() for p in PAGES.rglob("*.md"))
    for name in generated:
        assert (PAGES / name).read_text(encoding="utf-8") == (tmp_path / name).read_text(encoding="utf-8"), (
            f"leaderboards/pages/{name} differs from what `aa-harness leaderboard --record "
            "leaderboards/record.toml --reported` generates; rerun it and commit"
        )


@pytest.mark.slow
def test_plots_are_written_for_each_collection(tmp_path):
    written = write_pages(leaderboard_files(record_board(committed_record())), tmp_path)
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert sorted(p.name for p in pngs) == sorted(p.name for p in PAGES.glob("*.png")), "a committed plot differs"


def test_main_table_has_every_run():
    from harness.runs.results import iter_results

    main = (PAGES / "main.md").read_text(encoding="utf-8")
    for _, res in iter_results(ROOT / "leaderboards" / "runs"):
        assert f"| {res['run_name']} " in main


def test_the_committed_registry_names_the_seed_fix():
    fixes = load_fixes(committed_record().registries.fixes)
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
