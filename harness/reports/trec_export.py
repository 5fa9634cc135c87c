"""The runs as TREC files, for trec_eval, ir_measures and the field's other tools.

`aa-harness export --format trec --out DIR` writes, from the verified run files:

- DIR/trec/<collection>/runs/<run>/seed-<S>.run: one TREC run per run and seed,
  `qid Q0 docid rank score tag` (qid: the query's documentID, unique within a seed; ranks 1-based
  in the harness's tie order; scores strictly decreasing within a query, see harness.runs.trec;
  tag: the run name);
- DIR/trec/<collection>/qrels/seed-<S>.qrels: one qrels per collection and seed, `qid 0 docid 1`
  for each needle of the split's manifest.

A query the run did not rank has no line in its run file; the harness counts it as a miss
(trec_eval does too with -c).
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import DataError
from harness.foundation.output_set import write_output_set
from harness.reports.board import load_runs


def trec_files(runs_dir: Path, splits_dir: Path | None = None, stale_registry: Path | None = None) -> dict[str, str]:
    """Relative path under the export folder -> TREC text, for every verified run and seed."""
    from harness.evaluation.manifests import find_manifest, read_manifest
    from harness.foundation.locations import manifest_dirs
    from harness.runs.results import rankings_path, read_rankings, result_path
    from harness.runs.trec import format_qrels, format_run

    runs_dir = Path(runs_dir)
    runs = load_runs(runs_dir, splits_dir, stale_registry=stale_registry)  # verified; a missing runs folder: error
    if not runs:
        raise DataError(f"{runs_dir}: no results to export (is it the runs folder? --runs-dir)")
    places = manifest_dirs(runs_dir, splits_dir)
    files: dict[str, str] = {}
    for (collection, name), results in sorted(runs.items()):
        for res in results:
            seed = res["seed"]
            qrels = f"trec/{collection}/qrels/seed-{seed}.qrels"
            if qrels not in files:
                manifest = find_manifest(places, collection, seed)
                split = read_manifest(manifest, collection)
                if split.sha256 != res["split_sha256"]:  # load_runs checked this; the file may have changed since
                    raise DataError(f"{manifest}: changed while exporting (sha256 {split.sha256[:12]}…)")
                files[qrels] = format_qrels(split.needles, str(manifest))
            path = result_path(runs_dir, collection, name, seed)
            files[f"trec/{collection}/runs/{name}/seed-{seed}.run"] = format_run(
                tie_ordered(read_rankings(path)), name, str(rankings_path(path))
            )
    return files


def tie_ordered(rankings: dict[str, list[tuple[str, float]]]) -> dict[str, list[tuple[str, float]]]:
    """Each ranking in the harness's tie order (score descending, then id ascending), as it was scored."""
    return {q: sorted(r, key=lambda cs: (-cs[1], cs[0])) for q, r in rankings.items()}


def export_trec(
    runs_dir: Path, out_dir: Path, splits_dir: Path | None = None, stale_registry: Path | None = None
) -> list[Path]:
    """Write the TREC runs and qrels under out_dir/trec/ as one set; returns the paths written. stale_registry:
    the stale-runs registry whose runs are left out (None: none is)."""
    return write_output_set(out_dir, trec_files(runs_dir, splits_dir, stale_registry))
