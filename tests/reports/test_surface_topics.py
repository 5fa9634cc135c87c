"""Surface topics: blogs-xtopic's declared clusters, the queries that touch them, every run's Success@8
on those and on the rest, and a declaration that does not match its labels is one line."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.errors import DataError
from harness.reports.surface_topics import declared_kinds, surface_topics_section
from tests.conftest import RECORD, ROOT

SEEDS = (0, 1001, 2001, 3001)


def _bm25():
    folder = ROOT / "leaderboards" / "runs" / "blogs-xtopic" / "bm25"
    return [json.loads((folder / f"seed-{s}.json").read_text(encoding="utf-8")) for s in SEEDS]


def test_the_section_splits_the_queries_by_surface_topic_and_scores_each_part():
    kinds, labelled = declared_kinds("blogs-xtopic", RECORD)
    assert {k["kind"] for k in kinds["kinds"].values()} == {"encoding", "orthography", "format", "language"}
    runs = {("blogs-xtopic", "bm25"): _bm25()}
    text = surface_topics_section(runs, ["bm25"], "blogs-xtopic", RECORD)
    assert "577 of the 1370 queries" in text and "| topic:19 | language" in text
    # recomputed by hand from the manifests, the labels and the ranks
    surface, labels = set(kinds["kinds"]), labelled["labels"]
    inside, rest = [], []
    for res in runs[("blogs-xtopic", "bm25")]:
        split = json.loads((RECORD / "blogs-xtopic" / f"seed-{res['seed']}.json").read_text(encoding="utf-8"))
        for q in split["queries"]:
            qid = q["documentID"]
            hit = res["first_needle_rank"][qid] is not None and res["first_needle_rank"][qid] <= 8
            touches = labels[qid] in surface or any(labels[n] in surface for n in split["needles"][qid])
            (inside if touches else rest).append(hit)
    row = next(line for line in text.splitlines() if line.startswith("| bm25"))
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "bm25",
        f"{100 * sum(inside) / len(inside):.1f}",
        f"{100 * sum(rest) / len(rest):.1f}",
    ]


def test_collections_without_a_declaration_have_no_section():
    assert declared_kinds("reddit-xsub", RECORD) is None
    assert surface_topics_section({("reddit-xsub", "x"): []}, ["x"], "reddit-xsub", RECORD) == ""


def test_a_declaration_for_other_labels_is_one_line(tmp_path):
    shutil.copytree(RECORD / "blogs-xtopic", tmp_path / "blogs-xtopic")
    path = tmp_path / "blogs-xtopic" / "topic-kinds.json"
    kinds = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**kinds, "labels_sha256": "0" * 64}), encoding="utf-8")
    with pytest.raises(DataError, match="declared for labels 0{64}, but .* holds labels") as e:
        declared_kinds("blogs-xtopic", tmp_path)
    assert len(str(e.value).splitlines()) == 1
    path.write_text(json.dumps({**kinds, "kinds": {"topic:99": {"kind": "x", "what": "y"}}}), encoding="utf-8")
    with pytest.raises(DataError, match="topic:99 is not a topic of"):
        declared_kinds("blogs-xtopic", tmp_path)
