"""The metric table is the one declaration of the metrics: a row added there alone is computed into a
fresh run's result, shown on the Markdown and HTML pages, exported, and compared when flagged `tested`."""

from __future__ import annotations

import csv
import json

import pytest

from harness.cli import main
from harness.errors import DataError
from harness.evaluation import metric_table
from harness.evaluation.metric_table import Metric, hit
from harness.reports.cells import mean_sd_cell
from harness.runs.results import read_result


def _markdown_cell(page: str, header: str, row_starts: str) -> str:
    """The cell under `header` in the table row that starts with `row_starts`."""
    lines = [line for line in page.splitlines() if line.startswith("|")]
    head = next(i for i, line in enumerate(lines) if f" {header} " in line)
    headers = [h.strip() for h in lines[head].strip("|").split("|")]
    row = next(line for line in lines[head + 2 :] if line.startswith(f"| {row_starts}"))
    return [c.strip() for c in row.strip("|").split("|")][headers.index(header)]


@pytest.mark.parametrize("tested", [True, False], ids=["tested", "not-tested"])
def test_a_metric_added_to_the_table_alone_reaches_every_reader(tmp_path, capsys, monkeypatch, tested):
    row = Metric("success@1", "Success@1", "S@1", 1, hit, tested=tested)
    monkeypatch.setattr(metric_table, "METRICS", (*metric_table.METRICS, row))
    runs = tmp_path / "runs"
    for system in ("bm25", "char-ngram"):
        assert main(["run", system, "--seeds", "0", "1001", "--runs-dir", str(runs), "--no-progress"]) == 0
    assert "S@1 " in capsys.readouterr().err  # the line each seed logs

    # the result records it, and it agrees with the Success@k curve, which is computed apart
    results = [json.loads((runs / "demo" / "bm25" / f"seed-{s}.json").read_text()) for s in (0, 1001)]
    for res in results:
        assert res["metrics"]["success@1"] == pytest.approx(res["success_curve"][0])
        assert set(res["ci95"]) == {m.name for m in metric_table.METRICS}
        assert all("success@1" in g for g in res["per_genre"].values())
    values = [r["metrics"]["success@1"] for r in results]

    # the pages read (and verify) it: a column with the run's value on the main and collection pages, the site too
    lb, site = tmp_path / "lb", tmp_path / "site"
    assert main(["leaderboard", "--runs-dir", str(runs), "--out", str(lb), "--no-plots", "--html", str(site)]) == 0
    assert _markdown_cell((lb / "main.md").read_text(), "demo S@1", "bm25") == mean_sd_cell(values, 2)
    assert _markdown_cell((lb / "collections" / "demo.md").read_text(), "S@1", "bm25") == mean_sd_cell(values)
    assert "Success@1 (%)" in (site / "index.html").read_text()
    run_pages = list((site / "runs").rglob("*.html"))
    assert run_pages and all("Success@1 (%)" in p.read_text() for p in run_pages)

    # the export has its columns
    out = tmp_path / "export"
    assert main(["export", "--runs-dir", str(runs), "--out", str(out)]) == 0
    with open(out / "leaderboard.csv", encoding="utf-8") as f:
        bm25 = next(r for r in csv.DictReader(f) if r["run"] == "bm25")
    assert float(bm25["success@1 mean"]) == pytest.approx(sum(values) / 2)
    assert {"success@1 sd", "success@1 ci95 low", "success@1 ci95 high"} <= set(bm25)
    with open(out / "per-seed.csv", encoding="utf-8") as f:
        assert sorted(float(r["success@1"]) for r in csv.DictReader(f) if r["run"] == "bm25") == pytest.approx(
            sorted(values)
        )

    # compare tests it exactly when its row says so
    capsys.readouterr()
    assert main(["compare", "char-ngram", "bm25", "--collection", "demo", "--runs-dir", str(runs)]) == 0
    names = {m.name for m in metric_table.METRICS}
    lines = capsys.readouterr().out.splitlines()
    compared = [cell for line in lines if line.startswith("|") and (cell := line.split("|")[1].strip()) in names]
    assert compared == [m.name for m in metric_table.METRICS if m.tested]
    assert ("success@1" in compared) == tested

    # and a result that lacks it is refused, naming it
    path = runs / "demo" / "bm25" / "seed-0.json"
    res = json.loads(path.read_text())
    del res["metrics"]["success@1"]
    path.write_text(json.dumps(res))
    with pytest.raises(DataError, match="metrics lack a finite success@1"):
        read_result(path)


def test_per_query_values_come_from_the_rows():
    from harness.evaluation.significance import per_query_value

    for m in metric_table.METRICS:
        for rank in (None, 1, m.cutoff, m.cutoff + 1):
            assert per_query_value(rank, m.name) == m.value(rank)
    assert metric_table.by_name("mrr@20").value(4) == 0.25
    with pytest.raises(ValueError, match="unknown metric 'success@2'"):
        per_query_value(1, "success@2")
