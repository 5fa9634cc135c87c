from harness.reports.leaderboard import write_leaderboards
from tests.conftest import ROOT


def test_committed_tables_equal_regenerated(tmp_path):
    write_leaderboards(ROOT / "leaderboards" / "runs", tmp_path, plots=False, reported=True,
                       bench_dir=ROOT / "benchmarks" / "results")
    for name in ("main.md", "per-genre.md", "reported.md", "training.md", "rerank.md", "performance.md"):
        committed = (ROOT / "leaderboards" / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / name).read_text(encoding="utf-8"), (
            f"leaderboards/{name} differs from what `aa-harness leaderboard` generates; rerun it and commit")
    pages = sorted(p.name for p in (tmp_path / "collections").glob("*.md"))
    assert pages == sorted(p.name for p in (ROOT / "leaderboards" / "collections").glob("*.md"))
    for name in pages:
        committed = (ROOT / "leaderboards" / "collections" / name).read_text(encoding="utf-8")
        assert committed == (tmp_path / "collections" / name).read_text(encoding="utf-8"), f"collections/{name} is stale"


def test_plots_are_written_for_each_collection(tmp_path):
    written = write_leaderboards(ROOT / "leaderboards" / "runs", tmp_path)
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert all((ROOT / "leaderboards" / p.name).is_file() for p in pngs), "a committed plot is missing"


def test_main_table_has_every_run():
    from harness.runs.results import iter_results

    main = (ROOT / "leaderboards" / "main.md").read_text(encoding="utf-8")
    for _, res in iter_results(ROOT / "leaderboards" / "runs"):
        assert f"| {res['run_name']} " in main


def test_performance_page_renders_each_benchmark_kind(tmp_path):
    """A bench result written by the bench code renders with its figures and source."""
    import json

    from aa_harness_bench.results import write_result
    from harness.reports.performance import performance_page

    facts = {"device_name": "Test Card", "torch": "x"}
    entry = {"seconds": 1.0, "tokens_per_s": 1000.0, "documents_per_s": 3.0, "tflops": 1.5, "max_tokens": 4096,
             "path": "packed"}
    agreement = {"rel_error_median": 1e-3, "rel_error_max": 2e-3, "top10_overlap": 0.99, "top1_agreement": 1.0}
    write_result("encode", "tiny", facts, {"arch": "tiny"},
                 {"naive": {"tokens_per_s": 250.0, "tflops": 0.4}, "harness": entry, "speedup": 4.0,
                  "agreement": agreement, "variants": []}, tmp_path / "a.json")
    write_result("seeds", "sbert-demo", facts, {"system": "sbert", "collection": "demo"},
                 {"one_seed_seconds": 10.0, "four_seeds_seconds": 11.0, "ratio": 1.1}, tmp_path / "b.json")
    write_result("batching", "d96", facts, {}, [{"documents": 4000, "authors": 2000, "dim": 96, "projected_dim": 32,
                                                 "clusters": 438, "batches": 125, "seconds": 1.4,
                                                 "kmeans_backend": "torch", "kmeans_device": "cuda"}], tmp_path / "c.json")
    write_result("char-ngram-seeds", "char-ngram-demo", facts, {"collection": "demo"},
                 {"before_one_seed_seconds": 10.0, "before_four_seeds_seconds": 40.0, "after_one_seed_seconds": 9.0,
                  "after_four_seeds_seconds": 10.0, "before_ratio": 4.0, "after_ratio": 1.11, "four_seed_speedup": 4.0,
                  "rankings_identical": True}, tmp_path / "d.json")
    page = performance_page(tmp_path)
    assert "| 4,000       | 2,000" in page and "torch on cuda" in page
    assert "one count matrix per collection" in page and "| True " in page
    assert "| tiny    | packed" in page and "4.00" in page and "1.0e-03 / 2.0e-03" in page
    assert "| sbert    | demo" in page and "1.10" in page and "Test Card" in page
    assert json.loads((tmp_path / "a.json").read_text())["benchmark"] == "encode"


def test_training_paths_benchmark_compares_two_logs_of_one_run(tmp_path):
    """benchmarks/training_paths.py: speed-up and loss gap from two training logs that differ
    only in fast_training; anything else differing is refused; the performance page shows it."""
    import pytest

    from benchmarks.training_paths import compare
    from harness.reports.performance import training_paths_table

    def log(fast, seconds, losses, **extra):
        return {"system": "sadiri-v2-reranker", "device": "cuda: X", "config": {"fast_training": fast, "lr": 1e-4, **extra},
                "card": {"commit": "abc", "trained_at": "2026-11-26"},
                "log": [{"loss": x} for x in losses] + [{"epoch_seconds": seconds, "tokens_per_second": 1000 / seconds,
                                                          "docs_per_second": 10 / seconds}]}

    record = compare(log(False, 4.0, [2.5, 2.4]), log(True, 2.0, [2.5, 2.3]), "rr")
    assert record["results"]["speedup"] == 2.0 and record["results"]["max_abs_loss_gap"] == pytest.approx(0.1)
    assert "fast_training" in training_paths_table([record]) and "2.00" in training_paths_table([record])
    with pytest.raises(SystemExit, match="lr"):
        compare(log(False, 4.0, [2.5]), log(True, 2.0, [2.5], lr=1e-5), "rr")
    with pytest.raises(SystemExit, match="--hf"):
        compare(log(True, 4.0, [2.5]), log(True, 2.0, [2.5]), "rr")
