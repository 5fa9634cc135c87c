"""Both views of a collection with the dissimilarity rule: the checks that tie them and the page section."""

import json
import shutil

import pytest

from harness.errors import DataError
from harness.reports.rule_views import load_views, rule_views_section, thirds
from tests.conftest import RECORD

SPLITS = RECORD
SEEDS = (0, 1001, 2001, 3001)


def test_the_rule_view_is_the_all_view_below_the_threshold():
    v = load_views("reddit-xsub", SEEDS, SPLITS, SPLITS)
    assert v.threshold == 0.075 and len(v.kept) == 532 and len(v.cosine) == 1427  # 1465 before the pool cleaning
    assert all(v.cosine[k] < v.threshold for k in v.kept)
    assert all(v.cosine[k] >= v.threshold for k in set(v.cosine) - v.kept)


def test_a_rule_manifest_that_is_not_the_all_view_below_the_threshold_is_refused(
    tmp_path,
):
    from harness.evaluation.manifests import read_manifest, write_manifest
    from harness.evaluation.split import Split

    for c in ("reddit-xsub", "reddit-xsub-all"):
        shutil.copytree(SPLITS / c, tmp_path / c)
    split = read_manifest(tmp_path / "reddit-xsub" / "seed-0.json")
    fewer = Split(
        split.collection,
        split.seed,
        split.queries[1:],
        split.candidates,
        {q.documentID: split.needles[q.documentID] for q in split.queries[1:]},
        split.builder,
        split.source_sha256,
    )
    write_manifest(fewer, tmp_path)
    with pytest.raises(
        DataError,
        match="seed 0: the rule's manifest is not the -all manifest's queries",
    ):
        load_views("reddit-xsub", [0], tmp_path, tmp_path)


def test_thirds_cut_by_cosine():
    values = {(0, f"q{i}"): i / 10 for i in range(9)}
    parts = thirds(values)
    assert [len(p) for _, p in parts] == [3, 3, 3] and parts[0][0] == "0.000–0.200"
    assert max(values[k] for k in parts[0][1]) < min(values[k] for k in parts[1][1])


def test_the_section_scores_the_all_runs_on_the_removed_queries():
    def result(seed, ranks):
        return {"seed": seed, "first_needle_rank": ranks}

    v = load_views("reddit-xsub", [0], SPLITS, SPLITS)
    removed = sorted(q for s, q in v.cosine if (s, q) not in v.kept)
    kept = sorted(q for s, q in v.kept)
    all_ranks = {q: 1 for q in removed} | {q: None for q in kept}
    runs = {
        ("reddit-xsub-all", "x"): [result(0, all_ranks)],
        ("reddit-xsub", "x"): [result(0, {q: None for q in kept})],
        ("reddit-xsub", "gpu"): [result(0, {q: 1 for q in kept})],
    }
    text = rule_views_section(runs, ["x", "gpu"], "reddit-xsub", SPLITS, SPLITS)
    row = next(line for line in text.splitlines() if line.startswith("| x "))
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "x",
        "0.0",
        f"{100 * len(removed) / len(all_ranks):.1f}",
        "100.0",
    ]
    assert "| gpu " in text and "not run" in text and "calibrated on BM25 (adversarial to lexical systems)" in text
    assert json.dumps(rule_views_section(runs, ["gpu"], "reddit-xsub", SPLITS, SPLITS)) == '""'
