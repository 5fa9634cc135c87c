from harness.cli import main


def test_performance_page_renders_each_benchmark_kind(tmp_path):
    """A bench result written by the bench code renders with its figures and source."""
    import json

    from aa_harness_bench.performance import performance_page
    from aa_harness_bench.results import write_result

    facts = {"device_name": "Test Card", "torch": "x"}
    entry = {
        "seconds": 1.0,
        "tokens_per_s": 1000.0,
        "documents_per_s": 3.0,
        "tflops": 1.5,
        "max_tokens": 4096,
        "path": "packed",
    }
    agreement = {"rel_error_median": 1e-3, "rel_error_max": 2e-3, "top10_overlap": 0.99, "top1_agreement": 1.0}
    write_result(
        "encode",
        "tiny",
        facts,
        {"arch": "tiny"},
        {
            "naive": {"tokens_per_s": 250.0, "tflops": 0.4},
            "harness": entry,
            "speedup": 4.0,
            "agreement": agreement,
            "variants": [],
        },
        tmp_path / "a.json",
    )
    write_result(
        "seeds",
        "sbert-demo",
        facts,
        {"system": "sbert", "collection": "demo"},
        {"one_seed_seconds": 10.0, "four_seeds_seconds": 11.0, "ratio": 1.1},
        tmp_path / "b.json",
    )
    write_result(
        "batching",
        "d96",
        facts,
        {},
        [
            {
                "documents": 4000,
                "authors": 2000,
                "dim": 96,
                "projected_dim": 32,
                "clusters": 438,
                "batches": 125,
                "seconds": 1.4,
                "kmeans_backend": "torch",
                "kmeans_device": "cuda",
            }
        ],
        tmp_path / "c.json",
    )
    write_result(
        "char-ngram-seeds",
        "char-ngram-demo",
        facts,
        {"collection": "demo"},
        {
            "before_one_seed_seconds": 10.0,
            "before_four_seeds_seconds": 40.0,
            "after_one_seed_seconds": 9.0,
            "after_four_seeds_seconds": 10.0,
            "before_ratio": 4.0,
            "after_ratio": 1.11,
            "four_seed_speedup": 4.0,
            "rankings_identical": True,
        },
        tmp_path / "d.json",
    )
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

    from aa_harness_bench.performance import training_paths_table
    from benchmarks.training_paths import compare

    def log(fast, seconds, losses, **extra):
        return {
            "system": "sadiri-v2-reranker",
            "device": "cuda: X",
            "config": {"fast_training": fast, "lr": 1e-4, **extra},
            "card": {"commit": "abc", "trained_at": "2026-11-26"},
            "log": [{"loss": x} for x in losses]
            + [{"epoch_seconds": seconds, "tokens_per_second": 1000 / seconds, "docs_per_second": 10 / seconds}],
        }

    record = compare(log(False, 4.0, [2.5, 2.4]), log(True, 2.0, [2.5, 2.3]), "rr")
    assert record["results"]["speedup"] == 2.0 and record["results"]["max_abs_loss_gap"] == pytest.approx(0.1)
    assert "fast_training" in training_paths_table([record]) and "2.00" in training_paths_table([record])
    # each row names its path as the run's config states it: checkpointing, FP8, graphs where they ran
    graphed = compare(log(False, 4.0, [2.5]), log(True, 1.0, [2.5]), "g")
    graphed["config"].update(grad_checkpointing=False, cuda_graphs=True)
    table = training_paths_table([graphed])
    assert "fast_training (graphs, compiled)" in table and "| Hugging Face + PEFT " in table
    graphed["config"].update(grad_checkpointing=True)
    assert "fast_training (ckpt)" in training_paths_table([graphed])
    graphed["config"].update(grad_checkpointing=False, fp8=True)
    assert "fast_training (FP8 base)" in training_paths_table([graphed])
    diverged = compare(log(False, 4.0, [2.5, float("nan"), 2.4]), log(True, 2.0, [2.5, 2.3, 2.2]), "rr")
    assert diverged["results"]["hf"]["first_nonfinite_step"] == 1 and diverged["results"]["steps_both_finite"] == 2
    assert diverged["results"]["max_abs_loss_gap"] == pytest.approx(0.2)  # the finite steps only
    assert "loss not finite from step 1 of 3" in training_paths_table([diverged])
    with pytest.raises(SystemExit, match="lr"):
        compare(log(False, 4.0, [2.5]), log(True, 2.0, [2.5], lr=1e-5), "rr")
    with pytest.raises(SystemExit, match="--hf"):
        compare(log(True, 4.0, [2.5]), log(True, 2.0, [2.5]), "rr")


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
    # one seed: no spread to show, so the cell says how many seeds it is over (it was once a bare figure)
    row = next(line for line in page.splitlines() if line.startswith("| bm25"))
    assert all(cell.endswith("(n=1)") and "±" not in cell for cell in _cells(row)[1:])
    collection_page = (out / "collections" / "demo.md").read_text()
    assert "(n=1)" in collection_page


