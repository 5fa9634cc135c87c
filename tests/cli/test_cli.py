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
