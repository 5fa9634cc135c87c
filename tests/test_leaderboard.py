from harness.leaderboard import write_leaderboards
from tests.conftest import ROOT


def test_committed_tables_equal_regenerated(tmp_path):
    write_leaderboards(ROOT / "leaderboards" / "runs", tmp_path, plots=False)
    for name in ("main.md", "per-genre.md", "reported.md", "training.md", "rerank.md"):
        committed = (ROOT / "leaderboards" / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / name).read_text(encoding="utf-8"), (
            f"leaderboards/{name} differs from what `aa-harness leaderboard` generates; rerun it and commit")


def test_plots_are_written_for_each_collection(tmp_path):
    written = write_leaderboards(ROOT / "leaderboards" / "runs", tmp_path)
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert all((ROOT / "leaderboards" / p.name).is_file() for p in pngs), "a committed plot is missing"


def test_main_table_has_every_run():
    from harness.results import iter_results

    main = (ROOT / "leaderboards" / "main.md").read_text(encoding="utf-8")
    for _, res in iter_results(ROOT / "leaderboards" / "runs"):
        assert f"| {res['run_name']} " in main