def test_a_cell_says_how_many_seeds_when_fewer_or_one():
    from harness.reports.cells import mean_sd_cell

    assert mean_sd_cell([0.1, 0.2, 0.3, 0.4]) == "25.0 ± 12.9"
    assert mean_sd_cell([0.1, 0.2], n_all=4) == "15.0 ± 7.1 (n=2)"
    assert mean_sd_cell([0.125], n_all=1) == "12.5 (n=1)"
    assert mean_sd_cell([0.125]) == "12.5 (n=1)"


def _cells(line: str) -> list[str]:
    """A GitHub table row's cells, split at the pipes that are not escaped."""
    import re

    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_names_from_data_cannot_shift_a_column_or_become_markup(tmp_path):
    from tests.conftest import doc, write_jsonl

    genres = ("mail | 99.9", "<img src=x onerror=alert(1)>", "R&D")
    recs = [
        doc(
            10 * a + g,
            f"author{a}",
            genres[g],
            f"document {g} of author {a}: " + " ".join(f"w{(a * 7 + k) % 23}" for k in range(40)),
        )
        for a in range(12)
        for g in range(3)
    ]
    collection = write_jsonl(tmp_path / "mixed.jsonl", recs)
    runs, out = tmp_path / "runs", tmp_path / "pages"
    assert (
        main(["run", "bm25", "--collection", str(collection), "--seeds", "0", "--runs-dir", str(runs), "--no-progress"])
        == 0
    )
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(out), "--no-plots"]) == 0
    page = (out / "per-genre.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + len(genres) and {len(_cells(r)) for r in rows} == {3}  # header, rule, one row a genre
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert any(_cells(r)[0] == r"mail \| 99.9" for r in rows) and any(_cells(r)[0] == "R&amp;D" for r in rows)


def test_the_table_renderer_escapes_text_and_keeps_harness_markdown():
    from harness.foundation.markdown_table import Markdown, markdown_table

    table = markdown_table([["a|b\\", "x\ny", 3, Markdown("+1.0 p<0.001")]], headers=["run <b>", "c", "n", "vs best"])
    head, _, row = table.splitlines()
    assert _cells(head) == ["run &lt;b&gt;", "c", "n", "vs best"]
    assert _cells(row) == [r"a\|b\\", "x y", "3", "+1.0 p<0.001"]


def test_the_leaderboard_lists_submitted_rankings_marked_as_submitted(tmp_path, capsys):
    runs, out = tmp_path / "runs", tmp_path / "board"
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
    rankings = runs / "demo" / "bm25" / "seed-0.rankings.jsonl.gz"
    assert (
        main(
            [
                "submit",
                str(rankings),
                "--format",
                "rankings",
                "--collection",
                "demo",
                "--seed",
                "0",
                "--name",
                "mine",
                "--submitter",
                "A. Person",
                "--description",
                "bm25 | again",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(out), "--no-plots"]) == 0
    page = (out / "main.md").read_text()
    assert "| mine (submitted) " in page and "| bm25 " in page and "bm25 (submitted)" not in page
    assert "| submitted " in page  # the runs table's system column
    assert "submitted rankings by A. Person: bm25 / again" in page  # what each run is; no table-breaking |
    assert "| mine (submitted) " in (out / "collections" / "demo.md").read_text()


def test_a_synthetic_collection_is_shown_apart_and_labelled(tmp_path, capsys):
    """demo declares itself synthetic: its runs leave the benchmarks' table for a labelled section (alone,
    the page shows that section and no empty table), and the HTML site labels its section too."""
    from dataclasses import replace

    from harness.reports.board import load_board
    from harness.reports.html_site import build_site
    from harness.reports.leaderboard import main_page

    runs = tmp_path / "runs"
    assert main(["run", "bm25", "--collection", "demo", "--seeds", "0", "--runs-dir", str(runs), "--no-progress"]) == 0
    board = load_board(runs, plots=False)
    assert board.synthetic >= {"demo"}
    page = main_page(board)
    head, section = page.split("## Synthetic collections (not benchmarks)")
    assert "| bm25" not in head and "(no runs yet)" not in head
    assert "says nothing about authorship attribution" in section and "| bm25" in section.split("## Runs")[0]
    plain = main_page(replace(board, synthetic=frozenset()))  # a collection that does not declare it: in the table
    assert "## Synthetic collections" not in plain and "| bm25" in plain.split("## Runs")[0]
    assert "(synthetic, not a benchmark)" in build_site(board, {})["index.html"]


def _boom(config):
    raise RuntimeError("the plugin's bug")


def test_a_describe_run_that_raises_loses_its_labels_not_the_pages(monkeypatch, caplog):
    """A plugin's failing describe_run once took the whole leaderboard down."""
    import harness.plugins
    from harness.hookspecs import hookimpl
    from harness.plugins import load_registry, plugin_manager
    from harness.reports.leaderboard import plugin_reports
    from harness.specs import SystemSpec

    class Plugin:
        @hookimpl
        def register_systems(self, register):
            register(
                SystemSpec(
                    "boom", "x:Y", "x:Z", capabilities=("rerank",), describe_run="tests.reports.test_leaderboard:_boom"
                )
            )
            register(SystemSpec("gone", "x:Y", "x:Z", capabilities=("rerank",), describe_run="tests.nowhere:f"))

    reg = load_registry(plugin_manager(entrypoints=False, extra=(Plugin(),)))
    monkeypatch.setattr(harness.plugins, "load_registry", lambda *a, **k: reg)
    reports = plugin_reports()
    assert reports.describe_run("boom", {}) == "" and reports.describe_run("boom", {}) == ""
    assert reports.describe_run("gone", {}) == ""
    warned = [r.getMessage() for r in caplog.records if "describe_run" in r.getMessage()]
    assert len(warned) == 2 and "the plugin's bug" in " ".join(warned)  # one warning a system


def test_a_page_the_runs_no_longer_give_is_retired_not_left_stale(tmp_path):
    """Regenerating after the reranker runs are gone removes the rerank page an earlier build
    wrote (and a collection page likewise); a file of that name not written by the harness stays."""
    from harness.reports.board import HEADER
    from harness.reports.leaderboard import write_pages

    (tmp_path / "collections").mkdir()
    (tmp_path / "rerank.md").write_text(HEADER + "# Reranking\nold rows\n")
    (tmp_path / "collections" / "gone.md").write_text(HEADER + "old\n")
    (tmp_path / "training.md").write_text("# my own notes\n")
    write_pages({"main.md": HEADER + "# Leaderboard\n", "collections/demo.md": HEADER + "demo\n"}, tmp_path)
    assert not (tmp_path / "rerank.md").exists() and not (tmp_path / "collections" / "gone.md").exists()
    assert (tmp_path / "training.md").read_text() == "# my own notes\n"
    assert (tmp_path / "main.md").is_file() and (tmp_path / "collections" / "demo.md").is_file()


def test_the_training_page_names_each_logs_training_set_and_marks_one_made_before_decontamination():
    from harness.reports.training import trained_on

    card = {"training_data": {"sha256": "f8b69e03cbac" + "0" * 52}}
    before = {"f8b69e03cbac": "curated before the decontamination"}
    log = {"examples": 3733, "unit": "authors", "card": card}
    assert trained_on(log, before) == "3733 authors of f8b69e03cbac (before decontamination)"
    assert trained_on(log, {}) == "3733 authors of f8b69e03cbac"
    assert trained_on({"examples": 92, "unit": "queries"}, before) == "92 queries"  # no card: nothing to say


def test_a_training_peak_is_marked_as_a_bound_unless_its_log_counts_from_the_training_start():
    """A log whose peak counts from its training's start shows it as is; an older one holds the
    process's peak, which can include an earlier training's cache: shown as an upper bound."""
    from aa_harness_bench.performance import _training_peak

    assert _training_peak({"peak_memory_gib": 25.75, "peak_memory_since": "training start"}) == "25.8"
    assert _training_peak({"peak_memory_gib": 111.59, "peak_memory_since": "process start"}) == "≤ 111.6"
    assert _training_peak({"peak_memory_gib": None}) == "—"
