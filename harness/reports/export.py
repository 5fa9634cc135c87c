"""The leaderboard as data: CSV or JSON tables for spreadsheets, notebooks and plots of one's own.

`aa-harness export --format csv|json --out DIR` writes three tables from the run files:

- leaderboard: one row per (collection, run): seeds, and per headline metric the mean and
  sample sd over seeds and the mean of the seeds' 95% bootstrap bounds (fractions, not percent);
  Success@8 pooled over every query of every seed, and author-macro (each query author's mean
  over their queries in all seeds, then the mean over authors; empty without the manifests);
- per-seed: one row per result file: the metrics and their 95% bootstrap interval;
- per-query: one row per (collection, run, seed, query): the rank of its first needle (empty:
  not in the top `depth`).

`--format trec` writes the runs and the qrels as TREC files instead (harness.reports.trec_export).
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from harness.errors import DataError
from harness.evaluation import metric_table
from harness.evaluation.metrics import mean_sd
from harness.foundation.output_set import write_output_set
from harness.reports.leaderboard import load_runs, plugin_version, run_order

FORMATS = ("csv", "json", "trec")


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


def _author_macro(res: list[dict], manifests) -> float | None:
    from harness.errors import HarnessError
    from harness.reports.significance import run_author_macro

    try:
        return _num(run_author_macro(res, manifests))
    except HarnessError:
        return None


def leaderboard_rows(runs, manifests=None) -> list[dict]:
    """manifests: where the split manifests are (the query authors, for the author-macro column)."""
    from harness.evaluation.metrics import pooled_metric

    order = {n: i for i, n in enumerate(run_order(runs))}
    rows = []
    for (c, name), res in sorted(runs.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
        row = {
            "collection": c,
            "run": name,
            "system": res[0]["system"],
            "seeds": " ".join(str(r["seed"]) for r in res),
            "n_seeds": len(res),
            "n_queries": sum(r["n_queries"] for r in res),
            "plugin": "; ".join(sorted({plugin_version(r) for r in res})),
        }
        for m in metric_table.headline():
            mean, sd = mean_sd([r["metrics"][m.name] for r in res])
            row[f"{m.name} mean"] = _num(mean)
            row[f"{m.name} sd"] = _num(sd)
            row[f"{m.name} ci95 low"] = _num(sum(r["ci95"][m.name][0] for r in res) / len(res))
            row[f"{m.name} ci95 high"] = _num(sum(r["ci95"][m.name][1] for r in res) / len(res))
        row["success@8 pooled"] = _num(pooled_metric(res, "success@8"))
        row["success@8 author-macro"] = _author_macro(res, manifests) if manifests is not None else None
        rows.append(row)
    return rows


def per_seed_rows(runs) -> list[dict]:
    rows = []
    for (c, name), res in sorted(runs.items()):
        for r in res:
            row = {
                "collection": c,
                "run": name,
                "system": r["system"],
                "seed": r["seed"],
                "split_sha256": r["split_sha256"],
                "n_queries": r["n_queries"],
                "n_candidates": r["n_candidates"],
            }
            for m in metric_table.headline():
                row[m.name] = _num(r["metrics"][m.name])
                row[f"{m.name} ci95 low"], row[f"{m.name} ci95 high"] = (_num(v) for v in r["ci95"][m.name])
            rows.append(row)
    return rows


def per_query_rows(runs) -> list[dict]:
    rows = []
    for (c, name), res in sorted(runs.items()):
        for r in res:
            for qid, rank in sorted(r["first_needle_rank"].items()):
                rows.append(
                    {"collection": c, "run": name, "seed": r["seed"], "queryID": qid, "first_needle_rank": rank}
                )
    return rows


def _csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def export_tables(
    runs_dir: Path,
    out_dir: Path,
    fmt: str = "csv",
    *,
    splits_dir: Path | None = None,
    stale_registry: Path | None = None,
) -> list[Path]:
    """Write leaderboard, per-seed and per-query tables as `fmt` (csv, json) into out_dir, or the TREC
    runs and qrels (trec); returns the paths. splits_dir: where the manifests are (as load_runs);
    stale_registry: the stale-runs registry that keeps runs out (as the leaderboard's; None: none is)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if fmt == "trec":
        from harness.reports.trec_export import export_trec

        return export_trec(runs_dir, out_dir, splits_dir, stale_registry)
    runs = load_runs(Path(runs_dir), splits_dir, stale_registry=stale_registry)  # verified; a missing folder: error
    if not runs:
        raise DataError(f"{runs_dir}: no results to export (is it the runs folder? --runs-dir)")
    from harness.foundation.locations import manifest_dirs

    tables = {
        "leaderboard": leaderboard_rows(runs, manifest_dirs(runs_dir, splits_dir)),
        "per-seed": per_seed_rows(runs),
        "per-query": per_query_rows(runs),
    }
    files = {
        f"{name}.{fmt}": _csv(rows) if fmt == "csv" else json.dumps(rows, indent=1, ensure_ascii=False) + "\n"
        for name, rows in tables.items()
    }
    return write_output_set(out_dir, files)  # the three tables replace the old ones together
