import subprocess
import sys

import pytest

from harness.cli import main
from tests.conftest import ROOT


@pytest.mark.parametrize(
    "command",
    [
        "systems",
        "collections",
        "split",
        "run",
        "rerank",
        "train",
        "curate",
        "leaderboard",
        "compare",
        "topic-share",
        "topics",
    ],
)
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    assert "usage: aa-harness" in capsys.readouterr().out


def test_python_dash_m_harness_lists_systems():
    proc = subprocess.run([sys.executable, "-m", "harness", "systems"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "bm25" in proc.stdout and "char-ngram" in proc.stdout


def test_split_prints_counts_table(tmp_path, capsys):
    assert main(["split", "--collection", "demo", "--seeds", "0", "--splits-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| demo " in out and "queries" in out
    assert (tmp_path / "demo" / "seed-0.json").is_file()


def test_run_and_leaderboard_from_the_cli(tmp_path, capsys):
    runs, out = tmp_path / "runs", tmp_path / "lb"
    assert (
        main(
            [
                "run",
                "bm25",
                "--seeds",
                "0",
                "--runs-dir",
                str(runs),
                "--splits-dir",
                str(tmp_path / "s"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "leaderboard",
                "--runs-dir",
                str(runs),
                "--out",
                str(out),
                "--no-plots",
                "--splits-dir",
                str(tmp_path / "s"),
            ]
        )
        == 0
    )
    assert "| bm25 " in (out / "main.md").read_text()


def test_compare_prints_the_paired_test_and_the_page_marks(tmp_path, capsys):
    runs, splits, out = tmp_path / "runs", tmp_path / "s", tmp_path / "lb"
    for system in ("bm25", "char-ngram"):
        assert main(["run", system, "--runs-dir", str(runs), "--splits-dir", str(splits), "--no-progress"]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "char-ngram",
                "bm25",
                "--collection",
                "demo",
                "--runs-dir",
                str(runs),
                "--splits-dir",
                str(splits),
                "--resamples",
                "2000",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    import json

    authors = {
        a
        for f in sorted((splits / "demo").glob("seed-*.json"))
        for q in json.loads(f.read_text())["queries"]
        for a in q["authorIDs"]
    }
    assert f"in {len(authors)} author clusters" in text and "paired cluster randomization test" in text
    assert "success@8" in text and "95% interval" in text
    assert "query authors" in text
    from harness.reports.leaderboard import write_leaderboards

    write_leaderboards(runs, out, plots=False)
    page = (out / "collections" / "demo.md").read_text()
    # on demo char-ngram beats bm25 by about 60 points: bm25 is marked as different from the best row
    assert "| bm25 *" in page and "| char-ngram †" in page


def test_compare_against_reads_the_namesake_from_another_results_folder(tmp_path, capsys):
    """A rerun in one's own runs folder against the committed record: the same run name in two
    folders, each verified where it lies; a deterministic system rerun agrees exactly."""
    mine, record, splits = tmp_path / "mine", tmp_path / "record", tmp_path / "s"
    for runs in (mine, record):
        assert main(["run", "bm25", "--runs-dir", str(runs), "--splits-dir", str(splits), "--no-progress"]) == 0
    assert main(["run", "char-ngram", "--runs-dir", str(record), "--splits-dir", str(splits), "--no-progress"]) == 0
    capsys.readouterr()
    common = ["--collection", "demo", "--runs-dir", str(mine), "--splits-dir", str(splits), "--resamples", "2000"]
    assert main(["compare", "bm25", "--against", str(record), *common]) == 0
    text = capsys.readouterr().out
    assert f"A: bm25 in {mine}" in text and f"B: bm25 in {record}" in text
    row = next(line for line in text.splitlines() if line.startswith("| success@8"))
    assert "+0.0" in row and "1.0000" in row  # bm25 is deterministic: the rerun is the same ranking
    assert main(["compare", "bm25", "char-ngram", "--against", str(record), *common]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| success@8"))
    assert "+0.0" not in row  # bm25 here against char-ngram there
    assert main(["compare", "bm25", *common]) == 2
    assert "needs RUN_B, or --against" in capsys.readouterr().err
    assert main(["compare", "bm25", "--against", str(tmp_path / "nowhere"), *common]) == 2
    assert "no such folder" in capsys.readouterr().err
